"""Every relaunch — a fleet pane's start, a restart request, a crash — decided by one function (no processes)."""

from __future__ import annotations

import json
import os
import typing as t
from pathlib import Path

import pytest

from claude_shepherd.supervisor.claude_run.launch_plan import Owner, after_crash, first_launch, take_restart
from claude_shepherd.supervisor.session.identity import start_token
from claude_shepherd.supervisor.session.store import read_state

PANE = "crew:agents:SDK"
DEAD = 2**22 + 4321


def test_a_restart_taken_but_never_continued_is_not_lost(tmp_path: Path) -> None:
    """The fleet stopped between taking a restart and the new Claude's `session continue`."""
    root = tmp_path / "sessions"
    session = root / "2026_11_22_WORK"
    session.mkdir(parents=True)
    state = {"pid": DEAD, "skill": "implement", "lifecycle": "restarting", "overflowed": True,
             "killRequested": False, "currentPhase": "3: Build", "fleetPaneId": PANE}  # fmt: skip
    (session / ".state.json").write_text(json.dumps(state))
    me = Owner(os.getpid(), start_token(os.getpid()))
    plan = first_launch(root, me, PANE, tmp_path, {})
    assert plan.resume is None, "a restart never resumes"
    assert plan.prompt == f'/session continue --session {session} --skill implement --phase "3: Build"'
    assert read_state(session)["pid"] == me.pid
    assert any("asked for a restart" in note for note in plan.notes)


