"""The programs the hooks run, from places an agent cannot plant them.

In a fleet pane the hooks run ``tmux`` on every tool call. Found on ``PATH``,
that could be anything an agent wrote into an early ``PATH`` directory (say
``~/.local/bin``) — run by every agent's hooks, outside any sandbox. So the
hooks use the tmux ``fleet start`` itself ran (``$CLAUDE_SHEPHERD_TMUX``,
exported into every pane's environment, which an agent cannot change for its
own Claude), else the first tmux in the system's own directories; never
``PATH``. Standard library only.
"""

from __future__ import annotations

import os

from claude_shepherd.supervisor.env import TMUX_ENV

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t

SYSTEM_DIRS = ("/usr/local/bin", "/usr/bin", "/bin", "/opt/homebrew/bin")

_cache: dict[str, str | None] = {}


def _executable(path: str) -> bool:
    return os.path.isabs(path) and os.path.isfile(path) and os.access(path, os.X_OK)


TMUX_TIMEOUT = 1.0
"""Seconds a hook waits for tmux (a wedged server must not stall every tool call)."""


def run_tmux(socket: str, args: list[str], env: t.Mapping[str, str] | None = None) -> t.Any:
    """``TRUSTED_TMUX -S SOCKET ARGS`` with a deadline: the completed process, or None when there is no
    trusted tmux or it did not answer."""
    tmux = tmux_path(env)
    if tmux is None:
        return None
    import subprocess  # only inside a fleet pane: it costs ~5 ms per hook call elsewhere

    try:
        return subprocess.run(
            [tmux, "-S", socket, *args],
            capture_output=True,
            text=True,
            timeout=TMUX_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


def tmux_path(env: t.Mapping[str, str] | None = None) -> str | None:
    """The tmux the hooks may run, or None when there is no trusted one."""
    env = os.environ if env is None else env
    configured = env.get(TMUX_ENV, "").strip()
    key = configured or "-"
    if key not in _cache:
        if configured and _executable(configured):
            _cache[key] = configured
        else:
            _cache[key] = next((p for p in (os.path.join(d, "tmux") for d in SYSTEM_DIRS) if _executable(p)), None)
    return _cache[key]
