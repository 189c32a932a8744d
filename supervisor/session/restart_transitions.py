"""The transitions of overflow and restart: the sticky overflow, dehydrating, and a fresh Claude.

At the threshold a conversation is marked overflowed for good (docs/DESIGN.md §7.4); its agent dehydrates
within a bounded number of tool calls, then asks for a restart, which claude-run consumes: always a fresh
Claude, never that conversation resumed (:mod:`.transitions` says what all transitions share).
Standard library only: the hooks apply :func:`mark_overflowed`, :func:`begin_dehydrate` and
:func:`count_dehydrate_call` on the hot path.
"""

from __future__ import annotations

from claude_shepherd.supervisor.session.fields import DEFAULT_PHASE, F, Lifecycle
from claude_shepherd.supervisor.session.transitions import count_of, timestamp

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t
    from pathlib import Path

    from claude_shepherd.supervisor.session.state import State


def mark_overflowed(state: State, conversation: str | None = None) -> None:
    """Context hit the threshold: sticky until a new conversation activates (docs/DESIGN.md §7.4)."""
    state[F.OVERFLOWED] = True
    if conversation:
        state[F.OVERFLOW_CONVERSATION] = conversation


def overflowed_in(state: t.Mapping[str, object], conversation: str | None) -> bool:
    """Did *conversation* overflow in this session? Without an id, an overflow counts."""
    if state.get(F.OVERFLOWED) is not True:
        return False
    where = state.get(F.OVERFLOW_CONVERSATION) or state.get(F.SESSION_ID)
    return not conversation or not where or where == conversation


def begin_dehydrate(state: State) -> None:
    """The agent of an overflowed session started saving its context: tools stay open for a bounded while.

    Only after an overflow: dehydrating lifts the heartbeat, so an early dehydrate (which needs no
    passthrough: ``session dehydrate`` always passes) would buy uncounted calls. The budget is the
    conversation's: starting again does not refill it (only an activation from a new conversation
    clears it).
    """
    if state.get(F.OVERFLOWED) is not True:
        return
    state[F.LIFECYCLE] = Lifecycle.DEHYDRATING
    state.setdefault(F.DEHYDRATE_TOOL_CALLS, 0)


def count_dehydrate_call(state: State, budget: int) -> bool:
    """One more tool call while dehydrating or with a restart pending; False once *budget* is spent.

    Bounds the original's escape hatch: invoking dehydrate lifted the overflow
    gate for good, so an agent could keep working past the threshold.
    """
    used = count_of(state.get(F.DEHYDRATE_TOOL_CALLS))
    if used >= budget:
        return False
    state[F.DEHYDRATE_TOOL_CALLS] = used + 1
    return True


def restart_prompt(session_dir: Path, state: State) -> str:
    phase_label = state.get(F.CURRENT_PHASE) or DEFAULT_PHASE
    escaped = str(phase_label).replace("\\", "\\\\").replace('"', '\\"')
    return f'/session continue --session {session_dir} --skill {state.get(F.SKILL) or "unknown"} --phase "{escaped}"'


def request_restart(state: State, session_dir: Path, *, now: float | None = None) -> str:
    """Ask the supervisor for a fresh Claude that continues this session (state only)."""
    prompt = restart_prompt(session_dir, state)
    state[F.KILL_REQUESTED] = True
    state[F.RESTART_PROMPT] = prompt
    state[F.CONTEXT_USAGE] = 0
    state.pop(F.CONTEXT_USAGE_AT, None)
    state.pop(F.SESSION_ID, None)  # never resume this conversation (docs/DESIGN.md §7.7)
    state[F.LAST_HEARTBEAT] = timestamp(now)
    return prompt


def consume_restart(state: State) -> str | None:
    """The supervisor takes a pending restart request; returns its prompt.

    A restart is always a fresh Claude: ``killRequested`` was set, so the old
    conversation is never resumed (docs/DESIGN.md §9).
    """
    prompt = state.get(F.RESTART_PROMPT)
    if state.get(F.KILL_REQUESTED) is not True or not isinstance(prompt, str) or not prompt:
        return None
    state[F.KILL_REQUESTED] = False
    state.pop(F.RESTART_PROMPT, None)
    state[F.LIFECYCLE] = Lifecycle.RESTARTING
    return prompt
