"""What the next Claude launch is, decided from the session state (docs/DESIGN.md §9).

Three questions, each answered under the session's lock through the
transitions of :mod:`claude_shepherd.supervisor.session.transitions`:

* **Was a restart requested?** (:func:`take_restart`) Only sessions owned by
  *this* supervisor count — recorded PID and start token, or this fleet pane
  when its recorded owner is dead. The bash original took any session's
  request outside a fleet (B6). A restart is always a fresh conversation.
* **Can this pane's conversation be resumed?** (:func:`fleet_start`, S2/S3/S9)
* **Can our own conversation be resumed after a crash?** (:func:`after_crash`)

A conversation is resumed only if nobody else alive owns the session, it is
not ``overflowed`` and no ``killRequested`` is pending (docs/DESIGN.md §7.4, §7.7),
it has a ``sessionId``, and Claude still has its transcript. Every decision to
start fresh instead carries one line saying why.
"""

from __future__ import annotations

import re
import typing as t
from dataclasses import dataclass, field
from pathlib import Path

from claude_shepherd.supervisor.claude_run.transcripts import config_dir, find_transcript
from claude_shepherd.supervisor.session import pane_records
from claude_shepherd.supervisor.session import transitions as tr
from claude_shepherd.supervisor.session.fields import F, Lifecycle
from claude_shepherd.supervisor.session.identity import owner_alive, same_owner
from claude_shepherd.supervisor.session.lookup import Found, find_session, sessions_on_pane, sessions_owned_by
from claude_shepherd.supervisor.session.schema import validate_state
from claude_shepherd.supervisor.session.state import State
from claude_shepherd.supervisor.session.store import StateError, read_state, update_state


@dataclass(frozen=True)
class Owner:
    """This supervisor's identity as recorded in ``pid``/``pidStart``."""

    pid: int
    token: str | None


@dataclass
class Plan:  # filled in step by step
    """One launch: which conversation, which prompt, which of the user's first-launch arguments."""

    resume: str | None = None
    prompt: str | None = None
    session: Path | None = None
    with_selectors: bool = False
    with_prompt: bool = False
    notes: list[str] = field(default_factory=list)


def short(session_id: str) -> str:
    return session_id[:8] + "..." if len(session_id) > 8 else session_id


def _has_restart(state: t.Mapping[str, t.Any]) -> bool:
    prompt = state.get(F.RESTART_PROMPT)
    return state.get(F.KILL_REQUESTED) is True and isinstance(prompt, str) and bool(prompt)


def _may_take(state: t.Mapping[str, t.Any], me: Owner, pane: str | None) -> bool:
    owner, token = state.get(F.PID), state.get(F.PID_START)
    # A PID alone (a state written without a start token, e.g. by the bash era) may be
    # a reused one: a restart is taken on it only with the pane to vouch for it.
    if same_owner(owner, token, me.pid, me.token) and (token or not me.token):
        return True
    return bool(pane) and state.get(F.FLEET_PANE_ID) == pane and not owner_alive(owner, token)


@dataclass(frozen=True)
class Taken:
    session: Path
    prompt: str
    overflowed: bool
    had_session_id: bool


def _restart_candidates(root: Path, me: Owner, pane_list: list[str]) -> list[Found]:
    """Sessions owned by *me* or bound to our panes that carry a restart request (read only)."""
    candidates = list(sessions_owned_by(root, me.pid, me.token))
    for pane in pane_list:
        candidates += sessions_on_pane(root, pane)
    seen: set[Path] = set()
    unique: list[Found] = []
    for found in candidates:
        if found.session_dir not in seen and _has_restart(found.state):
            seen.add(found.session_dir)
            unique.append(found)
    return unique


def restart_pending(root: Path, me: Owner, panes: t.Iterable[str | None] = ()) -> bool:
    """Is there a restart request this supervisor would take? (Nothing is consumed.)"""
    pane_list = [p for p in dict.fromkeys(panes) if p]
    for found in _restart_candidates(root, me, pane_list):
        pane = next((p for p in pane_list if found.state.get(F.FLEET_PANE_ID) == p), None)
        if _may_take(found.state, me, pane):
            return True
    return False


