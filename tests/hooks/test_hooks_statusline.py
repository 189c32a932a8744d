"""The status line and SessionStart binding (seed 002 §6 statusline.sh, R1; original-system §3.5, §4.7)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from support.fixtures import script
from support.hooks import activate, call, hook_env, run, set_fields, state
from support.waiting import wait_until

from claude_shepherd.hooks.statusline import shown_percent
from claude_shepherd.supervisor.session.fields import F, Lifecycle

SID = "0b1b7cc9-6911-4d5b-9a77-b8d720a2c2c5"


@pytest.fixture
def env(project: Path) -> dict[str, str]:
    return hook_env(project)


def status(
    project: Path,
    pct: object = 42,
    cost: object = 1.5,
    sid: object = SID,
    size: object = 200_000,
    **extra: object,
) -> dict:
    """The status line's stdin (reference §4)."""
    return {
        "session_id": sid,
        "transcript_path": "/t.jsonl",
        "cwd": str(project),
        "model": {"id": "claude-sonnet-4-5", "display_name": "Sonnet 4.5"},
        "workspace": {"current_dir": str(project), "project_dir": str(project), "added_dirs": []},
        "version": "2.1.328",
        "cost": {"total_cost_usd": cost, "total_duration_ms": 1},
        "context_window": {
            "total_input_tokens": 1,
            "context_window_size": size,
            "current_usage": None,
            "used_percentage": pct,
            "remaining_percentage": None,
        },
        **extra,
    }


def line(project: Path, env: dict[str, str], **kw: object) -> str:
    return call("status-line", status(project, **kw), env).stdout.strip()


# --------------------------------------------------------------------------- binding


def test_binds_session_id_usage_window_and_heartbeat(project: Path, env: dict[str, str]) -> None:
    session_dir = activate(project)
    line(project, env)
    after = state(session_dir)
    assert after[F.SESSION_ID] == SID
    assert after[F.CONTEXT_USAGE] == pytest.approx(0.42)
    assert after[F.CONTEXT_WINDOW_SIZE] == 200_000
    assert after[F.LAST_HEARTBEAT].endswith("Z") and after[F.CONTEXT_USAGE_AT].endswith("Z")


@pytest.mark.parametrize(
    "fields", [{"killRequested": True}, {"overflowed": True}, {"lifecycle": Lifecycle.DEHYDRATING}]
)
def test_session_id_not_resurrected(project: Path, env: dict[str, str], fields: dict) -> None:
    """R1: never write sessionId during a restart, after overflow or while dehydrating."""
    session_dir = activate(project, sessionId="old-id", **fields)
    line(project, env, pct=85)
    after = state(session_dir)
    assert after[F.SESSION_ID] == "old-id"
    assert after[F.CONTEXT_USAGE] == pytest.approx(0.85)  # usage still recorded


def test_session_id_not_written_after_restart_deleted_it(
    project: Path, env: dict[str, str], run_session
) -> None:
    session_dir = activate(project, contextUsage=0.8)
    line(project, env)
    assert state(session_dir)[F.SESSION_ID] == SID
    assert run_session("restart", "sessions/2026_11_22_TOPIC").returncode == 0
    line(project, env)
    assert F.SESSION_ID not in state(session_dir)


@pytest.mark.parametrize("bad", [None, "42", -3, True, float("nan"), {"x": 1}])
def test_unknown_percentage_keeps_the_stored_value(project: Path, env: dict[str, str], bad: object) -> None:
    """A null (startup) or garbage percentage is unknown, not 0: it must not lift the overflow gate."""
    session_dir = activate(project, contextUsage=0.9)
    shown = line(project, env, pct=bad, size="big")
    assert state(session_dir)[F.CONTEXT_USAGE] == 0.9
    assert F.CONTEXT_WINDOW_SIZE not in state(session_dir)
    assert shown.endswith("100%")  # drawn from the stored value
    assert call("pre-tool-use", {"tool_name": "Grep", "tool_input": {}, "cwd": str(project)}, env).denied


