"""The transitions of the work: phases, settings, the log's heartbeat counts, and the end of a skill.

``phase`` moves along the declared phases and ends ``loading``; ``session update`` sets a field within
bounds; the heartbeat counts tool calls per transcript until a log entry lands; ``deactivate`` completes
the skill (:mod:`.transitions` says what all transitions share).
Standard library only: the heartbeat hook counts with :func:`count_tool_call` on the hot path.
"""

from __future__ import annotations

from claude_shepherd.supervisor.session import phases as ph
from claude_shepherd.supervisor.session.fields import MAX_BLOCK_AFTER, F, Lifecycle
from claude_shepherd.supervisor.session.paths import template_log_name
from claude_shepherd.supervisor.session.records import Record
from claude_shepherd.supervisor.session.store import as_fields
from claude_shepherd.supervisor.session.transitions import TransitionError, count_of, timestamp

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

    from claude_shepherd.supervisor.session.state import PhaseDeclaration, PhaseRecord, State


SETTINGS_BOUNDS: dict[str, tuple[int, int]] = {
    F.WARN_AFTER: (1, MAX_BLOCK_AFTER),
    F.BLOCK_AFTER: (1, MAX_BLOCK_AFTER),
}
"""Heartbeat thresholds a skill may set: relaxed within bounds, never switched off."""


def check_settings(
    state: t.Mapping[str, object], fields: t.Iterable[str], *, had_template: object = None
) -> None:
    """Refuse *fields* just set in *state* that would switch a gate off: a threshold out of
    bounds, a log template removed, or one that would make the log one of our own files."""
    fields = set(fields)
    for field, (low, high) in SETTINGS_BOUNDS.items():
        if field in fields:
            value = state.get(field)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise TransitionError(f"{field} must be a whole number from {low} to {high}, not {value!r}")
    template = state.get(F.LOG_TEMPLATE)
    if (
        isinstance(had_template, str)
        and had_template.strip()
        and not (isinstance(template, str) and template.strip())
    ):
        raise TransitionError(
            f"{F.LOG_TEMPLATE} cannot be removed once set (it keeps the logging heartbeat on); "
            "set another template instead"
        )
    if F.LOG_TEMPLATE in fields and template is not None and template_log_name(template) is None:
        raise TransitionError(
            f"{F.LOG_TEMPLATE} {template!r} does not name a markdown template like TEMPLATE_IMPLEMENTATION_LOG.md"
        )


def set_setting(state: State, field: str, value: object, *, now: float | None = None) -> None:
    """``session update``: one field the transitions do not own, within :func:`check_settings`."""
    had_template = state.get(F.LOG_TEMPLATE)
    as_fields(state)[field] = value
    check_settings(state, (field,), had_template=had_template)
    state[F.LAST_HEARTBEAT] = timestamp(now)


class PhaseChange(Record):
    __slots__ = ("label", "appended", "forced")
    label: str
    appended: PhaseDeclaration | None
    forced: bool


