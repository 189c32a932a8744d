"""The facts of the next Claude launch, read under the session's lock (docs/DESIGN.md §9).

Three moments ask, and each reads what it needs and hands it to the one
decision, :func:`~claude_shepherd.supervisor.claude_run.launch_decision.decide`,
then applies the transition it names (:mod:`claude_shepherd.supervisor.session.owner_transitions`,
:mod:`claude_shepherd.supervisor.session.restart_transitions`):

* **A fleet pane's first launch** (:func:`first_launch`, S2/S3/S9): the session
  bound to the pane, else the conversation its hooks recorded.
* **A restart request** (:func:`take_restart`): only sessions owned by *this*
  supervisor count — recorded PID and start token, or this fleet pane when its
  recorded owner is dead. The bash original took any session's request outside
  a fleet (B6). A restart is always a fresh conversation.
* **A crash** (:func:`after_crash`): our own session, else the conversation
  recorded for the pane (outside a fleet: for this claude-run).
"""

from __future__ import annotations

from pathlib import Path

from claude_shepherd.supervisor.claude_run.launch_decision import (
    Decision,
    Plan,
    RecordFacts,
    SessionFacts,
    Situation,
    decide,
)
from claude_shepherd.supervisor.claude_run.transcripts import config_dir, find_transcript
from claude_shepherd.supervisor.session import pane_records
from claude_shepherd.supervisor.session.fields import F, Lifecycle
from claude_shepherd.supervisor.session.identity import owner_alive, same_owner, start_token
from claude_shepherd.supervisor.session.lookup import Found, find_session, sessions_on_pane, sessions_owned_by
from claude_shepherd.supervisor.session.owner_transitions import claim_for_resume, set_owner
from claude_shepherd.supervisor.session.records import Record
from claude_shepherd.supervisor.session.restart_transitions import consume_restart, restart_prompt
from claude_shepherd.supervisor.session.schema import validate_state
from claude_shepherd.supervisor.session.store import StateError, read_state, update_state

TYPE_CHECKING = False
if TYPE_CHECKING:  # claude-run runs beside every agent: no typing at run time (docs/HOT_CORE.md)
    import typing as t

    from claude_shepherd.supervisor.claude_run.launch_decision import Claim
    from claude_shepherd.supervisor.session.state import State


class Owner(Record):
    """This supervisor's identity as recorded in ``pid``/``pidStart``."""

    __slots__ = ("pid", "token")
    pid: int
    token: str | None

    def __init__(self, pid: int, token: str | None) -> None:
        self.pid = pid
        self.token = token


def _has_restart(state: t.Mapping[str, object]) -> bool:
    prompt = state.get(F.RESTART_PROMPT)
    return state.get(F.KILL_REQUESTED) is True and isinstance(prompt, str) and bool(prompt)


def _may_take(state: t.Mapping[str, object], me: Owner, pane: str | None) -> bool:
    owner, token = state.get(F.PID), state.get(F.PID_START)
    # A PID alone (a state written without a start token, e.g. by the bash era) may be
    # a reused one: a restart is taken on it only with the pane to vouch for it.
    if same_owner(owner, token, me.pid, me.token) and (token or not me.token):
        return True
    return bool(pane) and state.get(F.FLEET_PANE_ID) == pane and not owner_alive(owner, token)


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
) -> Plan | None:
    """Consume the restart request of a session this supervisor owns, if there is one: the fresh launch
    that continues it.

    Checked again under the lock, so a request is consumed exactly once and
    never one of another live supervisor's sessions.
    """
    pane_list = [p for p in dict.fromkeys(panes) if p]
    for found in _restart_candidates(root, me, pane_list):

        def consume(state: State, found: Found = found) -> Plan | None:
            pane = next((p for p in pane_list if state.get(F.FLEET_PANE_ID) == p), None)
            if not _has_restart(state) or not _may_take(state, me, pane):
                return None
            facts = session_facts(found.session_dir, state, me)
            return _apply(state, found.session_dir, me, decide(Situation("restart", session=facts), _never))

        try:
            plan = update_state(found.session_dir, consume, validate=validate_state)
        except StateError as exc:
            if warn is not None:
                warn(f"WARNING: cannot take the restart request of session {found.session_dir.name}: {exc}")
            continue
        if plan is not None:
            return plan
    return None


