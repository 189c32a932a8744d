"""claude-run in a fleet pane: resume the pane's conversation (S3) only when that is safe (S9).

The pane is real: a tmux server on a private ``fleet-pytest-*`` socket with a
pane labelled ``alpha``; claude-run gets that pane's ``TMUX``/``TMUX_PANE`` and
asks tmux for its identity like any pane command.
"""

from __future__ import annotations

import json
import os
import typing as t
from pathlib import Path

import pytest
from support.claude_run import (
    DEAD_PID,
    FakeClaude,
    FleetTmux,
    make_transcript,
    read_state,
    write_state,
)
from support.fixtures import script

from claude_shepherd.supervisor.session.identity import start_token

SESSION_ID = "3f2a9c4e-1111-2222-3333-444455556666"


@pytest.fixture
def pane_session(workdir: Path, fleet_tmux: FleetTmux) -> t.Callable[..., Path]:
    """Seed a session bound to the pane whose owner died when the fleet stopped."""

    def seed(**fields: t.Any) -> Path:
        session = workdir / "sessions" / "2026_11_22_PANE"
        state = {
            "pid": DEAD_PID,
            "pidStart": "old-boot:1",
            "skill": "implement",
            "lifecycle": "active",
            "overflowed": False,
            "killRequested": False,
            "fleetPaneId": fleet_tmux.pane_id,
            "sessionId": SESSION_ID,
            "currentPhase": "Phase 2: Build",
        }
        state.update(fields)
        write_state(session, state)
        return session

    return seed


@pytest.fixture
def resumable(pane_session: t.Callable[..., Path], run_env: dict[str, str], workdir: Path) -> Path:
    """The pane's session (its owner died when the fleet stopped) and the transcript of its conversation."""
    session = pane_session()
    make_transcript(Path(run_env["CLAUDE_CONFIG_DIR"]), workdir, SESSION_ID)
    return session


def resume_arg(argv: list[str]) -> str | None:
    return argv[argv.index("--resume") + 1] if "--resume" in argv else None


def test_s3_fleet_restart_resumes_the_panes_conversation(
    fake: FakeClaude, start_run, fleet_tmux: FleetTmux, resumable: Path, tmp_path: Path
) -> None:
    session = resumable
    go = tmp_path / "go"
    fake.plan([{"mark": "ready"}, {"wait_file": str(go)}, {"exit": 0}])
    run = start_run("--model", "opus", "start the docs session", pane=fleet_tmux)
    fake.wait_event("mark", name="ready")
    (start,) = fake.starts()
    assert resume_arg(start["argv"]) == SESSION_ID
    assert "--model" in start["argv"]
    assert "start the docs session" not in start["argv"], (
        "a resumed conversation gets no initial prompt again"
    )
    state = read_state(session)
    assert state["pid"] == run.pid and state["pidStart"] == start_token(run.pid), "claimed by us, not pid 0"
    assert state["lifecycle"] == "resuming"
    go.touch()
    assert run.wait() == 0
    assert f"Fleet pane ID: {fleet_tmux.pane_id}" in run.text
    assert "Resuming conversation 3f2a9c4e... of session 2026_11_22_PANE" in run.text


def _runs_fresh(fake: FakeClaude, start_run, fleet_tmux: FleetTmux, run_env: dict[str, str], workdir: Path):
    """Run once in the pane beside a resumable transcript; the launch must not resume it."""
    make_transcript(Path(run_env["CLAUDE_CONFIG_DIR"]), workdir, SESSION_ID)
    fake.plan([{"exit": 0}])
    run = start_run(pane=fleet_tmux)
    assert run.wait() == 0
    (start,) = fake.wait_starts(1)
    assert resume_arg(start["argv"]) is None
    return run


def test_s9_an_overflowed_session_starts_fresh(
    fake: FakeClaude, start_run, fleet_tmux: FleetTmux, pane_session, run_env: dict[str, str], workdir: Path
) -> None:
    session = pane_session(overflowed=True)
    run = _runs_fresh(fake, start_run, fleet_tmux, run_env, workdir)
    assert (
        "starting fresh: the last conversation of session 2026_11_22_PANE filled its context, so it is not resumed"
        in run.text
    )
    assert read_state(session)["pid"] == DEAD_PID, "a session we do not resume is not claimed"


def test_an_overflowed_session_with_a_pending_restart_continues_with_its_prompt(
    fake: FakeClaude, start_run, fleet_tmux: FleetTmux, pane_session
) -> None:
    prompt = '/session continue --session sessions/2026_11_22_PANE --skill implement --phase "Phase 2: Build"'
    session = pane_session(overflowed=True, killRequested=True, restartPrompt=prompt)
    fake.plan([{"exit": 0}])
    run = start_run(pane=fleet_tmux)
    assert run.wait() == 0
    (start,) = fake.wait_starts(1)
    assert resume_arg(start["argv"]) is None and prompt in start["argv"]
    state = read_state(session)
    assert state["lifecycle"] == "restarting" and state["killRequested"] is False
    assert "restartPrompt" not in state and state["pid"] == run.pid


def test_resume_of_a_missing_transcript_starts_fresh_with_a_reason(
    fake: FakeClaude, start_run, fleet_tmux: FleetTmux, pane_session
) -> None:
    pane_session()
    fake.plan([{"exit": 0}])
    run = start_run(pane=fleet_tmux)
    assert run.wait() == 0
    (start,) = fake.wait_starts(1)
    assert resume_arg(start["argv"]) is None
    assert (
        "starting fresh: Claude no longer has conversation 3f2a9c4e... of session 2026_11_22_PANE (no transcript under"
        in run.text
    )


