"""``activate``, the one entry point of a new lifecycle, and the named rules it is made of.

Refused when another live supervisor owns the session; ``overflowed`` and the dehydrate budget clear only
for a proven new conversation; ``loading`` is granted once per conversation; the heartbeat counts and the
obligation to log carry over; a skill's ``phases`` are declared once (docs/DESIGN.md §3.6).
Standard library only (:mod:`.transitions` says what all transitions share).
"""

from __future__ import annotations

from claude_shepherd.supervisor.session import phases as ph
from claude_shepherd.supervisor.session.fields import (
    DEFAULT_BLOCK_AFTER,
    DEFAULT_PHASE,
    DEFAULT_WARN_AFTER,
    F,
    Lifecycle,
)
from claude_shepherd.supervisor.session.identity import same_owner
from claude_shepherd.supervisor.session.owner_transitions import set_owner
from claude_shepherd.supervisor.session.paths import template_log_name
from claude_shepherd.supervisor.session.records import Record
from claude_shepherd.supervisor.session.store import as_fields
from claude_shepherd.supervisor.session.transitions import PROTECTED_FROM_STDIN, TransitionError, timestamp
from claude_shepherd.supervisor.session.work_transitions import carry_tool_calls, check_settings

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

    from claude_shepherd.supervisor.session.state import State


def deep_merge(base: dict[str, t.Any], extra: t.Mapping[str, object]) -> None:
    """Merge like jq's ``*``: objects recursively, everything else replaced."""
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            deep_merge(base[key], value)
        else:
            base[key] = value


class Activation(Record):
    __slots__ = ("kind", "previous_owner")
    kind: str  # "fresh" | "reactivated" | "switched" | "takeover"
    previous_owner: int | None


def activate(
    state: State,
    *,
    skill: str,
    pid: int,
    token: str | None,
    owner_running: bool,
    pane: str | None = None,
    target_file: str | None = None,
    session_id: str | None = None,
    extra: t.Mapping[str, object] | None = None,
    approved: str | None = None,
    bootstrapped: bool = False,
    carried: t.Mapping[str, object] | None = None,
    carried_template: str | None = None,
    now: float | None = None,
) -> Activation:
    """Make (*pid*, *token*) the owner running *skill*: the start of a new lifecycle.

    A live different owner is refused (*owner_running*: the caller's reading of
    the recorded owner, so this stays a pure function of its inputs). A dead one is taken over, *keeping*
    ``sessionId``, ``completedSkills`` and the history (the original deleted
    the file, B13). Resets lifecycle and killRequested; ``overflowed`` and the
    dehydrate budget only when *session_id* (the caller's conversation) proves a
    new conversation; ``loading`` is granted once per conversation, across every
    session it activates (*bootstrapped*: the caller found it spent in another of
    its sessions), and the conversation's heartbeat counts come along from the
    session it leaves (*carried*, per transcript; None: it leaves none): only a
    log entry lowers them. So does its obligation to log: a session that declares no
    ``logTemplate`` of its own (on stdin, or earlier) takes *carried_template*, the one
    the conversation logged under there. A skill's ``phases`` are declared once: stdin may
    repeat them, never change them.
    """
    refuse_protected_stdin(extra)
    refuse_completed_skill(state, skill, approved)
    owner, owner_token = state.get(F.PID), state.get(F.PID_START)
    mine = same_owner(owner, owner_token, pid, token)
    refuse_live_owner(state, mine=mine, owner_running=owner_running, owner=owner)
    kind = activation_kind(state, skill, mine=mine)
    stamp = timestamp(now)
    new_skill = kind == "fresh" or state.get(F.SKILL) != skill
    extra = settle_phases(state, skill, kind=kind, new_skill=new_skill, extra=extra)
    # What the conversation proves is read before anything is written.
    same_conversation = bool(session_id) and state.get(F.SESSION_ID) == session_id
    proven_new = proves_new_conversation(state, session_id)
    still_overflowed = stays_overflowed(state, session_id)
    dehydrating = still_overflowed and state.get(F.LIFECYCLE) == Lifecycle.DEHYDRATING
    # Bootstrap passthrough for the heartbeat once per conversation, not on every re-activation nor
    # for every session it activates. A known conversation is judged by its id alone: releasing a
    # session and taking it back (a "takeover" of oneself) must not re-open the passthrough.
    grant_bootstrap = not bootstrapped and (proven_new if session_id else kind in ("fresh", "takeover"))
    set_owner(state, pid, token)
    state[F.SKILL] = skill
    state[F.LIFECYCLE] = Lifecycle.DEHYDRATING if dehydrating else Lifecycle.ACTIVE
    settle_bootstrap(state, grant=grant_bootstrap, session_id=session_id)
    if carried is not None:
        carry_tool_calls(state, carried)
    reset_overflow_unless_kept(state, still_overflowed=still_overflowed, proven_new=proven_new)
    if not same_conversation:
        state[F.CONTEXT_USAGE] = 0
        state.pop(F.CONTEXT_USAGE_AT, None)
    bind_activation(state, session_id=session_id, pane=pane, target_file=target_file)
    stamp_heartbeat_defaults(state, fresh=kind == "fresh", stamp=stamp)
    if extra:
        template = state.get(F.LOG_TEMPLATE)
        deep_merge(as_fields(state), extra)
        check_settings(state, extra, had_template=template)
    keep_obligation_to_log(state, carried_template)
    if new_skill or not isinstance(state.get(F.CURRENT_PHASE), str):
        state[F.CURRENT_PHASE] = ph.first_label(state.get(F.PHASES), DEFAULT_PHASE)
    return Activation(kind, owner if isinstance(owner, int) and not mine else None)