def _never(conversation: str) -> bool:
    return False  # a restart never resumes: no transcript is looked for


def session_facts(session_dir: Path, state: State, me: Owner, continuing: str | None = None) -> SessionFacts:
    """What *state* says for the decision; whether its owner runs is the one fact read from /proc.

    *continuing*: the prompt our last Claude was launched with to continue this session's restart, which
    continues it again (else the prompt is built from the state as the request built it)."""
    owner, token = state.get(F.PID), state.get(F.PID_START)
    busy = not same_owner(owner, token, me.pid, me.token) and owner_alive(owner, token)
    lifecycle = state.get(F.LIFECYCLE)
    restarting = lifecycle == Lifecycle.RESTARTING
    return SessionFacts(
        dir=session_dir,
        busy=owner if busy else None,
        restart_prompt=state.get(F.RESTART_PROMPT) if _has_restart(state) else None,
        restarting_prompt=(continuing or restart_prompt(session_dir, state)) if restarting else None,
        overflowed=state.get(F.OVERFLOWED) is True,
        kill_requested=state.get(F.KILL_REQUESTED) is True,
        conversation=state.get(F.SESSION_ID),
        completed=lifecycle == Lifecycle.COMPLETED,
    )


def _apply(state: State, session_dir: Path, me: Owner, decision: Decision) -> Plan:
    """The transition the decision names, on the state under the lock."""
    claim: Claim | None = decision.claim
    if claim == "resume":
        claim_for_resume(state, pid=me.pid, token=me.token)
    elif claim == "owner" or claim == "continue":
        set_owner(state, me.pid, me.token)
    elif claim == "restart":
        if not same_owner(state.get(F.PID), state.get(F.PID_START), me.pid, me.token):
            set_owner(state, me.pid, me.token)
        consume_restart(state)
    return decision.plan


def _record_where(pane: str | None, me: Owner) -> tuple[str, str] | None:
    return pane_records.spot(pane, (me.pid, me.token))


def recorded(root: Path, pane: str | None, me: Owner) -> str | None:
    """The conversation recorded for the pane (outside a fleet: for this claude-run), read before each
    launch so that a crash can tell whether the crashed Claude recorded one of its own."""
    where = _record_where(pane, me)
    return pane_records.conversation(pane_records.read(root, *where)) if where else None


def forget_record(root: Path, me: Owner) -> None:
    """This claude-run's own record (outside a fleet) ends with it; a pane's is kept for its next start.
    Those of claude-runs that died without a word (SIGKILL) go too."""
    where = _record_where(None, me)
    if where is not None:
        pane_records.forget(root, *where)
    pane_records.forget_runs(root, lambda pid, token: start_token(pid) != token)


def _record_facts(root: Path, pane: str | None, me: Owner, before: str | None) -> RecordFacts | None:
    where = _record_where(pane, me)
    record = pane_records.read(root, *where) if where else None
    if record is None:
        return None
    conversation = record.get("conversation")
    return RecordFacts(conversation, record.get("overflowed") is True, conversation != before)