def test_missing_context_window_entirely(project: Path, env: dict[str, str]) -> None:
    session_dir = activate(project, contextUsage=0.38)
    payload = status(project)
    del payload["context_window"]
    assert call("status-line", payload, env).stdout.strip().endswith("50%")
    assert state(session_dir)[F.CONTEXT_USAGE] == 0.38


def test_pid_claim_only_in_a_fleet_pane(project: Path, env: dict[str, str]) -> None:
    session_dir = activate(project)
    before = state(session_dir)
    line(project, env)
    assert state(session_dir)[F.PID] == before[F.PID] == os.getpid()  # preserved when it matches


def _status_line_in_pane(
    tmux: list[str], pane: str, env: dict[str, str], stdin: Path, out: Path, supervisor: bool
) -> str:
    """Run the real ``claude-hook status-line`` inside *pane*, as Claude would there; its stdout.

    With *supervisor*, the pane's own process plays claude-run: it exports its PID as
    ``CLAUDE_SUPERVISOR_PID`` before the hook runs under it.
    """
    env = {k: v for k, v in env.items() if k != "CLAUDE_SUPERVISOR_PID"}
    export = "export CLAUDE_SUPERVISOR_PID=$$; " if supervisor else ""
    inner = f"{export}{shlex.quote(script('claude-hook'))} status-line < {shlex.quote(str(stdin))} > {out}.tmp; mv {out}.tmp {out}"
    command = "exec " + shlex.join(["env", "-i", *(f"{k}={v}" for k, v in env.items()), "sh", "-c", inner])
    subprocess.run([*tmux, "respawn-pane", "-k", "-t", pane, command], check=True)
    wait_until(out.exists, 30, "the status line to run in the pane")
    return out.read_text()


