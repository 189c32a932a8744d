"""Which session is the calling agent's? One lookup per hook call.

The identity is the same one ``session find`` uses: the fleet pane (one tmux
call, only inside a fleet socket), then the supervisor PID and its start token.
Standard library only.
"""

from __future__ import annotations

import os
from pathlib import Path

from claude_shepherd.supervisor.env import SUPERVISOR_PID_ENV
from claude_shepherd.supervisor.session.identity import current_pane_id, start_token, supervisor_pid
from claude_shepherd.supervisor.session.lookup import Found, find_session
from claude_shepherd.supervisor.session.numbers import parse_pid
from claude_shepherd.supervisor.session.paths import sessions_root

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t


class Caller:
    """Who is calling: sessions root, fleet pane, supervisor, and the session found for them."""

    __slots__ = ("root", "pane", "pid", "token", "found")

    def __init__(
        self, root: Path, pane: str | None, pid: int, token: str | None, found: Found | None
    ) -> None:
        self.root = root
        self.pane = pane  # fleet pane id, None outside a fleet
        self.pid = pid  # supervisor PID
        self.token = token  # its start token
        self.found = found  # the caller's session, if any


def claimant(env: t.Mapping[str, str], pid: int, token: str | None) -> tuple[int, str | None] | None:
    """The supervisor, if it said who it is: a claude-run (never the hook's own parent shell)."""
    return (pid, token) if parse_pid(env.get(SUPERVISOR_PID_ENV, "").strip()) == pid else None


def locate(cwd: str, env: t.Mapping[str, str]) -> Caller:
    root = sessions_root(cwd=cwd, env=env)
    pane = current_pane_id(env)
    pid = supervisor_pid(env)
    token = start_token(pid)
    return Caller(root, pane, pid, token, find_session(root, pane=pane, pid=pid, token=token))


_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:,+@%")


def shell_word(text: str) -> str:
    """*text* as one shell word (single-quoted only when it has to be)."""
    if text and all(c in _SAFE for c in text):
        return text
    return "'" + text.replace("'", "'\\''") + "'"


def session_arg(session_dir: Path, cwd: str) -> str:
    """How to name *session_dir* in a command the agent runs from *cwd*, shell-quoted."""
    try:
        relative = os.path.relpath(session_dir, cwd)
    except ValueError:
        relative = ".."
    return shell_word(str(session_dir) if relative.startswith("..") else relative)
