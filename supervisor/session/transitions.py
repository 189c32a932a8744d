"""The state transitions of docs/DESIGN.md §3.6, each the only writer of its fields.

Every function changes a state dict in place (inside
:func:`claude_shepherd.supervisor.session.store.update_state`) and writes only what docs/DESIGN.md §3.6 says that
transition writes. State flows forward — ``overflowed`` only becomes true,
``killRequested`` is set by a restart request and cleared by its consumer —
except through :func:`activate`, the one entry point of a new lifecycle.

Standard library only: the hooks apply :func:`mark_overflowed`,
:func:`begin_dehydrate` and :func:`bind_conversation` on the hot path.
"""

from __future__ import annotations

import time
from pathlib import Path

from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.session import phases as ph
from claude_shepherd.supervisor.session.fields import (
    DEFAULT_BLOCK_AFTER,
    DEFAULT_PHASE,
    DEFAULT_WARN_AFTER,
    MAX_BLOCK_AFTER,
    F,
    Lifecycle,
)
from claude_shepherd.supervisor.session.identity import same_owner, valid_pid
from claude_shepherd.supervisor.session.paths import template_log_name
from claude_shepherd.supervisor.session.records import Record
from claude_shepherd.supervisor.session.store import as_fields

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

    from claude_shepherd.supervisor.session.state import PhaseDeclaration, PhaseRecord, State

PROTECTED_FROM_STDIN: frozenset[str] = frozenset(
    {
        F.PID,
        F.PID_START,
        F.SESSION_ID,
        F.FLEET_PANE_ID,
        F.LIFECYCLE,
        F.OVERFLOWED,
        F.OVERFLOW_CONVERSATION,
        F.KILL_REQUESTED,
        F.RESTART_PROMPT,
        F.LOADING,
        F.BOOTSTRAP_CONVERSATION,
        F.CONTEXT_USAGE,
        F.CONTEXT_USAGE_AT,
        F.CONTEXT_WINDOW_SIZE,
        F.DEHYDRATE_TOOL_CALLS,
        F.TOOL_CALLS_BY_TRANSCRIPT,
        F.COMPLETED_SKILLS,
        F.SKILL,
        F.CURRENT_PHASE,
        F.PHASE_HISTORY,
        F.LAST_HEARTBEAT,
        F.STARTED_AT,
        F.TOOL_CALLS_SINCE_LAST_LOG,
    }
)
"""Fields an activation's stdin JSON may not set: they belong to the transitions
(the skill is the command line's, validated there; the phase only moves by ``session phase``)."""

PROTECTED_FROM_UPDATE: frozenset[str] = PROTECTED_FROM_STDIN | {F.PHASES, F.LOG_TEMPLATE}
"""Fields ``session update`` may not set: ``phases`` and ``logTemplate`` are declared at
activation, so redeclaring them cannot open a path around the phase order and its proofs,
nor move the heartbeat's template onto another file."""


class TransitionError(ShepherdError):
    """A transition refused by its guard."""


def timestamp(now: float | None = None) -> str:
    """UTC ``YYYY-MM-DDTHH:MM:SSZ``, the format the bash era wrote."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if now is None else now))


def deep_merge(base: dict[str, t.Any], extra: t.Mapping[str, t.Any]) -> None:
    """Merge like jq's ``*``: objects recursively, everything else replaced."""
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            deep_merge(base[key], value)
        else:
            base[key] = value


def set_owner(state: State, pid: int, token: str | None) -> None:
    """Record the owning supervisor and its start token (identity, not just a number)."""
    state[F.PID] = pid
    if token:
        state[F.PID_START] = token
    else:
        state.pop(F.PID_START, None)


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
    extra: t.Mapping[str, t.Any] | None = None,
    approved: str | None = None,
    bootstrapped: bool = False,
    carried: t.Mapping[str, t.Any] | None = None,
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


def refuse_protected_stdin(extra: t.Mapping[str, t.Any] | None) -> None:
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
    state: State, skill: str, *, kind: str, new_skill: bool, extra: t.Mapping[str, t.Any] | None
) -> t.Mapping[str, t.Any] | None:
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


def set_setting(state: State, field: str, value: t.Any, *, now: float | None = None) -> None:
    """``session update``: one field the transitions do not own, within :func:`check_settings`."""
    had_template = state.get(F.LOG_TEMPLATE)
    as_fields(state)[field] = value
    check_settings(state, (field,), had_template=had_template)
    state[F.LAST_HEARTBEAT] = timestamp(now)


def release_pane(state: State) -> None:
    """Another session claimed this pane: one pane, one session (docs/DESIGN.md §7.1)."""
    state.pop(F.FLEET_PANE_ID, None)


def release_owner(state: State) -> None:
    """Our supervisor activated another session: this one no longer has an owner."""
    state[F.PID] = 0
    state.pop(F.PID_START, None)


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


# --------------------------------------------------------------------------- hook counters
# Applied by the PreToolUse hook (claude-hook) under the state lock, one call at a time.


def _count(value: object) -> int:
    """A stored counter, or 0 when it is missing or not a non-negative integer."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def count_dehydrate_call(state: State, budget: int) -> bool:
    """One more tool call while dehydrating or with a restart pending; False once *budget* is spent.

    Bounds the original's escape hatch: invoking dehydrate lifted the overflow
    gate for good, so an agent could keep working past the threshold.
    """
    used = _count(state.get(F.DEHYDRATE_TOOL_CALLS))
    if used >= budget:
        return False
    state[F.DEHYDRATE_TOOL_CALLS] = used + 1
    return True


def carry_tool_calls(state: State, carried: t.Mapping[str, t.Any]) -> None:
    """Take over the conversation's heartbeat counts (per transcript) from the session it leaves.

    The count is the conversation's, not the session's: it is what it was there, only a log
    entry (in whichever session) having lowered it.
    """
    state[F.TOOL_CALLS_BY_TRANSCRIPT] = {
        key: _count(value) for key, value in carried.items() if isinstance(key, str)
    }


def tool_calls(state: t.Mapping[str, object], key: str) -> int:
    """Tool calls without logging counted so far for transcript *key*."""
    counters = state.get(F.TOOL_CALLS_BY_TRANSCRIPT)
    return _count(counters.get(key)) if isinstance(counters, dict) else 0


def count_tool_call(state: State, key: str) -> int:
    """Heartbeat: one more tool call without logging for transcript *key*; the new count."""
    counters = state.get(F.TOOL_CALLS_BY_TRANSCRIPT)
    if not isinstance(counters, dict):
        counters = state[F.TOOL_CALLS_BY_TRANSCRIPT] = {}
    counters[key] = _count(counters.get(key)) + 1
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
