"""The first launch in a fleet pane, decided from the pane's session state (no processes needed)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from claude_shepherd.supervisor.claude_run.launch_plan import Owner, fleet_start
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
    plan = fleet_start(root, me, PANE, tmp_path, {})
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
    plan = fleet_start(root, Owner(os.getpid(), start_token(os.getpid())), PANE, tmp_path, {})
    assert plan.resume is None and plan.prompt is None
    assert any("filled its context" in note for note in plan.notes)


def test_a_restart_request_is_taken_only_from_a_proven_owner(tmp_path: Path) -> None:
    """A bash-era state naming our PID but no start token may be a reused PID: not ours to restart."""
    from claude_shepherd.supervisor.claude_run.launch_plan import take_restart

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
    taken = take_restart(root, me)
    assert taken is not None and taken.session == ours and read_state(ours)["lifecycle"] == "restarting"


# --------------------------------------------------------------------------- the decision alone (no processes, no files)

from claude_shepherd.supervisor.claude_run.launch_plan import decide  # noqa: E402

ME = Owner(4242, "boot:1")
SESSION = Path("/p/sessions/2026_11_22_WORK")


def _decide(
    state: dict, *, running: bool = False, transcript: bool = True, restart: bool = True
) -> tuple[str, dict]:
    state = dict(state)
    decision = decide(
        state, ME, SESSION, owner_running=running, has_transcript=lambda _: transcript, allow_restart=restart
    )
    return decision.kind, state


def test_the_resume_decision_is_a_function_of_the_state_and_the_facts() -> None:
    base = {
        "pid": 999,
        "pidStart": "boot:7",
        "skill": "implement",
        "lifecycle": "active",
        "sessionId": "3f2a9c4e-1111-2222-3333-444455556666",
    }
    assert _decide(base, running=True)[0] == "busy"
    kind, state = _decide(base)
    assert kind == "resume" and state["pid"] == ME.pid and state["lifecycle"] == "resuming"
    assert _decide(base, transcript=False)[0] == "no-transcript"
    assert _decide(dict(base, overflowed=True))[0] == "overflowed"
    assert _decide(dict(base, killRequested=True))[0] == "killed"
    assert _decide(dict(base, sessionId="--dangerously-skip-permissions"))[0] == "no-id"
    kind, state = _decide(dict(base, killRequested=True, restartPrompt="/session continue"))
    assert kind == "restart" and state["lifecycle"] == "restarting" and "restartPrompt" not in state
    assert (
        _decide(dict(base, killRequested=True, restartPrompt="/session continue"), restart=False)[0]
        == "killed"
    )
    kind, state = _decide(dict(base, lifecycle="completed"))
    assert kind == "resume" and state["lifecycle"] == "completed", "a finished session keeps its gate engaged"