def phase(
    state: State,
    label: str,
    *,
    approved: str | None = None,
    proof: dict[str, str] | None = None,
    now: float | None = None,
) -> PhaseChange:
    """Enter phase *label*; ends ``loading`` (and then starts the heartbeat counters afresh).

    A phase change in the middle of the work does not reset the counters: only
    a real log entry does (:func:`record_log_entry`).
    """
    label = label.strip()
    if not label:
        raise TransitionError("the phase label is empty; give one like '3: Build'")
    if not label.isprintable():  # it is shown on the operator's terminal (fleet status, watch, status line)
        raise TransitionError(
            f"the phase label {label!r} has control or invisible characters; use plain text like '3: Build'"
        )
    appended = None
    forced = False
    proof = proof or {}
    if ph.declared(state.get(F.PHASES)):
        target = ph.parse_label(label)
        move = ph.check_transition(state.get(F.PHASES), state.get(F.CURRENT_PHASE), target)
        if not move.allowed:
            if not approved:
                raise TransitionError(
                    f"non-sequential phase transition from {state.get(F.CURRENT_PHASE)!r} to {label!r} "
                    f'refused (expected next: {move.expected}); add --user-approved "Reason: ..." to force it'
                )
            forced = True
        ph.check_proof(ph.find_declaration(state.get(F.PHASES), target), proof, label)
        declarations = state.get(F.PHASES)
        if move.append and isinstance(declarations, list):  # a list: ph.declared found declarations in it
            declarations.append(move.append)
            appended = move.append
    stamp = timestamp(now)
    state[F.CURRENT_PHASE] = label
    state[F.LAST_HEARTBEAT] = stamp
    if state.pop(F.LOADING, None) is True:
        state[F.TOOL_CALLS_BY_TRANSCRIPT] = {}  # the work starts with a clean slate after bootstrap
    history = state.get(F.PHASE_HISTORY)
    if not isinstance(history, list):
        history = state[F.PHASE_HISTORY] = []
    record: PhaseRecord = {"phase": label, "ts": stamp, "proof": proof}
    history.append(record if proof else label)
    return PhaseChange(label, appended, forced)


def deactivate(
    state: State, *, description: str, keywords: list[str] | None = None, now: float | None = None
) -> None:
    """Skill synthesis done: lifecycle=completed; the gate re-engages (S11)."""
    if not description.strip():
        raise TransitionError(
            "a description is required on stdin (1-3 lines of what this session did), "
            "e.g. session deactivate DIR <<'EOF' ... EOF"
        )
    state[F.LIFECYCLE] = Lifecycle.COMPLETED
    state[F.LAST_HEARTBEAT] = timestamp(now)
    state[F.SESSION_DESCRIPTION] = description.strip()
    if keywords is not None:
        state[F.SEARCH_KEYWORDS] = keywords
    skill = state.get(F.SKILL)
    completed = state.get(F.COMPLETED_SKILLS)
    if not isinstance(completed, list):
        completed = state[F.COMPLETED_SKILLS] = []
    if isinstance(skill, str) and skill not in completed:
        completed.append(skill)


# --------------------------------------------------------------------------- heartbeat counters
# The PreToolUse hook (claude-hook) counts under the state lock, one call at a time.


def carry_tool_calls(state: State, carried: t.Mapping[str, object]) -> None:
    """Take over the conversation's heartbeat counts (per transcript) from the session it leaves.

    The count is the conversation's, not the session's: it is what it was there, only a log
    entry (in whichever session) having lowered it.
    """
    state[F.TOOL_CALLS_BY_TRANSCRIPT] = {
        key: count_of(value) for key, value in carried.items() if isinstance(key, str)
    }


def tool_calls(state: t.Mapping[str, object], key: str) -> int:
    """Tool calls without logging counted so far for transcript *key*."""
    counters = state.get(F.TOOL_CALLS_BY_TRANSCRIPT)
    return count_of(counters.get(key)) if isinstance(counters, dict) else 0


def count_tool_call(state: State, key: str) -> int:
    """Heartbeat: one more tool call without logging for transcript *key*; the new count."""
    counters = state.get(F.TOOL_CALLS_BY_TRANSCRIPT)
    if not isinstance(counters, dict):
        counters = state[F.TOOL_CALLS_BY_TRANSCRIPT] = {}
    counters[key] = count_of(counters.get(key)) + 1
    return counters[key]


def record_log_entry(state: State, *, now: float | None = None) -> None:
    """``session log`` appended an entry to this session's log: the heartbeat starts again.

    Applied by the ``session log`` command itself after the append succeeded,
    never by the hook on seeing the command: ``session log --help``, a failing
    log or a log of another session must not count.
    """
    state[F.TOOL_CALLS_BY_TRANSCRIPT] = {}
    state[F.TOOL_CALLS_SINCE_LAST_LOG] = 0
    state[F.LAST_HEARTBEAT] = timestamp(now)