def _relaunch(
    root: Path,
    me: Owner,
    found: Found | None,
    situation: Situation,
    cwd: Path | tuple[Path, ...],
    env: t.Mapping[str, str],
    continuing: tuple[Path, str] | None = None,
) -> Plan:
    """Decide *situation* — with *found*'s state, under its lock, when there is a session.

    *cwd*: where Claude runs, or several places (a worktree, and the checkout its conversations go
    back to when Claude removes the worktree at an exit)."""
    places = cwd if isinstance(cwd, tuple) else (cwd,)

    def has_transcript(conversation: str) -> bool:
        return any(find_transcript(conversation, place, env) is not None for place in places)

    situation = situation.replace(
        transcripts=f"{config_dir(env) / 'projects'} for {' or '.join(map(str, places))}"
    )
    if found is None:
        return decide(situation, has_transcript).plan

    prompt = continuing[1] if continuing and continuing[0] == found.session_dir else None

    def mutate(state: State) -> Plan:
        facts = session_facts(found.session_dir, state, me, prompt)
        return _apply(state, found.session_dir, me, decide(situation.replace(session=facts), has_transcript))

    try:
        return update_state(found.session_dir, mutate, validate=validate_state)
    except StateError as exc:
        unreadable = situation.replace(unreadable=(found.session_dir.name, str(exc)))
        return decide(unreadable, has_transcript).plan


def first_launch(
    root: Path,
    me: Owner,
    pane: str | None,
    cwd: Path | tuple[Path, ...],
    env: t.Mapping[str, str],
    *,
    user_selects: bool = False,
    user_resumes: str | None = None,
) -> Plan:
    """The first launch: outside a fleet the user's own; in a fleet pane, its conversation (S2, S3, S9).

    Outside a fleet, a user's ``--resume ID`` of a conversation whose session's claude-run is gone takes
    that session over (:func:`claim_conversation`): the conversation comes back with its session, as a
    fleet pane's resume brings both back."""
    situation = Situation("start", pane=pane, user_selects=user_selects)
    if pane is None and user_resumes:
        claim_conversation(root, me, user_resumes)
    if pane is None or user_selects:
        return decide(situation, _never).plan
    found = sessions_on_pane(root, pane)
    if not found:
        situation = Situation("start", pane=pane, record=_record_facts(root, pane, me, None))
    return _relaunch(root, me, found[0] if found else None, situation, cwd, env)


def claim_conversation(root: Path, me: Owner, conversation: str) -> Path | None:
    """The session that *conversation* last ran in, taken over by this claude-run when its owner is gone
    and it may go on (not overflowed, no restart pending): its lifecycle ``resuming`` until the resumed
    Claude starts. None when there is none to take."""
    try:
        names = sorted(entry.name for entry in root.iterdir() if entry.is_dir() and not entry.is_symlink())
    except OSError:
        return None
    for name in names:
        session_dir = root / name

        def take(state: State) -> bool:
            if state.get(F.SESSION_ID) != conversation or state.get(F.OVERFLOWED) is True:
                return False
            owner, token = state.get(F.PID), state.get(F.PID_START)
            if state.get(F.KILL_REQUESTED) is True or (
                owner_alive(owner, token) and not same_owner(owner, token, me.pid, me.token)
            ):
                return False
            if state.get(F.LIFECYCLE) not in (Lifecycle.ACTIVE, Lifecycle.RESUMING):
                return False
            claim_for_resume(state, pid=me.pid, token=me.token)
            return True

        try:
            if read_state(session_dir).get(F.SESSION_ID) != conversation:
                continue  # read without the lock: only the one that names it is written
            if update_state(session_dir, take, validate=validate_state):
                return session_dir
        except (StateError, OSError):
            continue
    return None


def after_crash(
    root: Path,
    me: Owner,
    pane: str | None,
    cwd: Path | tuple[Path, ...],
    env: t.Mapping[str, str],
    *,
    launched: str | None = None,
    recorded_at_launch: str | None = None,
    continuing: tuple[Path, str] | None = None,
) -> Plan:
    """The relaunch after a crash: our own session's conversation, else the recorded one, when safe.

    What the crashed Claude was launched with: *launched*, the conversation it resumed; *continuing*,
    the session and prompt of the restart it continued; *recorded_at_launch*, what :func:`recorded` said.
    """
    found = find_session(root, pane=pane, pid=me.pid, token=me.token)
    record = None if found else _record_facts(root, pane, me, recorded_at_launch)
    situation = Situation("crash", pane=pane, record=record, launched=launched)
    return _relaunch(root, me, found, situation, cwd, env, continuing)
