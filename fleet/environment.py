"""The fleet's environment: captured once, by ``fleet start``, for every agent the fleet ever runs.

A pane runs ``claude-run`` (and its agent runs ``session`` and ``fleet``) by
name. Which program that name finds must not depend on the terminal a verb is
typed in: ``fleet start`` from a shell whose venv is not activated would
otherwise start agents that die with "claude-run: not found", and a respawn
from another terminal would run another installation's.

tmux gives a pane it creates or respawns its *client's* ``PATH`` (the
session's other variables come from the server and the session). So the fleet
keeps its ``PATH`` — a folder holding links to this installation's four
scripts, then the caller's ``PATH`` — in its session's environment, and every
tmux command that spawns a pane runs as a client with that ``PATH``. A server
``fleet start`` starts inherits the rest of the captured environment from its
first client; no value other than ``PATH`` is ever put on a command line
(another user could read it there). The scripts folder holds only our scripts,
never the venv's ``python`` or ``pip``: an agent's ``pip install`` must not
reach the supervisor's venv.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import typing as t
import zlib
from pathlib import Path

from claude_shepherd.supervisor.session.private_dir import is_private_dir
from claude_shepherd.supervisor.session.programs import SCRIPTS, own_scripts_folder
from claude_shepherd.supervisor.session.roots import registry_dir

AGENT_VARIABLES = (
    "CLAUDE_SUPERVISOR_PID", "CLAUDE_PID", "WATCHDOG_PID", "CLAUDECODE", "CLAUDE_CODE_SESSION_ID",
    "CLAUDE_CODE_ENTRYPOINT", "SESSION_REQUIRED",
)  # fmt: skip
"""An agent's identity, when fleet runs inside one: each pane's claude-run sets its own."""
NOT_CAPTURED = frozenset({
    # tmux's own and the terminal's: a pane gets its own
    "TMUX", "TMUX_PANE", "TERM", "TERM_PROGRAM", "TERM_PROGRAM_VERSION", "COLORTERM", "COLUMNS", "LINES",
    "SHLVL", "PWD", "OLDPWD", "_", "STY", "WINDOW", "WINDOWID", "TTY",
    *AGENT_VARIABLES,
})  # fmt: skip
AGENT_ROOT = "CLAUDE_SESSIONS_DIR"
"""Inside an agent, its claude-run set this to the agent's own sessions root: not the new fleet's."""


def scripts_dir(argv0: str | None = None) -> Path | None:
    """The folder holding this installation's console scripts (``claude-run`` among them).

    The running script's own folder first, links followed (a venv's ``bin/``, used
    without activating it, never a folder of links to it), then the interpreter's scripts folders.
    """
    candidates: list[Path] = []
    own = own_scripts_folder(SCRIPTS, argv0)
    if own is not None:
        candidates.append(Path(own))
    candidates.append(Path(sys.executable).parent)
    for scheme in (None, f"{os.name}_user"):
        try:
            candidates.append(
                Path(sysconfig.get_path("scripts", scheme) if scheme else sysconfig.get_path("scripts"))
            )
        except KeyError:
            continue
    for folder in candidates:
        if os.access(folder / "claude-run", os.X_OK):
            return folder
    return None


def scripts_link_dir(scripts: Path, env: t.Mapping[str, str] | None = None) -> Path:
    """A folder holding links to our four scripts in *scripts* and nothing else (made when missing);
    *scripts* itself when it cannot be made."""
    env = os.environ if env is None else env
    folder = Path(registry_dir(env)) / f"bin-{zlib.crc32(str(scripts).encode()):08x}"
    try:
        if not is_private_dir(folder, within=registry_dir(env)):
            return scripts
        for name in SCRIPTS:
            link, target = folder / name, scripts / name
            if os.path.lexists(link) and os.path.realpath(link) == os.path.realpath(target):
                continue
            tmp = folder / f".{name}.{os.getpid()}"
            if os.path.lexists(tmp):
                tmp.unlink()
            tmp.symlink_to(target)
            os.replace(tmp, link)  # atomic: another fleet start may be doing the same
    except OSError:
        return scripts
    return folder


def captured(env: t.Mapping[str, str] | None = None, *, scripts: Path | None = None) -> dict[str, str]:
    """The environment every pane of the fleet runs in: *env* (the caller's) without what belongs
    to a terminal or an agent, with this installation's scripts first on ``PATH``."""
    env = os.environ if env is None else env
    out = {k: v for k, v in env.items() if k not in NOT_CAPTURED and "\0" not in k + v and "=" not in k}
    if env.get("CLAUDE_SUPERVISOR_PID"):  # run by an agent: its sessions root is not the fleet's
        out.pop(AGENT_ROOT, None)
    scripts = scripts_dir() if scripts is None else scripts
    if scripts is not None:
        first = scripts_link_dir(scripts, env)
        rest = [p for p in out.get("PATH", os.defpath).split(os.pathsep) if p and Path(p) != first]
        out["PATH"] = os.pathsep.join([str(first), *rest])
    return out


def session_args(env: t.Mapping[str, str]) -> list[str]:
    """``new-session`` arguments that keep the fleet's ``PATH`` in its session (the only value put on a
    command line: the rest reaches a new server through its first client's environment)."""
    return ["-e", f"PATH={env['PATH']}"] if "PATH" in env else []