def take_restart(
    root: Path,
    me: Owner,
    panes: t.Iterable[str | None] = (),
    warn: t.Callable[[str], None] | None = None,
) -> Taken | None:
    """Consume the restart request of a session this supervisor owns, if there is one.

    Checked again under the lock, so a request is consumed exactly once and
    never one of another live supervisor's sessions.
    """
    pane_list = [p for p in dict.fromkeys(panes) if p]
    for found in _restart_candidates(root, me, pane_list):

        def consume(state: State, found: Found = found) -> Taken | None:
            pane = next((p for p in pane_list if state.get(F.FLEET_PANE_ID) == p), None)
            if not _has_restart(state) or not _may_take(state, me, pane):
                return None
            overflowed = state.get(F.OVERFLOWED) is True
            had_id = bool(state.get(F.SESSION_ID))
            if not same_owner(state.get(F.PID), state.get(F.PID_START), me.pid, me.token):
                tr.set_owner(state, me.pid, me.token)
            prompt = tr.consume_restart(state)
            assert prompt is not None
            return Taken(found.session_dir, prompt, overflowed, had_id)

        try:
            taken = update_state(found.session_dir, consume, validate=validate_state)
        except StateError as exc:
            if warn is not None:
                warn(f"WARNING: cannot take the restart request of session {found.session_dir.name}: {exc}")
            continue
        if taken is not None:
            return taken
    return None


def still_restarting(session_dir: Path) -> bool:
    """Has the Claude launched with a restart prompt not yet re-activated the session?"""
    try:
        return read_state(session_dir).get(F.LIFECYCLE) == Lifecycle.RESTARTING
    except StateError:
        return False


def restart_plan(taken: Taken) -> Plan:
    note = (
        f"Session {taken.session.name} asked for a restart: starting a fresh conversation that continues it"
    )
    if taken.overflowed:
        note += " (the last one filled its context)"
    elif taken.had_session_id:
        note += " (a restart never resumes the last one)"
    return Plan(prompt=taken.prompt, session=taken.session, notes=[note])


@dataclass(frozen=True)
class _Resume:
    kind: str  # resume | restart | busy | overflowed | killed | no-id | no-transcript
    session_id: str | None = None
    prompt: str | None = None
    owner: t.Any = None


def _decide(
    session_dir: Path,
    me: Owner,
    cwd: Path,
    env: t.Mapping[str, str],
    *,
    allow_restart: bool,
) -> _Resume:
    """Under the lock: claim *session_dir* for a resume (or its pending restart), or say why not.

    The I/O shell around :func:`decide`: it reads the facts (is the recorded
    owner running, does a transcript exist) and applies the decision.
    """

    def mutate(state: State) -> _Resume:
        return decide(
            state,
            me,
            session_dir,
            owner_running=owner_alive(state.get(F.PID), state.get(F.PID_START)),
            has_transcript=lambda conversation: find_transcript(conversation, cwd, env) is not None,
            allow_restart=allow_restart,
        )

    return update_state(session_dir, mutate, validate=validate_state)


def decide(
    state: State,
    me: Owner,
    session_dir: Path,
    *,
    owner_running: bool,
    has_transcript: t.Callable[[str], bool],
    allow_restart: bool,
) -> _Resume:
    """Resume this session's conversation, continue its pending restart, or say why neither.

    A pure function of the state and the facts given (no /proc, no files):
    claims the state for *me* when it resumes or restarts.
    """
    owner, token = state.get(F.PID), state.get(F.PID_START)
    if not same_owner(owner, token, me.pid, me.token) and owner_running:
        return _Resume("busy", owner=owner)
    if allow_restart and _has_restart(state):
        tr.set_owner(state, me.pid, me.token)
        return _Resume("restart", prompt=tr.consume_restart(state))
    if allow_restart and state.get(F.LIFECYCLE) == Lifecycle.RESTARTING:
        # A restart was taken, but its new Claude never re-activated the session
        # (the fleet stopped in between): continue it with the same prompt.
        tr.set_owner(state, me.pid, me.token)
        return _Resume("restart", prompt=tr.restart_prompt(session_dir, state))
    if state.get(F.OVERFLOWED) is True:
        return _Resume("overflowed")
    if state.get(F.KILL_REQUESTED) is True:
        return _Resume("killed")
    session_id = state.get(F.SESSION_ID)
    if not valid_conversation(session_id):
        return _Resume("no-id")
    if not has_transcript(session_id):
        return _Resume("no-transcript", session_id)
    if state.get(F.LIFECYCLE) == Lifecycle.COMPLETED:
        # Keep the gate engaged for a finished session: only the owner changes.
        tr.set_owner(state, me.pid, me.token)
    else:
        tr.claim_for_resume(state, pid=me.pid, token=me.token)
    return _Resume("resume", session_id)


