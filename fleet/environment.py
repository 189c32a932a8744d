"""The fleet's environment: captured once, by ``fleet start``, for every agent the fleet ever runs.

A pane runs ``claude-run`` (and its agent runs ``session`` and ``fleet``) by
name. Which program that name finds must not depend on the terminal a verb is
typed in: ``fleet start`` from a shell whose venv is not activated would
otherwise start agents that die with "claude-run: not found", and a respawn
from another terminal would run another installation's. So ``fleet start``
writes the environment it runs in into the fleet session's tmux environment,
with this installation's scripts first on ``PATH``; tmux gives that
environment to every pane it creates or respawns in the session (new window,
split, ``respawn-pane``), whoever asks.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import typing as t
from pathlib import Path

SCRIPTS = ("claude-run", "session", "fleet", "claude-hook")

NOT_CAPTURED = frozenset({
    # tmux's own and the terminal's: a pane gets its own
    "TMUX", "TMUX_PANE", "TERM", "TERM_PROGRAM", "TERM_PROGRAM_VERSION", "COLORTERM", "COLUMNS", "LINES",
    "SHLVL", "PWD", "OLDPWD", "_", "STY", "WINDOW", "WINDOWID", "TTY",
    # an agent's identity, when fleet runs inside one: each pane's claude-run sets its own
    "CLAUDE_SUPERVISOR_PID", "CLAUDE_PID", "WATCHDOG_PID", "CLAUDECODE", "CLAUDE_CODE_SESSION_ID",
    "CLAUDE_CODE_ENTRYPOINT", "SESSION_REQUIRED",
})  # fmt: skip


def scripts_dir(argv0: str | None = None) -> Path | None:
    """The folder holding this installation's console scripts (``claude-run`` among them).

    The running ``fleet`` script's own folder first (a venv's ``bin/``, used
    without activating it), then the interpreter's scripts folders.
    """
    candidates: list[Path] = []
    first = sys.argv[0] if argv0 is None else argv0
    if first and os.path.basename(first) in SCRIPTS:
        candidates.append(Path(os.path.abspath(first)).parent)
    candidates.append(Path(sys.executable).parent)
    for scheme in (None, f"{os.name}_user"):
        try:
            candidates.append(Path(sysconfig.get_path("scripts", scheme) if scheme else sysconfig.get_path("scripts")))
        except KeyError:
            continue
    for folder in candidates:
        if os.access(folder / "claude-run", os.X_OK):
            return folder
    return None


def captured(env: t.Mapping[str, str] | None = None, *, scripts: Path | None = None) -> dict[str, str]:
    """The environment every pane of the fleet runs in: *env* (the caller's) without what belongs
    to a terminal or an agent, with *scripts* (this installation's) first on ``PATH``."""
    env = os.environ if env is None else env
    out = {k: v for k, v in env.items() if k not in NOT_CAPTURED and "\0" not in k + v and "=" not in k}
    scripts = scripts_dir() if scripts is None else scripts
    if scripts is not None:
        rest = [p for p in out.get("PATH", os.defpath).split(os.pathsep) if p and Path(p) != scripts]
        out["PATH"] = os.pathsep.join([str(scripts), *rest])
    return out


def session_args(env: t.Mapping[str, str]) -> list[str]:
    """``new-session`` arguments that give the session *env* (``-e NAME=VALUE`` each)."""
    args: list[str] = []
    for name, value in sorted(env.items()):
        args += ["-e", f"{name}={value}"]
    return args
