"""The transitions of ownership: who owns a session, and which conversation is bound to it.

Activation takes a session (:mod:`.activate_transition`); these check the owner on every write,
release a session or its pane to another, hand it to a fleet pane's new supervisor, and bind the
conversation the status line and SessionStart report (:mod:`.transitions` says what all transitions share).
Standard library only: the status line and SessionStart apply :func:`bind_conversation` and :func:`resumed`.
"""

from __future__ import annotations

from claude_shepherd.supervisor.session.fields import F, Lifecycle
from claude_shepherd.supervisor.session.identity import same_owner, valid_pid
from claude_shepherd.supervisor.session.transitions import TransitionError, timestamp

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t
    from pathlib import Path

    from claude_shepherd.supervisor.session.state import State


def set_owner(state: State, pid: int, token: str | None) -> None:
    """Record the owning supervisor and its start token (identity, not just a number)."""
    state[F.PID] = pid
    if token:
        state[F.PID_START] = token
    else:
        state.pop(F.PID_START, None)


def require_owner(
    state: t.Mapping[str, object],
    session_dir: Path,
    *,
    pid: int,
    token: str | None,
    pane: str | None,
    owner_running: bool,
) -> None:
    """Refuse a write to *session_dir* from anyone but its owner.

    The owner is the recorded supervisor (PID, and start token when one is
    recorded), or the fleet pane the session is bound to once its recorded
    owner is gone. ``activate`` is the one way to take a session over.
    """
    owner, owner_token = state.get(F.PID), state.get(F.PID_START)
    if valid_pid(owner) and owner == pid and (not owner_token or owner_token == token):
        return
    if pane and state.get(F.FLEET_PANE_ID) == pane and not owner_running:
        return
    holder = f"supervisor PID {owner}" if valid_pid(owner) else "no agent"
    raise TransitionError(
        f"{session_dir.name} is not this agent's session (it is held by {holder}; this agent's supervisor "
        f"is PID {pid}); activate it first with `session activate {session_dir} SKILL`"
    )


def release_pane(state: State) -> None:
    """Another session claimed this pane: one pane, one session (docs/DESIGN.md §7.1)."""
    state.pop(F.FLEET_PANE_ID, None)


def release_owner(state: State) -> None:
    """Our supervisor activated another session: this one no longer has an owner."""
    state[F.PID] = 0
    state.pop(F.PID_START, None)


def claim_for_resume(state: State, *, pid: int, token: str | None) -> None:
    """A fleet pane's new supervisor takes a session whose owner died (S3).

    The pid becomes the new supervisor's — not 0, which the original wrote and
    then treated as alive (B1, R4).
    """
    set_owner(state, pid, token)
    state[F.LIFECYCLE] = Lifecycle.RESUMING


def resumed(state: State, *, pid: int, token: str | None) -> bool:
    """The owner's resumed Claude runs (its SessionStart or status line): ``resuming`` becomes ``active``.

    ``resuming`` means "before Claude starts" (docs/DESIGN.md §3.1); a resumed
    conversation has no reason to activate again, so without this a running
    agent would show ``resuming`` for the rest of its life. True when it moved.
    """
    if state.get(F.LIFECYCLE) != Lifecycle.RESUMING or not same_owner(
        state.get(F.PID), state.get(F.PID_START), pid, token
    ):
        return False
    state[F.LIFECYCLE] = Lifecycle.ACTIVE
    return True


def may_bind_session_id(state: t.Mapping[str, object]) -> bool:
    """R1 guard: never resurrect a sessionId during a restart or after overflow."""
    return not (
        state.get(F.KILL_REQUESTED) is True
        or state.get(F.OVERFLOWED) is True
        or state.get(F.LIFECYCLE) == Lifecycle.DEHYDRATING
    )


def bind_conversation(
    state: State,
    *,
    session_id: str | None,
    usage: float | None = None,
    window: int | None = None,
    claim: tuple[int, str | None] | None = None,
    now: float | None = None,
) -> None:
    """Status line / SessionStart: record the conversation id and context usage."""
    if session_id and may_bind_session_id(state):
        state[F.SESSION_ID] = session_id
    if usage is not None:
        state[F.CONTEXT_USAGE] = usage
        state[F.CONTEXT_USAGE_AT] = timestamp(now)
    if window:
        state[F.CONTEXT_WINDOW_SIZE] = window
    if claim is not None:
        pid, token = claim
        if not same_owner(state.get(F.PID), state.get(F.PID_START), pid, token):
            set_owner(state, pid, token)
    state[F.LAST_HEARTBEAT] = timestamp(now)
