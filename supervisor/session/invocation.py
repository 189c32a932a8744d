"""What every ``session`` command needs: the sessions root, who we are, our pane, our conversation,
saying a line, and the validated (and owner-checked) write of a state.

Hot path: agents run ``session`` at every step, so this imports only what each of these needs.
"""

from __future__ import annotations

import os
from pathlib import Path

from claude_shepherd.supervisor.env import CLAUDE_SESSION_ID_ENV
from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.session.fields import F
from claude_shepherd.supervisor.session.identity import (
    current_pane_id,
    owner_alive,
    start_token,
    supervisor_pid,
)
from claude_shepherd.supervisor.session.paths import resolve_session_dir, sessions_root

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds; session runs at every agent step
    import typing as t

    from claude_shepherd.supervisor.session.state import State

    T = t.TypeVar("T")


def root() -> Path:
    """The sessions root this command works in."""
    return sessions_root()


def session_dir(arg: str) -> Path:
    """The session folder a DIR argument names, inside the root."""
    return resolve_session_dir(arg, root())


def me() -> tuple[int, str | None]:
    """This agent's supervisor PID and its start token."""
    pid = supervisor_pid()
    return pid, start_token(pid)


def lookup_pane(given: str | None) -> str | None:
    """The pane a read-only lookup asks about: the one given, else the one we run in."""
    return given.strip() or None if given is not None else current_pane_id()


def own_pane(given: str | None) -> str | None:
    """The pane a write claims: only ever the one this agent really runs in."""
    current = current_pane_id()
    if given is not None and given.strip() and given.strip() != current:
        where = f"it runs in {current}" if current else "it does not run in a fleet pane"
        raise ShepherdError(
            f"--fleet-pane {given.strip()} is not this agent's pane ({where}); leave the option out"
        )
    return current


def conversation() -> str | None:
    """The Claude Code conversation this command runs in, when Claude says."""
    return os.environ.get(CLAUDE_SESSION_ID_ENV, "").strip() or None


def say(line: str = "") -> None:
    """One line of the command's output."""
    print(line)


def update(session_dir: Path, mutate: t.Callable[[State], T], **kwargs: t.Any) -> T:
    """Every write of a ``session`` command is validated against the schema before it lands."""
    from claude_shepherd.supervisor.session.schema import validate_state
    from claude_shepherd.supervisor.session.store import update_state

    return update_state(session_dir, mutate, validate=validate_state, **kwargs)


def owner_running(state: State) -> bool:
    """Is the owner this state records still running (read from /proc, under the lock)?"""
    return owner_alive(state.get(F.PID), state.get(F.PID_START))


def owned(session_dir: Path, mutate: t.Callable[[State], T]) -> T:
    """:func:`update` for a command that writes a session: only its owner may (checked under the lock)."""
    from claude_shepherd.supervisor.session.owner_transitions import require_owner

    pid, token = me()
    pane = current_pane_id()

    def apply(state: State) -> T:
        require_owner(state, session_dir, pid=pid, token=token, pane=pane, owner_running=owner_running(state))
        return mutate(state)

    return update(session_dir, apply)