def keep_obligation_to_log(state: State, carried_template: str | None) -> None:
    """A conversation that had to log keeps having to: without a template of its own, the session takes
    the one the conversation leaves (activating another session is no way around the heartbeat)."""
    own = state.get(F.LOG_TEMPLATE)
    if isinstance(own, str) and own.strip():
        return
    if template_log_name(carried_template) is not None:
        state[F.LOG_TEMPLATE] = carried_template


def refuse_protected_stdin(extra: t.Mapping[str, object] | None) -> None:
    """Stdin JSON may not set a field a transition owns (:data:`PROTECTED_FROM_STDIN`)."""
    forbidden = sorted(set(extra) & PROTECTED_FROM_STDIN) if extra else []
    if forbidden:
        raise TransitionError(
            f"stdin JSON may not set {', '.join(forbidden)}; those fields are managed by session commands"
        )


def refuse_completed_skill(state: State, skill: str, approved: str | None) -> None:
    """A skill completed in this session runs again only with the user's approval."""
    completed = state.get(F.COMPLETED_SKILLS)
    if isinstance(completed, list) and skill in completed and not approved:
        raise TransitionError(
            f"skill {skill!r} was already completed in this session; to run it again, add "
            f'--user-approved "Reason: ..." (or start a new session folder)'
        )


def refuse_live_owner(state: State, *, mine: bool, owner_running: bool, owner: object) -> None:
    """A session held by another agent that still runs is never taken."""
    if state and not mine and owner_running:
        raise TransitionError(
            f"this session is held by another live agent (supervisor PID {owner}); "
            f"choose another folder, or stop that agent first"
        )


def activation_kind(state: State, skill: str, *, mine: bool) -> str:
    """``fresh`` (no state), ``takeover`` (a dead owner's), ``reactivated`` (same skill) or ``switched``."""
    if not state:
        return "fresh"
    if not mine:
        return "takeover"
    return "reactivated" if state.get(F.SKILL) == skill else "switched"


def settle_phases(
    state: State, skill: str, *, kind: str, new_skill: bool, extra: t.Mapping[str, object] | None
) -> t.Mapping[str, object] | None:
    """A skill's ``phases`` are declared once: the same skill's stdin may repeat them, never change them
    (the declaration kept, sub-phases included); a new skill starts without phases nor history.
    Returns *extra* without what it may no longer set."""
    if extra and F.PHASES in extra and not new_skill:
        check_phases_repeated(state.get(F.PHASES), extra[F.PHASES], skill)
        extra = {k: v for k, v in extra.items() if k != F.PHASES}
    if new_skill:
        state.pop(F.PHASES, None)
        if kind != "fresh":
            state[F.PHASE_HISTORY] = []
    return extra