def test_pid_claimed_for_this_supervisor_in_a_fleet_pane(project: Path, tmp_path: Path) -> None:
    """A fleet-resumed session (owner dead) is claimed by the pane's new supervisor on the first render."""
    socket = tmp_path / "tmux" / "fleet-test"
    socket.parent.mkdir()
    tmux = ["tmux", "-S", str(socket), "-f", "/dev/null"]
    try:
        subprocess.run([*tmux, "new-session", "-d", "-s", "crew", "-n", "agents", "sleep 60"], check=True)
        pane = subprocess.run(
            [*tmux, "display-message", "-p", "-t", "crew:agents", "#{pane_id}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        subprocess.run([*tmux, "set-option", "-p", "-t", pane, "@pane_label", "SDK"], check=True)
        subprocess.run([*tmux, "set-option", "-p", "-t", pane, "remain-on-exit", "on"], check=True)
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        session_dir = activate(project, pid=dead.pid, fleetPaneId="crew:agents:SDK")
        stdin = tmp_path / "status.json"
        stdin.write_text(json.dumps(status(project)))
        env = hook_env(project, TMUX=f"{socket},1,0", TMUX_PANE=pane)
        # From outside the pane, its TMUX_PANE is only a claim: nothing is claimed.
        assert line(project, env).startswith("No session")
        assert state(session_dir)[F.PID] == dead.pid
        shown = _status_line_in_pane(tmux, pane, env, stdin, tmp_path / "out1", supervisor=True)
        pane_pid = int(
            subprocess.run(
                [*tmux, "display-message", "-p", "-t", pane, "#{pane_pid}"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        after = state(session_dir)
        assert after[F.PID] == pane_pid and after[F.PID_START]  # (the pane process has exited since)
        assert after[F.SESSION_ID] == SID and shown.startswith("TOPIC · implement")
        set_fields(session_dir, pid=dead.pid, pidStart=None)
        _status_line_in_pane(tmux, pane, env, stdin, tmp_path / "out2", supervisor=False)
        assert state(session_dir)[F.PID] == dead.pid  # never claimed for the hook's own parent shell
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


# --------------------------------------------------------------------------- display


def test_display_with_session(project: Path, env: dict[str, str]) -> None:
    activate(project, name="2026_02_07_TEST_STATUS", currentPhase="3: Strategy")
    assert line(project, env, pct=38, cost=1.5) == "TEST_STATUS · implement · 3. Strategy · $1.50 · 50%"


def test_display_with_declared_phases_and_agent(project: Path, env: dict[str, str]) -> None:
    phases = [
        {"major": 1, "minor": 0, "name": "Setup"},
        {"major": 2, "minor": 0, "name": "Build"},
        {"major": 2, "minor": 1, "name": "Tests"},
        {"major": 5, "minor": 0, "name": "Ship"},
    ]
    activate(project, name="PLAIN_NAME", phases=phases, currentPhase="2.1: Tests")
    shown = line(project, env, pct=0, cost=0.1234, agent={"name": "builder"})
    assert shown == "PLAIN_NAME · implement · [2.1/5] Tests · builder · $0.12 · 0%"


def test_a_phase_written_into_the_state_cannot_put_escapes_on_the_terminal(
    project: Path, env: dict[str, str]
) -> None:
    """`session phase` refuses such labels; a state file changed another way is still shown as text."""
    activate(project, name="2026_02_07_ESC", currentPhase="3: \x1b]52;c;cm0gLXJmIH4=\x07Build\u202e\tx")
    assert (
        line(project, env, pct=38, cost=1.5)
        == "ESC · implement · 3. \ufffd]52;c;cm0gLXJmIH4=\ufffdBuild\ufffd x · $1.50 · 50%"
    )


def test_display_without_session(project: Path, env: dict[str, str]) -> None:
    assert line(project, env, pct=None, cost=None) == "No session · $— · ?%", "unknown, never 0"
    assert line(project, env, pct=38, cost=1.5) == "No session · $1.50 · 50%"
    assert line(project, env, pct=None, cost=None) == "No session · $1.50 · ?%", "the agent's, measured"


@pytest.mark.parametrize(
    "pct, shown",
    [
        (0, "0%"),
        (38, "50%"),
        (50, "66%"),
        (75, "99%"),
        (76, "100%"),
        (85, "100%"),
        (100, "100%"),
        (250, "100%"),
    ],
)
def test_percent_relative_to_threshold_capped(
    project: Path, env: dict[str, str], pct: int, shown: str
) -> None:
    assert line(project, env, pct=pct).endswith(f" · {shown}")


def test_percent_uses_configured_threshold() -> None:
    assert shown_percent(0.25, 0.5) == "50%" and shown_percent(None, 0.76) == "?%"


@pytest.mark.parametrize("raw", [b"", b"garbage", b"[]", b'{"cost": "x", "context_window": 5}', b"\xff\xfe"])
def test_garbage_input_still_draws_a_line(project: Path, env: dict[str, str], raw: bytes) -> None:
    shown = call("status-line", raw, env).stdout
    assert shown.startswith("No session · $— · ") and shown.count("\n") <= 1


def test_status_line_as_a_real_process(project: Path, env: dict[str, str]) -> None:
    session_dir = activate(project, name="2026_11_22_REAL", currentPhase="1: Setup")
    done = run("status-line", status(project, pct=76), env, cwd=project)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "REAL · implement · 1. Setup · $1.50 · 100%\n"
    assert state(session_dir)[F.SESSION_ID] == SID


# --------------------------------------------------------------------------- SessionStart


def start(project: Path, sid: object = "new-id", source: str = "startup") -> dict:
    return {
        "session_id": sid,
        "transcript_path": "/t.jsonl",
        "cwd": str(project),
        "hook_event_name": "SessionStart",
        "source": source,
    }


@pytest.mark.parametrize("source", ["startup", "resume", "clear", "compact"])
def test_session_start_binds_the_conversation(project: Path, env: dict[str, str], source: str) -> None:
    session_dir = activate(project, sessionId="before")
    assert call("session-start", start(project, source=source), env).stdout == ""
    assert state(session_dir)[F.SESSION_ID] == "new-id"


@pytest.mark.parametrize(
    "fields", [{"killRequested": True}, {"overflowed": True}, {"lifecycle": Lifecycle.DEHYDRATING}]
)
def test_session_start_respects_the_r1_guard(project: Path, env: dict[str, str], fields: dict) -> None:
    session_dir = activate(project, sessionId="before", lastHeartbeat="2026-01-01T00:00:00Z", **fields)
    before = state(session_dir)
    call("session-start", start(project), env)
    assert state(session_dir) == before  # not even a heartbeat write


@pytest.mark.parametrize("sid", [None, "", 5, "has space", "x" * 500, "bad\nline"])
def test_session_start_ignores_odd_ids(project: Path, env: dict[str, str], sid: object) -> None:
    session_dir = activate(project, sessionId="before")
    assert call("session-start", start(project, sid=sid), env).stdout == ""
    assert state(session_dir)[F.SESSION_ID] == "before"


def test_session_start_without_session_or_input(project: Path, env: dict[str, str]) -> None:
    assert call("session-start", start(project), env).stdout == ""
    assert call("session-start", b"nonsense", env).stdout == ""


def test_session_start_as_a_real_process(project: Path, env: dict[str, str]) -> None:
    session_dir = activate(project)
    done = run("session-start", json.dumps(start(project, sid=SID)), env, cwd=project)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert state(session_dir)[F.SESSION_ID] == SID


def test_outside_a_fleet_the_hooks_record_claude_runs_conversation_and_its_overflow(
    project: Path, env: dict[str, str]
) -> None:
    """What a crash of a claude-run's Claude without a session resumes (or, overflowed, does not)."""
    from claude_shepherd.supervisor.session import pane_records
    from claude_shepherd.supervisor.session.identity import start_token

    root = project / "sessions"
    where = pane_records.spot(None, (os.getpid(), start_token(os.getpid())))
    assert where is not None

    def recorded() -> dict | None:
        return pane_records.read(root, where[0], where[1])

    bare = {k: v for k, v in env.items() if k != "CLAUDE_SUPERVISOR_PID"}
    call("session-start", start(project, sid=SID), bare)
    assert recorded() is None, "only for a claude-run that said who it is"
    call("session-start", start(project, sid=SID), env)
    assert (pane_records.conversation(recorded()), recorded()["overflowed"]) == (SID, False)
    call("status-line", status(project, pct=50), env)
    assert recorded()["overflowed"] is False
    call("status-line", status(project, pct=80), env)  # past the threshold (76%)
    assert (pane_records.conversation(recorded()), recorded()["overflowed"]) == (SID, True)
    assert not (root / ".shepherd" / "panes").exists(), "no pane record outside a fleet"


@pytest.mark.parametrize("event", ["session-start", "status-line"])
def test_the_owners_resumed_claude_ends_resuming(project: Path, env: dict[str, str], event: str) -> None:
    """A resumed conversation does not activate again: its first hook says the agent runs."""
    session_dir = activate(project, lifecycle=Lifecycle.RESUMING)
    payload = start(project, sid=SID, source="resume") if event == "session-start" else status(project)
    done = run(event, json.dumps(payload), env, cwd=project)
    assert (done.returncode, done.stderr) == (0, "")
    assert state(session_dir)[F.LIFECYCLE] == Lifecycle.ACTIVE


def test_the_status_line_shows_the_agents_spend_and_counts_a_resumed_conversation_once(
    project: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """``total_cost_usd`` is the conversation's: a resume starts from the conversation's total (0.12
    at startup on the real CLI), so the agent's spend is the growth of each conversation's reading.
    A conversation never seen starts from its transcript's last ``cost-state``."""
    other = "7c1b7cc9-6911-4d5b-9a77-b8d720a2c2c5"
    shown = [line(project, env, cost=c, sid=s).split(" · ")[1] for c, s in
             [(0.06, SID), (0.12, SID), (0.12, SID), (0.18, SID), (0.03, other), (0.18, SID), (0.24, SID)]]  # fmt: skip
    assert shown == ["$0.06", "$0.12", "$0.12", "$0.18", "$0.21", "$0.21", "$0.27"]
    transcript = tmp_path / "forked.jsonl"
    transcript.write_text('{"type":"user"}\n{"type":"cost-state","totalCostUSD":0.5}\n{"type":"user"}\n')
    fork = "9d1b7cc9-6911-4d5b-9a77-b8d720a2c2c5"
    shown = [line(project, env, cost=c, sid=fork, transcript_path=str(transcript)).split(" · ")[1]
             for c in (0.5, 0.56)]  # fmt: skip
    assert shown == ["$0.27", "$0.33"], "what the conversation cost before this agent is not its spend"