def _explain(decision: _Resume, where: str, name: str, cwd: Path, env: t.Mapping[str, str]) -> str:
    sid = decision.session_id or ""
    reasons = {
        "busy": f"session {name} is in use by another running agent (supervisor PID {decision.owner})",
        "overflowed": f"the last conversation of session {name} filled its context, so it is not resumed",
        "killed": f"the last conversation of session {name} asked for a restart",
        "no-id": f"session {name} records no conversation to resume",
        "no-transcript": (
            f"Claude no longer has conversation {short(sid)} of session {name} (no transcript under "
            f"{config_dir(env) / 'projects'} for {cwd})"
        ),
    }
    return f"{where}starting fresh: {reasons[decision.kind]}"


def fleet_start(
    root: Path,
    me: Owner,
    pane: str,
    cwd: Path,
    env: t.Mapping[str, str],
) -> Plan:
    """The first launch in a fleet pane (S2, S3, S9)."""
    plan = Plan(with_selectors=True, with_prompt=True)
    found = sessions_on_pane(root, pane)
    if not found:
        return _pane_conversation(root, pane, cwd, env, plan)
    session_dir = found[0].session_dir
    try:
        decision = _decide(session_dir, me, cwd, env, allow_restart=True)
    except StateError as exc:
        plan.notes.append(
            f"Fleet pane '{pane}' starting fresh: cannot read session {session_dir.name}: {exc}"
        )
        return plan
    if decision.kind == "resume":
        assert decision.session_id
        plan.resume = decision.session_id
        plan.session = session_dir
        plan.with_prompt = False  # the conversation already has its first prompt: never send it again
        plan.notes.append(
            f"Resuming conversation {short(decision.session_id)} of session {session_dir.name} "
            f"(fleet pane '{pane}')"
        )
    elif decision.kind == "restart":
        plan.prompt = decision.prompt
        plan.with_prompt = False
        plan.session = session_dir
        plan.notes.append(
            f"Fleet pane '{pane}' starting fresh: session {session_dir.name} asked for a restart; "
            f"continuing it with its restart prompt"
        )
    else:
        plan.notes.append(_explain(decision, f"Fleet pane '{pane}' ", session_dir.name, cwd, env))
    return plan


def _pane_conversation(root: Path, pane: str, cwd: Path, env: t.Mapping[str, str], plan: Plan) -> Plan:
    """No session is bound to the pane: resume the conversation the pane was last in, when that is safe."""
    record = pane_records.read(root, pane)
    conversation = pane_records.conversation(record)
    if conversation is None or not valid_conversation(conversation):
        plan.notes.append(f"Fleet pane '{pane}' starting fresh: it has no earlier session or conversation")
    elif record and record.get("overflowed") is True:
        plan.notes.append(
            f"Fleet pane '{pane}' starting fresh: its last conversation {short(conversation)} filled its "
            "context, so it is not resumed"
        )
    elif find_transcript(conversation, cwd, env) is None:
        plan.notes.append(
            f"Fleet pane '{pane}' starting fresh: Claude no longer has its conversation {short(conversation)} "
            f"(no transcript under {config_dir(env) / 'projects'} for {cwd})"
        )
    else:
        plan.resume = conversation
        plan.with_prompt = False  # the conversation already has its first prompt: never send it again
        plan.notes.append(f"Resuming conversation {short(conversation)} of fleet pane '{pane}' (no session)")
    return plan


_CONVERSATION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")


def valid_conversation(value: t.Any) -> t.TypeGuard[str]:
    """A conversation id we pass to ``--resume``: never one that could read as an option."""
    return isinstance(value, str) and bool(_CONVERSATION_ID.fullmatch(value))


def after_crash(
    root: Path,
    me: Owner,
    pane: str | None,
    cwd: Path,
    env: t.Mapping[str, str],
) -> Plan:
    """The relaunch after a crash: resume our own session's conversation when that is safe."""
    plan = Plan()
    found = find_session(root, pane=pane, pid=me.pid, token=me.token)
    if found is None:
        plan.notes.append("Starting fresh: this agent has no session whose conversation could be resumed")
        return plan
    try:
        decision = _decide(found.session_dir, me, cwd, env, allow_restart=False)
    except StateError as exc:
        plan.notes.append(f"Starting fresh: cannot read session {found.session_dir.name}: {exc}")
        return plan
    if decision.kind == "resume":
        assert decision.session_id
        plan.resume = decision.session_id
        plan.session = found.session_dir
        plan.notes.append(
            f"Resuming conversation {short(decision.session_id)} of session {found.session_dir.name}"
        )
    else:
        line = _explain(decision, "", found.session_dir.name, cwd, env)
        plan.notes.append(line[:1].upper() + line[1:])
    return plan
