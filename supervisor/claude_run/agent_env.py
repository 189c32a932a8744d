"""The environment every Claude launched by ``claude-run`` gets (the contract).

* ``CLAUDE_SUPERVISOR_PID`` — the supervisor's own PID, the same for every
  launch: ``session activate`` records it as the owner, hooks and the status
  line find their session by it (docs/DESIGN.md §7.8).
* ``SESSION_REQUIRED=1`` — the session gate applies.
* ``CLAUDE_SESSIONS_DIR`` — the absolute sessions root, so hooks, the status
  line and Bash tools agree even after the agent ``cd``\\ s elsewhere.
* ``WATCHDOG_PID`` — set per launch by :mod:`claude_shepherd.supervisor.claude_run.foreground`.
* ``CLAUDE_SHEPHERD_CREDENTIAL`` — the credential Claude uses, by the name the usage windows are kept
  under (supervisor.session.credentials.credential_of): Claude keeps ``$CLAUDE_CODE_OAUTH_TOKEN``
  from its hooks, which would otherwise take the agent for its config directory's login.
* ``PATH`` — the ``session`` command of *this* installation must be found by
  the agent's Bash tool. Putting the whole virtualenv ``bin`` first would also
  hand the agent our ``python`` and ``pip``, so a private directory holding
  only a ``session`` link is put first instead (the ``bin`` directory itself
  is the fallback when that directory cannot be created).
"""

from __future__ import annotations

import binascii
import os
import sys
from pathlib import Path

from claude_shepherd.supervisor.claude_run.claude_bin import which
from claude_shepherd.supervisor.env import (
    BUDGET_USD_ENV,
    CREDENTIAL_ENV,
    SESSION_REQUIRED_ENV,
    SESSIONS_DIR_ENV,
    SUPERVISOR_PID_ENV,
    WATCHDOG_PID_ENV,
    WORKTREE_ENV,
)
from claude_shepherd.supervisor.session.credentials import credential_of
from claude_shepherd.supervisor.session.private_dir import is_private_dir
from claude_shepherd.supervisor.session.programs import own_scripts_folder

TYPE_CHECKING = False
if TYPE_CHECKING:  # claude-run runs beside every agent: no typing at run time (docs/HOT_CORE.md)
    import typing as t

SESSION_COMMAND = "session"
NESTED_MARKERS = ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT")
"""What Claude Code exports to its tools; a Claude that inherits them refuses to start ("nested")."""
SHIM_PARENT = "claude-shepherd"


def our_session_command() -> Path | None:
    """The ``session`` console script installed beside ours (the folder ``claude-run`` really is in, links
    followed), or beside this interpreter. Not sysconfig's scripts path: its tables cost every claude-run
    0.1 MiB to hold."""
    for scripts in (own_scripts_folder(("claude-run",)), str(Path(sys.executable).parent)):
        if scripts:
            candidate = Path(scripts) / SESSION_COMMAND
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return candidate
    return None


def _same_file(a: str | Path, b: str | Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def shim_dir(command: Path, env: t.Mapping[str, str]) -> Path | None:
    """A directory holding only a ``session`` link to *command*; None if it cannot be made."""
    cache = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME") or str(Path.home()), ".cache")
    digest = f"{binascii.crc32(str(command).encode()):08x}"  # hashlib: OpenSSL in every claude-run
    directory = Path(cache) / SHIM_PARENT / f"bin-{digest}"
    link = directory / SESSION_COMMAND
    try:
        if _same_file(link, command):
            return directory
        if not is_private_dir(directory, within=directory.parent):
            return None
        tmp = directory / f".{SESSION_COMMAND}.{os.getpid()}"
        try:
            tmp.unlink()
        except FileNotFoundError:
            pass
        tmp.symlink_to(command)
        os.replace(tmp, link)  # atomic even if another supervisor does the same
    except OSError:
        return None
    return directory


def path_with_session(env: t.Mapping[str, str]) -> tuple[str, str | None]:
    """``PATH`` on which ``session`` is ours; and a warning line if that is impossible."""
    path = env.get("PATH", os.defpath)
    command = our_session_command()
    if command is None:
        return path, "WARNING: this installation has no session command; agents will not find it"
    current = which(SESSION_COMMAND, path)
    if current and _same_file(current, command):
        return path, None
    directory = shim_dir(command, env) or command.parent
    entries = [str(directory)] + [p for p in path.split(os.pathsep) if p and p != str(directory)]
    return os.pathsep.join(entries), None


def claude_environment(
    base: t.Mapping[str, str], *, supervisor_pid: int, sessions_root: Path, budget: float | None = None
) -> tuple[dict[str, str], list[str]]:
    """Claude's environment without ``WATCHDOG_PID``, and warning lines to print; with *budget*
    (``--budget-usd``) the hooks hold the agent to it, and never to one a caller's environment had."""
    env = dict(base)
    env.pop(BUDGET_USD_ENV, None)
    if budget is not None:
        env[BUDGET_USD_ENV] = f"{budget:.6f}".rstrip("0").rstrip(".")
    env[SUPERVISOR_PID_ENV] = str(supervisor_pid)
    env[SESSION_REQUIRED_ENV] = "1"
    env[SESSIONS_DIR_ENV] = str(sessions_root)
    env.pop(WATCHDOG_PID_ENV, None)
    env.pop(WORKTREE_ENV, None)  # claude-run's own request (it passes --worktree), not Claude's tools'
    env.pop(CREDENTIAL_ENV, None)  # named anew from what this Claude is given, never a caller's name
    env[CREDENTIAL_ENV] = credential_of(env)
    for marker in NESTED_MARKERS:  # claude-run starts a Claude of its own, never one nested in a caller's
        env.pop(marker, None)
    env["PATH"], warning = path_with_session(env)
    return env, [warning] if warning else []