def proves_new_conversation(state: State, session_id: str | None) -> bool:
    """Is *session_id* a conversation this session has not seen? Seen are the status line's binding
    (dropped by a restart request) and the one that last activated it (kept)."""
    seen = (state.get(F.SESSION_ID), state.get(F.BOOTSTRAP_CONVERSATION))
    return bool(session_id) and session_id not in seen


def stays_overflowed(state: State, session_id: str | None) -> bool:
    """Only a new conversation proves fresh context: the overflow flag and the dehydrate budget belong
    to the conversation that overflowed, and survive any re-activation inside it (deactivate +
    continue included). Without a conversation id nothing is proven."""
    overflowed_in = state.get(F.OVERFLOW_CONVERSATION) or state.get(F.SESSION_ID)
    return state.get(F.OVERFLOWED) is True and (not session_id or session_id == overflowed_in)


def settle_bootstrap(state: State, *, grant: bool, session_id: str | None) -> None:
    """Grant the bootstrap passthrough, or drop one another conversation left (not this one's to finish)."""
    if grant:
        state[F.LOADING] = True
    elif state.get(F.BOOTSTRAP_CONVERSATION) != session_id:
        state.pop(F.LOADING, None)


def reset_overflow_unless_kept(state: State, *, still_overflowed: bool, proven_new: bool) -> None:
    """A new lifecycle: no restart pending; the overflow only as :func:`stays_overflowed` says, and the
    dehydrate budget a conversation used stays used, whatever it re-activates."""
    state[F.OVERFLOWED] = still_overflowed
    state[F.KILL_REQUESTED] = False
    state.pop(F.RESTART_PROMPT, None)
    if not still_overflowed:
        state.pop(F.OVERFLOW_CONVERSATION, None)
        if proven_new:
            state.pop(F.DEHYDRATE_TOOL_CALLS, None)


def bind_activation(
    state: State, *, session_id: str | None, pane: str | None, target_file: str | None
) -> None:
    """Record the activating conversation, the pane (or none) and the target file given."""
    if session_id:
        state[F.SESSION_ID] = session_id
        state[F.BOOTSTRAP_CONVERSATION] = session_id
    if pane:
        state[F.FLEET_PANE_ID] = pane
    else:
        state.pop(F.FLEET_PANE_ID, None)
    if target_file:
        state[F.TARGET_FILE] = target_file


def stamp_heartbeat_defaults(state: State, *, fresh: bool, stamp: str) -> None:
    """Start and heartbeat times, and the heartbeat's counters and limits where none are set."""
    state.setdefault(F.STARTED_AT, stamp)
    state[F.LAST_HEARTBEAT] = stamp
    state.setdefault(F.TOOL_CALLS_SINCE_LAST_LOG, 0)
    if fresh:
        state[F.TOOL_CALLS_SINCE_LAST_LOG] = 0
    state.setdefault(F.WARN_AFTER, DEFAULT_WARN_AFTER)
    state.setdefault(F.BLOCK_AFTER, DEFAULT_BLOCK_AFTER)


def check_phases_repeated(declared: object, given: object, skill: str) -> None:
    """Re-activating *skill* may repeat its phase declaration, never change it.

    Phases and their proofs are declared once (``session update`` refuses them too): a new
    declaration could drop a phase that demands proof or reorder the path around it. The same
    declaration is accepted (and the stored one kept): every phase *given* is declared as it
    stands, and every declared phase is given, or is a sub-phase ``session phase`` added.
    """
    current = ph.declared(declared)
    if not current:
        return  # nothing declared yet: this is the declaration
    if (
        isinstance(given, list)
        and given
        and all(isinstance(p, dict) and p in current for p in given)
        and all(p in given or (p.get("minor", 0) > 0 and not p.get("proof")) for p in current)
    ):
        return
    raise TransitionError(
        f"phases were declared when {skill} was activated and cannot be declared again (their order and proofs "
        f"hold); leave phases out of the JSON, or activate another skill to declare its own"
    )
