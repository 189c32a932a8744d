"""Which conversation the next Claude runs in: one pure decision for every relaunch (docs/DESIGN.md §9).

Every launch but a first one outside a fleet comes here, whatever brought it
about: a fleet pane's start (``fleet start`` after a stop, ``fleet restart``,
a reboot), a session's restart request (an overflow's among them) or a crash.
The facts are read by :mod:`~claude_shepherd.supervisor.claude_run.launch_plan`
(under the session's lock); :func:`decide` turns them into a :class:`Plan` and
says which transition the session takes. No files, no ``/proc``: a table of
situations tests it.

The rules, in order: a session held by another live agent is not touched; a
restart (requested, or taken but never continued) continues with its prompt,
never ``--resume`` (S4, S6); an overflowed or kill-requested conversation is
never resumed (S9, §7.4); then a session's conversation, else — for an agent
that never activated a session — the one its hooks recorded for the pane (or,
outside a fleet, for this claude-run), is resumed when Claude still has its
transcript. After a crash, a record the crashed Claude never wrote (its
conversation unchanged since the launch) counts only if that launch resumed
it. Every fresh start that could have been a resume says why.
"""

from __future__ import annotations

import re

from claude_shepherd.supervisor.session.records import Record

TYPE_CHECKING = False
if TYPE_CHECKING:  # claude-run runs beside every agent: no typing at run time (docs/HOT_CORE.md)
    import typing as t
    from pathlib import Path

    Route = t.Literal["start", "restart", "crash"]
    """``start``: a fleet pane's first launch; ``restart``: a session asked for one; ``crash``: Claude exited
    otherwise."""

    Claim = t.Literal["resume", "owner", "restart", "continue"]
    """What the session's state becomes: claimed for a resume (``resuming``); only its owner changed (a
    finished session keeps its gate); its restart request consumed (``restarting``); owned, to continue
    a restart taken earlier."""


class Plan(Record):  # filled in step by step
    """One launch: which conversation, which prompt, which of the user's first-launch arguments."""

    __slots__ = ("resume", "prompt", "session", "with_selectors", "with_prompt", "notes")
    resume: str | None
    prompt: str | None
    session: Path | None
    with_selectors: bool
    with_prompt: bool
    notes: list[str]

    def __init__(
        self,
        resume: str | None = None,
        prompt: str | None = None,
        session: Path | None = None,
        with_selectors: bool = False,
        with_prompt: bool = False,
        notes: list[str] | None = None,
    ) -> None:
        self.resume = resume
        self.prompt = prompt
        self.session = session
        self.with_selectors = with_selectors
        self.with_prompt = with_prompt
        self.notes = [] if notes is None else notes


class SessionFacts(Record):
    """What a session's state says, read under its lock."""

    __slots__ = (
        "dir", "busy", "restart_prompt", "restarting_prompt", "overflowed", "kill_requested", "conversation",
        "completed",
    )  # fmt: skip
    dir: Path
    busy: int | None
    """The PID of another live supervisor that owns it, if one does."""
    restart_prompt: str | None
    """The prompt of a pending restart request (``killRequested`` and ``restartPrompt``)."""
    restarting_prompt: str | None
    """A restart taken whose Claude never re-activated the session (``restarting``): the prompt that continues it."""
    overflowed: bool
    kill_requested: bool
    conversation: object
    """``sessionId`` as stored."""
    completed: bool

    def __init__(
        self,
        dir: Path,
        busy: int | None = None,
        restart_prompt: str | None = None,
        restarting_prompt: str | None = None,
        overflowed: bool = False,
        kill_requested: bool = False,
        conversation: object = None,
        completed: bool = False,
    ) -> None:
        self.dir = dir
        self.busy = busy
        self.restart_prompt = restart_prompt
        self.restarting_prompt = restarting_prompt
        self.overflowed = overflowed
        self.kill_requested = kill_requested
        self.conversation = conversation
        self.completed = completed


class RecordFacts(Record):
    """The conversation the hooks last recorded for the pane (outside a fleet: for this claude-run)."""

    __slots__ = ("conversation", "overflowed", "changed_since_launch")
    conversation: object
    overflowed: bool
    changed_since_launch: bool
    """After a crash: the record names another conversation than when the crashed Claude was launched."""

    def __init__(
        self, conversation: object, overflowed: bool = False, changed_since_launch: bool = True
    ) -> None:
        self.conversation = conversation
        self.overflowed = overflowed
        self.changed_since_launch = changed_since_launch


class Situation(Record):
    __slots__ = (
        "route",
        "pane",
        "session",
        "unreadable",
        "record",
        "launched",
        "user_selects",
        "transcripts",
    )
    route: Route
    pane: str | None
    session: SessionFacts | None
    unreadable: tuple[str, str] | None
    """A session whose state could not be read: its name and why."""
    record: RecordFacts | None
    launched: str | None
    """After a crash: the conversation the crashed Claude was launched to resume."""
    user_selects: bool
    """The user's own arguments choose the conversation (``--resume``, ``--continue``…)."""
    transcripts: str
    """Where Claude's transcripts were looked for, for the reason of a fresh start."""

    def __init__(
        self,
        route: Route,
        pane: str | None = None,
        session: SessionFacts | None = None,
        unreadable: tuple[str, str] | None = None,
        record: RecordFacts | None = None,
        launched: str | None = None,
        user_selects: bool = False,
        transcripts: str = "",
    ) -> None:
        self.route = route
        self.pane = pane
        self.session = session
        self.unreadable = unreadable
        self.record = record
        self.launched = launched
        self.user_selects = user_selects
        self.transcripts = transcripts

    def replace(self, **changes: t.Any) -> Situation:
        """This situation with *changes* (``dataclasses.replace``)."""
        return Situation(**{**dict(zip(self.__slots__, self)), **changes})