def test_an_overflowed_session_without_a_restart_starts_fresh(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    session = root / "2026_11_22_WORK"
    session.mkdir(parents=True)
    state = {"pid": DEAD, "skill": "implement", "lifecycle": "active", "overflowed": True,
             "sessionId": "conv-1", "fleetPaneId": PANE}  # fmt: skip
    (session / ".state.json").write_text(json.dumps(state))
    plan = first_launch(root, Owner(os.getpid(), start_token(os.getpid())), PANE, tmp_path, {})
    assert plan.resume is None and plan.prompt is None
    assert any("filled its context" in note for note in plan.notes)


def test_a_restart_request_is_taken_only_from_a_proven_owner(tmp_path: Path) -> None:
    """A bash-era state naming our PID but no start token may be a reused PID: not ours to restart."""
    root = tmp_path / "sessions"
    me = Owner(os.getpid(), start_token(os.getpid()))
    request = {"skill": "implement", "lifecycle": "active", "killRequested": True,
               "restartPrompt": "/session continue --session x --skill implement --phase \"1: Setup\""}  # fmt: skip
    legacy = root / "LEGACY"
    legacy.mkdir(parents=True)
    (legacy / ".state.json").write_text(json.dumps({"pid": me.pid, **request}))
    assert take_restart(root, me) is None
    assert read_state(legacy)["killRequested"] is True, "left untouched"
    ours = root / "OURS"
    ours.mkdir()
    (ours / ".state.json").write_text(json.dumps({"pid": me.pid, "pidStart": me.token, **request}))
    plan = take_restart(root, me)
    assert plan is not None and plan.session == ours and read_state(ours)["lifecycle"] == "restarting"
    assert plan.resume is None and plan.prompt == request["restartPrompt"]


def test_outside_a_fleet_a_crash_resumes_what_this_claude_run_recorded_and_only_its_own(
    tmp_path: Path,
) -> None:
    """The hooks record the conversation of a claude-run without a pane under its PID and start token."""
    from claude_shepherd.supervisor.session import pane_records

    root = tmp_path / "sessions"
    me = Owner(os.getpid(), start_token(os.getpid()))
    config = tmp_path / "config"
    env = {"CLAUDE_CONFIG_DIR": str(config)}
    conversation = "0a1b2c3d-0000-4000-8000-00000000beef"
    transcript = config / "projects" / str(tmp_path).replace("/", "-") / f"{conversation}.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text("{}\n")
    other = Owner(me.pid, "another-boot:1")  # the same PID, another process: never ours
    key, folder = pane_records.spot(None, (other.pid, other.token)) or ("", "")
    pane_records.note(root, key, conversation, folder=folder)
    assert after_crash(root, me, None, tmp_path, env).resume is None
    key, folder = pane_records.spot(None, (me.pid, me.token)) or ("", "")
    pane_records.note(root, key, conversation, folder=folder)
    plan = after_crash(root, me, None, tmp_path, env)
    assert plan.resume == conversation and plan.notes == [
        "Resuming conversation 0a1b2c3d... of this claude-run (no session)"
    ]
    stale = after_crash(root, me, None, tmp_path, env, recorded_at_launch=conversation)
    assert stale.resume is None, "recorded before the launch that crashed, which did not resume it"


# --------------------------------------------------------------------------- the decision alone (no processes, no files)

from claude_shepherd.supervisor.claude_run.launch_decision import (  # noqa: E402
    RecordFacts,
    SessionFacts,
    Situation,
    decide,
)

if t.TYPE_CHECKING:  # a name for mypy only: claude-run's modules keep typing out of their run time
    from claude_shepherd.supervisor.claude_run.launch_decision import Claim

SID = "3f2a9c4e-1111-2222-3333-444455556666"
REC = "0a1b2c3d-0000-4000-8000-00000000beef"
GONE = "9e9e9e9e-0000-4000-8000-000000000000"
"""A conversation Claude no longer has (no transcript)."""
PANE = "crew:agents:SDK"
WORK = Path("/p/sessions/W")
PROMPT = '/session continue --session /p/sessions/W --skill implement --phase "2: Build"'


def s(**facts: t.Any) -> SessionFacts:
    """A session whose conversation is SID, with *facts*."""
    return SessionFacts(**{"dir": WORK, "conversation": SID, **facts})


def r(conversation: object = REC, **facts: t.Any) -> RecordFacts:
    return RecordFacts(conversation, **facts)


STALE = {"changed_since_launch": False}
"""A record the crashed Claude never wrote: it named the same conversation when that Claude was launched."""

Expect = tuple[str, str | None, "Claim | None"]
"""("resume", conversation, claim) | ("continue", prompt, claim) | ("fresh", a words of its note, None)."""

ROWS: list[tuple[str, Situation, Expect]] = [
    # ---------------------------------------------------- a fleet pane's start: fleet start after a stop, restart, reboot
    ("start: session", Situation("start", PANE, s()), ("resume", SID, "resume")),
    ("start: session, owner alive", Situation("start", PANE, s(busy=999)),
     ("fresh", "in use by another running agent (supervisor PID 999)", None)),
    ("start: restart pending", Situation("start", PANE, s(restart_prompt=PROMPT, kill_requested=True)),
     ("continue", PROMPT, "restart")),
    ("start: overflow restart pending", Situation("start", PANE,
     s(restart_prompt=PROMPT, kill_requested=True, overflowed=True, conversation=None)),
     ("continue", PROMPT, "restart")),
    ("start: restart taken, never continued", Situation("start", PANE, s(restarting_prompt=PROMPT, overflowed=True)),
     ("continue", PROMPT, "continue")),
    ("start: overflowed (S9)", Situation("start", PANE, s(overflowed=True), record=r()),
     ("fresh", "the last conversation of session W filled its context", None)),
    ("start: kill requested", Situation("start", PANE, s(kill_requested=True), record=r()),
     ("fresh", "the last conversation of session W asked for a restart", None)),
    ("start: session id not valid", Situation("start", PANE, s(conversation="--dangerously-skip-permissions")),
     ("fresh", "session W records no conversation to resume", None)),
    ("start: session, no transcript", Situation("start", PANE, s(conversation=GONE)),
     ("fresh", "Claude no longer has conversation 9e9e9e9e... of session W (no transcript under", None)),
    ("start: finished session", Situation("start", PANE, s(completed=True)), ("resume", SID, "owner")),
    ("start: unreadable session", Situation("start", PANE, unreadable=("W", "bad JSON")),
     ("fresh", "cannot read session W: bad JSON", None)),
    ("start: no session, record", Situation("start", PANE, record=r()), ("resume", REC, None)),
    ("start: no session, no record", Situation("start", PANE), ("fresh", "it has no earlier session or conversation", None)),
    ("start: no session, record overflowed", Situation("start", PANE, record=r(overflowed=True)),
     ("fresh", "its last conversation 0a1b2c3d... filled its context", None)),
    ("start: no session, record id not valid", Situation("start", PANE, record=r("-p")),
     ("fresh", "it has no earlier session or conversation", None)),
    ("start: no session, record, no transcript", Situation("start", PANE, record=r(GONE)),
     ("fresh", "Claude no longer has its conversation 9e9e9e9e...", None)),
    ("start: the user's arguments choose", Situation("start", PANE, s(), record=r(), user_selects=True),
     ("fresh", "your arguments choose the conversation", None)),
    ("start: outside a fleet", Situation("start", None, record=r()), ("fresh", None, None)),
    # ---------------------------------------------------- a restart request (the session was ours to take)
    ("restart", Situation("restart", PANE, s(restart_prompt=PROMPT, kill_requested=True)),
     ("continue", PROMPT, "restart")),
    ("restart: after an overflow (S4)",
     Situation("restart", None, s(restart_prompt=PROMPT, kill_requested=True, overflowed=True)),
     ("continue", PROMPT, "restart")),
    ("restart: nothing pending", Situation("restart", PANE, s()), ("fresh", "no restart request is pending", None)),
    # ---------------------------------------------------- a crash
    ("crash: session", Situation("crash", PANE, s()), ("resume", SID, "resume")),
    ("crash: session outside a fleet", Situation("crash", None, s()), ("resume", SID, "resume")),
    ("crash: session, owner alive", Situation("crash", PANE, s(busy=999)), ("fresh", "in use by another", None)),
    ("crash: restart pending, never resumed", Situation("crash", PANE, s(restart_prompt=PROMPT, kill_requested=True)),
     ("fresh", "asked for a restart", None)),
    ("crash: restart taken, never continued", Situation("crash", PANE, s(restarting_prompt=PROMPT, overflowed=True)),
     ("continue", PROMPT, "continue")),
    ("crash: overflowed", Situation("crash", PANE, s(overflowed=True), record=r()), ("fresh", "filled its context", None)),
    ("crash: session, no transcript", Situation("crash", PANE, s(conversation=GONE)), ("fresh", "no longer has", None)),
    ("crash: no session, record (issue 25)", Situation("crash", PANE, record=r()), ("resume", REC, None)),
    ("crash: no session, record overflowed", Situation("crash", PANE, record=r(overflowed=True)),
     ("fresh", "filled its context", None)),
    ("crash: no session, record id not valid", Situation("crash", PANE, record=r("--print")),
     ("fresh", "no conversation was recorded for it", None)),
    ("crash: no session, record, no transcript", Situation("crash", PANE, record=r(GONE)),
     ("fresh", "Claude no longer has its conversation", None)),
    ("crash: no session, no record", Situation("crash", PANE),
     ("fresh", "the Claude that crashed recorded no conversation", None)),
    ("crash: no session, stale record, launched fresh", Situation("crash", PANE, record=r(**STALE)),
     ("fresh", "the Claude that crashed recorded no conversation", None)),
    ("crash: no session, stale record it was launched to resume",
     Situation("crash", PANE, record=r(**STALE), launched=REC), ("resume", REC, None)),
    ("crash: no session, stale overflowed record it resumed",
     Situation("crash", PANE, record=r(overflowed=True, **STALE), launched=REC), ("fresh", "filled its context", None)),
    ("crash: outside a fleet, claude-run's record", Situation("crash", None, record=r()), ("resume", REC, None)),
    ("crash: outside a fleet, nothing recorded", Situation("crash", None), ("fresh", "recorded no conversation", None)),
]  # fmt: skip


@pytest.mark.parametrize(("situation", "expected"), [row[1:] for row in ROWS], ids=[row[0] for row in ROWS])
def test_every_relaunch_is_one_decision(situation: Situation, expected: Expect) -> None:
    decision = decide(situation, has_transcript=lambda conversation: conversation != GONE)
    plan, (kind, value, claim) = decision.plan, expected
    start = situation.route == "start"
    assert decision.claim == claim
    assert plan.with_selectors == start, "the user's --resume/--continue only at a first launch"
    if kind == "resume":
        assert (plan.resume, plan.prompt, plan.with_prompt) == (value, None, False), plan
        assert plan.notes[0].startswith(f"Resuming conversation {value[:8]}..."), plan.notes
    elif kind == "continue":
        assert (plan.resume, plan.prompt, plan.session, plan.with_prompt) == (None, value, WORK, False), plan
        assert "restart" in plan.notes[0], plan.notes
    else:
        assert (plan.resume, plan.prompt, plan.with_prompt) == (None, None, start), plan
        assert value in plan.notes[0] if value else plan.notes == [], plan.notes
        if value and situation.route != "restart" and not situation.user_selects:
            assert plan.notes[0].startswith(
                f"Fleet pane '{PANE}' starting fresh: " if start else "Starting fresh: "
            )


def test_the_notes_say_whose_conversation_is_resumed() -> None:
    def note(situation: Situation) -> str:
        return decide(situation, lambda _: True).plan.notes[0]

    assert (
        note(Situation("start", PANE, s()))
        == f"Resuming conversation 3f2a9c4e... of session W (fleet pane '{PANE}')"
    )
    assert note(Situation("crash", PANE, s())) == "Resuming conversation 3f2a9c4e... of session W"
    assert (
        note(Situation("crash", PANE, record=r()))
        == f"Resuming conversation 0a1b2c3d... of fleet pane '{PANE}' (no session)"
    )
    assert note(Situation("restart", PANE, s(restart_prompt=PROMPT, overflowed=True))) == (
        "Session W asked for a restart: starting a fresh conversation that continues it (the last one filled its context)"
    )
    assert note(Situation("restart", PANE, s(restart_prompt=PROMPT))).endswith(
        "(a restart never resumes the last one)"
    )