@pytest.mark.usefixtures("resumable")
def test_a_refused_fleet_resume_is_retried_once_fresh(
    fake: FakeClaude, start_run, fleet_tmux: FleetTmux
) -> None:
    fake.plan({"resume": "refuse", "steps": []}, [{"exit": 0}])
    run = start_run("the layout's prompt", pane=fleet_tmux)
    assert run.wait() == 0
    first, second = fake.wait_starts(2)
    assert resume_arg(first["argv"]) == SESSION_ID and resume_arg(second["argv"]) is None
    assert "the layout's prompt" not in first["argv"] and "the layout's prompt" in second["argv"], (
        "the resume gets no prompt again; the fresh conversation that replaces it does"
    )
    assert (
        f"Claude refused to resume the conversation (--resume {SESSION_ID[:8]}...: it exited with status 1 after"
        in run.text
    )
    assert len(fake.starts()) == 2


@pytest.mark.usefixtures("resumable")
def test_a_restart_requested_soon_after_a_resume_is_a_restart_not_a_refused_resume(
    fake: FakeClaude, start_run, fleet_tmux: FleetTmux
) -> None:
    """The original's 5-second heuristic took this for a stale resume and dropped the restart (R5)."""
    fake.plan(
        [
            {"session": ["activate", "sessions/2026_11_22_PANE", "implement"]},
            {"session": ["restart", "sessions/2026_11_22_PANE"], "env": {"WATCHDOG_PID": None}},
            {"exit": 1},
        ],
        [{"exit": 0}],
    )
    run = start_run(pane=fleet_tmux)
    assert run.wait() == 0
    first, second = fake.wait_starts(2)
    assert resume_arg(first["argv"]) == SESSION_ID
    assert resume_arg(second["argv"]) is None
    assert any(a.startswith("/session continue --session") for a in second["argv"])
    assert "refused" not in run.text


def test_a_session_held_by_a_live_agent_is_not_resumed(
    fake: FakeClaude, start_run, fleet_tmux: FleetTmux, pane_session, run_env: dict[str, str], workdir: Path
) -> None:
    session = pane_session(pid=os.getpid(), pidStart=start_token(os.getpid()))
    run = _runs_fresh(fake, start_run, fleet_tmux, run_env, workdir)
    assert f"is in use by another running agent (supervisor PID {os.getpid()})" in run.text
    assert read_state(session)["pid"] == os.getpid()


def test_a_pane_that_never_activated_a_session_resumes_its_own_conversation(
    fake: FakeClaude, start_run, fleet_tmux: FleetTmux, workdir: Path
) -> None:
    """Claude printed `claude --resume <id>`; the pane's next start must not lose that conversation."""
    conversation = "0a1b2c3d-0000-4000-8000-00000000beef"
    hook_input = json.dumps(
        {
            "session_id": conversation,
            "cwd": str(workdir),
            "hook_event_name": "SessionStart",
            "source": "startup",
        }
    )
    fake.plan(
        [
            {"run": [script("claude-hook"), "session-start"], "stdin": hook_input},
            {"transcript": conversation},
            {"exit": 0},
        ],
        [{"exit": 0}],
    )
    first = start_run("the layout's prompt", pane=fleet_tmux)
    assert first.wait() == 0
    second = start_run("the layout's prompt", pane=fleet_tmux)
    assert second.wait() == 0
    one, two = fake.wait_starts(2)
    assert resume_arg(one["argv"]) is None and "the layout's prompt" in one["argv"]
    assert resume_arg(two["argv"]) == conversation and "the layout's prompt" not in two["argv"]
    assert (
        f"Resuming conversation {conversation[:8]}... of fleet pane '{fleet_tmux.pane_id}' (no session)"
        in second.text
    )


def test_a_pane_conversation_that_reached_the_threshold_starts_fresh(
    fake: FakeClaude, start_run, fleet_tmux: FleetTmux, workdir: Path
) -> None:
    conversation = "0a1b2c3d-0000-4000-8000-00000000cafe"
    status = json.dumps(
        {
            "session_id": conversation,
            "cwd": str(workdir),
            "cost": {"total_cost_usd": 0.1},
            "context_window": {"used_percentage": 80, "context_window_size": 200000},
        }
    )
    fake.plan(
        [
            {"run": [script("claude-hook"), "status-line"], "stdin": status},
            {"transcript": conversation},
            {"exit": 0},
        ],
        [{"exit": 0}],
    )
    assert start_run(pane=fleet_tmux).wait() == 0
    second = start_run(pane=fleet_tmux)
    assert second.wait() == 0
    _, two = fake.wait_starts(2)
    assert resume_arg(two["argv"]) is None
    assert "filled its context, so it is not resumed" in second.text


def test_the_resumed_claude_makes_the_session_active_again(
    fake: FakeClaude, start_run, fleet_tmux: FleetTmux, resumable: Path, workdir: Path, tmp_path: Path
) -> None:
    """``resuming`` is the moment before Claude starts: its SessionStart hook ends it."""
    session = resumable
    go = tmp_path / "go"
    hook_input = json.dumps({"session_id": SESSION_ID, "cwd": str(workdir), "source": "resume"})
    fake.plan([{"run": [script("claude-hook"), "session-start"], "stdin": hook_input}, {"mark": "ready"},
               {"wait_file": str(go)}, {"exit": 0}])  # fmt: skip
    run = start_run(pane=fleet_tmux)
    fake.wait_event("mark", name="ready")
    assert resume_arg(fake.starts()[0]["argv"]) == SESSION_ID
    state = read_state(session)
    assert (state["lifecycle"], state["pid"]) == ("active", run.pid)
    go.touch()
    assert run.wait() == 0