class Decision(Record):
    __slots__ = ("plan", "claim")
    plan: Plan
    claim: Claim | None

    def __init__(self, plan: Plan, claim: Claim | None = None) -> None:
        self.plan = plan
        self.claim = claim


_CONVERSATION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")


def valid_conversation(value: object) -> t.TypeGuard[str]:
    """A conversation id we pass to ``--resume``: never one that could read as an option."""
    return isinstance(value, str) and bool(_CONVERSATION_ID.fullmatch(value))


def short(session_id: str) -> str:
    return session_id[:8] + "..." if len(session_id) > 8 else session_id


def decide(situation: Situation, has_transcript: t.Callable[[str], bool]) -> Decision:
    """The next launch in *situation*; *has_transcript* says whether Claude still has a conversation."""
    s = situation
    start = s.route == "start"
    plan = Plan(with_selectors=start, with_prompt=start)
    if s.route == "restart":
        return _requested_restart(s.session, plan)
    if start and s.pane is None:
        return Decision(plan)  # outside a fleet, a first launch is the user's own
    if start and s.user_selects:
        plan.notes.append(
            f"Fleet pane '{s.pane}': your arguments choose the conversation; not resuming the pane's"
        )
        return Decision(plan)

    def fresh(reason: str) -> Decision:
        plan.notes.append(
            f"Fleet pane '{s.pane}' starting fresh: {reason}" if start else f"Starting fresh: {reason}"
        )
        return Decision(plan)

    def resume(conversation: str, of: str, session: Path | None, claim: Claim | None) -> Decision:
        plan.resume, plan.session = conversation, session
        plan.with_prompt = False  # the conversation already has its first prompt: never send it again
        plan.notes.append(f"Resuming conversation {short(conversation)} of {of}")
        return Decision(plan, claim)

    def gone(what: str) -> Decision:
        return fresh(f"Claude no longer has {what} (no transcript under {s.transcripts})")

    if s.unreadable is not None:
        return fresh(f"cannot read session {s.unreadable[0]}: {s.unreadable[1]}")
    if (session := s.session) is not None:
        name = session.dir.name
        if session.busy is not None:
            return fresh(f"session {name} is in use by another running agent (supervisor PID {session.busy})")
        if start and session.restart_prompt:
            return _continue(plan, session, session.restart_prompt, "restart", start, s.pane)
        if session.restarting_prompt:
            return _continue(plan, session, session.restarting_prompt, "continue", start, s.pane)
        if session.overflowed:
            return fresh(f"the last conversation of session {name} filled its context, so it is not resumed")
        if session.kill_requested:
            return fresh(f"the last conversation of session {name} asked for a restart")
        if not valid_conversation(session.conversation):
            return fresh(f"session {name} records no conversation to resume")
        if not has_transcript(session.conversation):
            return gone(f"conversation {short(session.conversation)} of session {name}")
        of = f"session {name}" + (f" (fleet pane '{s.pane}')" if start else "")
        return resume(session.conversation, of, session.dir, "owner" if session.completed else "resume")

    whose = f"fleet pane '{s.pane}'" if s.pane else "this claude-run"
    record = s.record
    conversation: object = record.conversation if record else None
    overflowed = bool(record and record.overflowed)
    if not start and not (record and record.changed_since_launch):
        # The crashed Claude recorded nothing of its own: it was in what it was launched to resume, if anything.
        if s.launched is None:
            return fresh(
                "this agent has no session, and the Claude that crashed recorded no conversation to resume"
            )
        overflowed = overflowed and conversation == s.launched
        conversation = s.launched
    if not valid_conversation(conversation):
        return fresh(
            "it has no earlier session or conversation"
            if start
            else "this agent has no session, and no conversation was recorded for it"
        )
    if overflowed:
        return fresh(f"its last conversation {short(conversation)} filled its context, so it is not resumed")
    if not has_transcript(conversation):
        return gone(f"its conversation {short(conversation)}")
    return resume(conversation, f"{whose} (no session)", None, None)


def _requested_restart(session: SessionFacts | None, plan: Plan) -> Decision:
    """A restart this supervisor may take: a fresh Claude with the restart prompt (S4, S6)."""
    if session is None or not session.restart_prompt:
        plan.notes.append("Starting fresh: no restart request is pending")
        return Decision(plan)
    note = f"Session {session.dir.name} asked for a restart: starting a fresh conversation that continues it"
    if session.overflowed:
        note += " (the last one filled its context)"
    elif session.conversation:
        note += " (a restart never resumes the last one)"
    plan.prompt, plan.session, plan.notes = session.restart_prompt, session.dir, [note]
    return Decision(plan, "restart")


def _continue(
    plan: Plan, session: SessionFacts, prompt: str, claim: Claim, start: bool, pane: str | None
) -> Decision:
    """A restart requested or taken but not yet continued (the fleet stopped, or its Claude crashed first)."""
    plan.prompt, plan.session, plan.with_prompt = prompt, session.dir, False
    name = session.dir.name
    plan.notes.append(
        f"Fleet pane '{pane}' starting fresh: session {name} asked for a restart; continuing it with its restart prompt"
        if start
        else f"Session {name} was not continued yet: starting again with its restart prompt"
    )
    return Decision(plan, claim)
