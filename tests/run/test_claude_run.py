"""claude-run end to end: real processes, a real pty, real signals, the stand-in Claude.

Each test runs ``claude-run`` on its own pty (as a tmux pane would) with a
scripted ``tests/fake_claude.py`` as Claude, then checks what Claude was
started with (its log), what claude-run printed and returned, and the session
state on disk. Every process a test starts is killed at teardown.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest
from support.claude_run import (
    DEAD_PID,
    FakeClaude,
    alive,
    claude_run_path,
    read_state,
    tagged,
    wait_until,
    write_state,
)
from support.fixtures import script

from claude_shepherd.supervisor.session import pane_records
from claude_shepherd.supervisor.session.identity import is_watchdog, start_token

CONTINUE_PROMPT = '/session continue --session {dir} --skill implement --phase "Phase 1: Setup"'


def argv_of(start: dict) -> list[str]:
    return start["argv"]


def has_resume(argv: list[str]) -> bool:
    return "--resume" in argv or "-r" in argv or any(a.startswith("--resume=") for a in argv)


# --------------------------------------------------------------------------- S1


def test_s1_starts_claude_with_the_environment_contract_and_exits_with_its_status(
    fake: FakeClaude, start_run, workdir: Path, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    fake.plan(
        [
            {"session": ["activate", "sessions/S1", "implement"]},
            {"mark": "ready"},
            {"wait_file": str(go), "timeout": 10},
            {"exit": 0},
        ]
    )
    run = start_run("--model", "opus")
    fake.wait_event("mark", name="ready")
    start = fake.starts()[0]
    env = start["env"]
    assert env["CLAUDE_SUPERVISOR_PID"] == str(run.pid)
    assert env["SESSION_REQUIRED"] == "1"
    assert env["CLAUDE_SESSIONS_DIR"] == str(workdir / "sessions")
    watchdog = int(env["WATCHDOG_PID"])
    assert is_watchdog(watchdog), "WATCHDOG_PID must name a running watchdog"
    assert psutil.Process(watchdog).ppid() == run.pid
    assert os.getpgid(watchdog) != os.getpgid(run.pid), "Ctrl-C must not reach the watchdog"
    # The agent's Bash tool finds the session command of this installation (and not our python).
    found = shutil.which("session", path=env["PATH"])
    assert found and os.path.samefile(found, Path(claude_run_path()).with_name("session"))
    assert shutil.which("python", path=env["PATH"]) != str(Path(claude_run_path()).with_name("python"))
    # Claude runs in the terminal's foreground, in the supervisor's process group.
    assert start["foreground"] is True
    assert start["pgid"] == os.getpgid(run.pid) and start["ppid"] == run.pid
    assert argv_of(start)[-2:] == ["--model", "opus"]
    assert not has_resume(argv_of(start))
    # `session activate` run by the agent recorded the supervisor as the owner.
    state = read_state(workdir / "sessions" / "S1")
    assert state["pid"] == run.pid and state["pidStart"] == start_token(run.pid)
    go.touch()
    assert run.wait() == 0
    assert "[claude-run] Starting..." in run.text and "[claude-run] Goodbye." in run.text
    assert len(fake.starts()) == 1
    wait_until(lambda: not alive(watchdog), 3, "the watchdog to exit with its Claude")


def test_the_watchdog_is_forked_and_nothing_loads_psutil_until_a_kill(
    fake: FakeClaude, start_run, tmp_path: Path
) -> None:
    """A fleet runs a claude-run and a watchdog per pane, and most never kill anything: no second
    interpreter, and psutil (a C extension: it shows in the memory map) only once there is a tree to kill."""
    go = tmp_path / "go"
    fake.plan(
        [
            {"session": ["activate", "sessions/S1", "implement"]},
            {"mark": "ready"},
            {"wait_file": str(go), "timeout": 10},
            {"session": ["restart", "sessions/S1"]},
            {"wait": 30},
        ],
        [{"exit": 0}],
    )
    run = start_run()
    fake.wait_event("mark", name="ready")
    watchdog = int(fake.starts()[0]["env"]["WATCHDOG_PID"])
    assert Path(f"/proc/{watchdog}/comm").read_text().strip() == "claude-watchdog"
    assert Path(f"/proc/{watchdog}/exe").resolve() == Path(f"/proc/{run.pid}/exe").resolve()
    for pid in (run.pid, watchdog):
        assert "psutil" not in Path(f"/proc/{pid}/maps").read_text()
    go.touch()
    assert run.wait() == 0
    assert len(fake.starts()) == 2, "the restart went through the forked watchdog"


def test_agent_description_and_focus_are_appended_to_the_system_prompt_on_every_launch(
    fake: FakeClaude, start_run, run_env: dict[str, str]
) -> None:
    agents = Path(run_env["CLAUDE_CONFIG_DIR"]) / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text("You review code.\n")
    fake.plan([{"exit": 7}], [{"exit": 0}])
    run = start_run("--agent", "reviewer", "--description", "Reviews PRs", "--focus", "tests", "--verbose")
    assert run.wait() == 0
    assert "Loaded agent 'reviewer'" in run.text and "Starting (agent: reviewer)" in run.text
    for start in fake.wait_starts(2):
        argv = argv_of(start)
        prompt = argv[argv.index("--append-system-prompt") + 1]
        assert prompt == "Agent Description: Reviews PRs\nFocus Areas: tests\n\nYou review code."
        assert "--verbose" in argv and "--agent" not in argv


# --------------------------------------------------------------------------- S4 / S6


def test_s4_restart_after_dehydrate_relaunches_fresh_with_the_continuation_prompt(
    fake: FakeClaude, start_run, workdir: Path
) -> None:
    fake.plan(
        [
            {"session": ["activate", "sessions/S4", "implement"]},
            {"session": ["dehydrate", "sessions/S4"], "stdin": "# Handover\nwhere we are\n"},
            {"wait": 10},
        ],
        [{"exit": 0}],
    )
    run = start_run("--model", "opus", "fix the bug")
    assert run.wait() == 0
    first, second = fake.wait_starts(2)
    assert argv_of(first)[-3:] == ["fix the bug", "--model", "opus"]
    assert fake.events("signal")[0]["sig"] == "TERM", "the watchdog ended the first Claude"
    argv = argv_of(second)
    assert CONTINUE_PROMPT.format(dir=workdir / "sessions" / "S4") in argv
    assert not has_resume(argv)
    assert "--model" in argv and "opus" in argv, "the user's arguments are passed on restarts too"
    assert "fix the bug" not in argv, "the first task is not sent again"
    assert (workdir / "sessions" / "S4" / "DEHYDRATED_CONTEXT.md").exists()
    state = read_state(workdir / "sessions" / "S4")
    assert state["lifecycle"] == "restarting" and state["killRequested"] is False
    assert "restartPrompt" not in state and state["pid"] == run.pid
    assert "Session S4 asked for a restart: starting a fresh conversation that continues it" in run.text
    assert "Goodbye." in run.text
    assert not any(word in run.text for word in ("killRequested", "sessionId", "Looping")), "words for people"


def test_s6_restart_never_resumes_even_with_a_resurrected_session_id(
    fake: FakeClaude, start_run, workdir: Path, run_env: dict[str, str]
) -> None:
    session = workdir / "sessions" / "S6"
    fake.plan(
        [
            {"session": ["activate", "sessions/S6", "implement"]},
            {"state": {"dir": str(session), "set": {"overflowed": True}}},
            {"session": ["restart", "sessions/S6"], "env": {"WATCHDOG_PID": None}},
            # R1: a status line tick writes the conversation id back after the restart deleted it.
            {"state": {"dir": str(session), "set": {"sessionId": "0b9d6f4e-resurrected"}}},
            {"transcript": "0b9d6f4e-resurrected"},
            {"exit": 0},
        ],
        [{"exit": 0}],
    )
    run = start_run()
    assert run.wait() == 0
    _, second = fake.wait_starts(2)
    assert not has_resume(argv_of(second))
    assert CONTINUE_PROMPT.format(dir=session) in argv_of(second)
    assert (
        "Session S6 asked for a restart: starting a fresh conversation that continues it "
        "(the last one filled its context)" in run.text
    )


def test_a_restart_request_is_not_lost_when_claude_exits_quickly_with_an_error(
    fake: FakeClaude, start_run, workdir: Path
) -> None:
    fake.plan(
        [
            {"session": ["activate", "sessions/Q", "implement"]},
            {"session": ["restart", "sessions/Q"], "env": {"WATCHDOG_PID": None}},
            {"exit": 1},
        ],
        [{"exit": 0}],
    )
    run = start_run()
    assert run.wait() == 0
    _, second = fake.wait_starts(2)
    assert CONTINUE_PROMPT.format(dir=workdir / "sessions" / "Q") in argv_of(second)
    assert "crash" not in run.text


def test_restart_requests_of_other_supervisors_sessions_are_not_taken(
    fake: FakeClaude, start_run, workdir: Path
) -> None:
    other = subprocess.Popen(["sleep", "30"])
    try:
        prompt = '/session continue --session x --skill implement --phase "P"'
        live = {"pid": other.pid, "pidStart": start_token(other.pid), "skill": "implement",
                "lifecycle": "active", "killRequested": True, "restartPrompt": prompt}  # fmt: skip
        dead = dict(live, pid=DEAD_PID, pidStart="gone:1")
        write_state(workdir / "sessions" / "LIVE", live)
        write_state(workdir / "sessions" / "DEAD", dead)
        fake.plan([{"exit": 0}])
        run = start_run()
        assert run.wait() == 0
        assert len(fake.starts()) == 1 and "Goodbye." in run.text
        assert read_state(workdir / "sessions" / "LIVE") == live
        assert read_state(workdir / "sessions" / "DEAD") == dead
    finally:
        other.kill()
        other.wait()


# --------------------------------------------------------------------------- watchdog


def test_watchdog_ends_claudes_whole_tree_including_term_ignorers_and_setsid_grandchildren(
    fake: FakeClaude, start_run, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    fake.plan(
        [
            {"on_signal": {"TERM": "ignore"}},
            {"spawn": {"setsid": True, "ignore_term": True, "depth": 2}},
            {"spawn": {"setsid": True}},
            {"spawn": {"setsid": False, "ignore_term": True}},
            {"session": ["activate", "sessions/W", "implement"]},
            {"mark": "ready"},
            {"wait_file": str(go)},
            {"session": ["restart", "sessions/W"]},
            {"wait": None},
        ],
        [{"exit": 0}],
    )
    run = start_run()
    fake.wait_event("mark", name="ready")
    claude = psutil.Process(fake.starts()[0]["pid"])
    tree = [claude, *claude.children(recursive=True)]
    helpers = [p for p in tree if "--fake-claude-helper" in p.cmdline()]
    assert len(helpers) == 4, "three helpers and one grandchild of a helper"
    assert any(os.getsid(p.pid) != os.getsid(claude.pid) for p in helpers)
    tokens = {p.pid: start_token(p.pid) for p in tree}
    go.touch()
    assert run.wait() == 0
    assert len(fake.starts()) == 2
    left = [pid for pid, token in tokens.items() if alive(pid, token)]
    assert left == [], f"processes of the old Claude's tree still running: {left}"


def test_watchdog_dies_when_the_supervisor_is_killed(fake: FakeClaude, start_run) -> None:
    fake.plan([{"mark": "ready"}, {"wait": None}])
    run = start_run()
    fake.wait_event("mark", name="ready")
    watchdog = int(fake.starts()[0]["env"]["WATCHDOG_PID"])
    token = start_token(watchdog)
    assert alive(watchdog, token)
    os.kill(run.pid, signal.SIGKILL)
    run.wait()
    wait_until(lambda: not alive(watchdog, token), 3, "the watchdog to die with its supervisor")


def describe(pid: int) -> str:
    """What a process is, for a failure message: its status, parent and command line."""
    try:
        proc = psutil.Process(pid)
        return f"[{proc.status()}, parent {proc.ppid()}] {' '.join(proc.cmdline())[:120]}"
    except psutil.Error:
        return "[gone]"


def claudes_processes(fake: FakeClaude, claude_pid: int) -> dict[int, str | None]:
    """PID → start token of the stand-in Claude, its whole tree and the daemons it double-forked."""
    claude = psutil.Process(claude_pid)
    pids = [claude.pid, *(p.pid for p in claude.children(recursive=True))]
    pids += [e["child"] for e in fake.events("spawned") if e.get("daemon")]
    return {pid: start_token(pid) for pid in pids}


def test_a_killed_supervisor_takes_claude_and_everything_claude_started_with_it(
    fake: FakeClaude, start_run
) -> None:
    """The OOM killer's SIGKILL gives claude-run no chance to clean up: its watchdog must."""
    fake.plan(
        [
            {"on_signal": {"TERM": "ignore", "HUP": "ignore"}},  # the terminal's hang-up does not end it
            {"spawn": {"setsid": True, "ignore_term": True, "depth": 2}},
            {"spawn": {"setsid": True}},
            {"spawn": {"setsid": False}},
            {"spawn": {"daemon": True}},
            {"mark": "ready"},
            {"wait": None},
        ]
    )
    run = start_run()
    fake.wait_event("mark", name="ready")
    start = fake.starts()[0]
    processes = claudes_processes(fake, start["pid"])
    assert len(processes) == 6, "Claude, four helpers (one a helper's child) and a daemon"
    watchdog = int(start["env"]["WATCHDOG_PID"])
    processes[watchdog] = start_token(watchdog)
    assert alive(watchdog, processes[watchdog]), f"the watchdog runs before the kill: {run.text}"
    os.kill(run.pid, signal.SIGKILL)
    assert run.wait() == 128 + signal.SIGKILL

    def survivors() -> str:
        left = [pid for pid, token in processes.items() if alive(pid, token)]
        return ", ".join(f"{pid} {describe(pid)}{' (watchdog)' if pid == watchdog else ''}" for pid in left)

    try:
        wait_until(
            lambda: not [pid for pid, token in processes.items() if alive(pid, token)],
            5,
            "Claude, its descendants, its daemon and the watchdog to be gone",
        )
    except AssertionError as failed:
        raise AssertionError(f"{failed}; left: {survivors()}; claude-run's terminal:\n{run.text}") from None


# --------------------------------------------------------------------------- orphans (subreaper)


def daemons(fake: FakeClaude) -> dict[int, str | None]:
    """PID → start token of every daemon the stand-in double-forked so far."""
    return {e["child"]: start_token(e["child"]) for e in fake.events("spawned") if e.get("daemon")}


def test_a_requested_restart_ends_the_old_claudes_daemons_before_the_next_launch(
    fake: FakeClaude, start_run, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    fake.plan(
        [
            {"session": ["activate", "sessions/D", "implement"]},
            {"spawn": {"daemon": True, "ignore_term": True}},
            {"spawn": {"daemon": True}},
            {"spawn": {"setsid": True}},
            {"session": ["restart", "sessions/D"]},  # SIGUSR1 to the watchdog
            {"wait": None},
        ],
        [{"mark": "second"}, {"wait_file": str(go)}, {"exit": 0}],
    )
    run = start_run()
    fake.wait_event("mark", name="second")
    old = daemons(fake)
    assert len(old) == 2
    assert [pid for pid, token in old.items() if alive(pid, token)] == [], "left running into the next launch"
    # Two, or more when a member of the old tree was still dying from the watchdog's SIGTERM.
    assert re.search(r"^\[claude-run\] Ended [2-9] leftover processes of Claude's\.$", run.text, re.M)
    go.touch()
    assert run.wait() == 0


def test_a_stopped_supervisor_leaves_no_daemon_of_claudes_behind(fake: FakeClaude, start_run) -> None:
    fake.plan([{"spawn": {"daemon": True, "ignore_term": True}}, {"mark": "ready"}, {"wait": None}])
    run = start_run()
    fake.wait_event("mark", name="ready")
    ((daemon, token),) = daemons(fake).items()
    assert psutil.Process(daemon).ppid() == run.pid, "an orphan is adopted by claude-run, not init"
    os.kill(run.pid, signal.SIGTERM)  # as fleet stop does
    assert run.wait() == 143
    assert not alive(daemon, token), "claude-run exited and left Claude's daemon running"
    assert "Ended 1 leftover process of Claude's." in run.text


def test_a_process_the_hooks_left_to_type_outlives_a_relaunch_of_claude_but_not_a_stop(
    fake: FakeClaude, start_run, tmp_path: Path
) -> None:
    """A paused agent's budget renewal (or a parked one's slot) waits, detached, for the next Claude in
    the pane: adopted by claude-run, it is let be by the sweep after a crash, and ended by a stop."""
    import sys

    marker = tmp_path / "sessions"
    (marker / ".shepherd" / "spend").mkdir(parents=True)  # where it keeps its lock
    args = ["/nowhere", "%1", f"{time.time() + 3600:.3f}", str(marker), "a:b:c", "day"]
    leave = ("import os, sys\nfrom claude_shepherd.hooks import pane_typing\n"  # as the budget gate leaves one
             "pane_typing.spawn('budget-renews', sys.argv[1:], dict(os.environ))\n")  # fmt: skip
    fake.plan(
        [{"run": [sys.executable, "-c", leave, *args]},
         {"wait_file": str(tmp_path / "go")}, {"exit": 1}],
        [{"mark": "second"}, {"wait": None}],
    )  # fmt: skip
    run = start_run()

    def adopted() -> psutil.Process | None:
        found = [
            p for p in psutil.process_iter(["cmdline", "ppid"]) if str(marker) in (p.info["cmdline"] or [])
        ]
        return found[0] if found and found[0].info["ppid"] == run.pid else None

    waiting = wait_until(adopted, 15, "the typist, adopted by claude-run")
    (tmp_path / "go").touch()  # Claude crashes; claude-run relaunches it
    fake.wait_event("mark", name="second")
    assert waiting.is_running() and "leftover" not in run.text, run.text
    os.kill(run.pid, signal.SIGTERM)  # as fleet stop does
    assert run.wait() == 143
    assert not alive(waiting.pid, start_token(waiting.pid) or "gone"), "a stop leaves nothing waiting"
    assert "Ended 1 leftover process of Claude's." in run.text


def test_an_adopted_orphan_that_exits_is_reaped_while_claude_runs(fake: FakeClaude, start_run) -> None:
    fake.plan([{"spawn": {"daemon": True}}, {"mark": "ready"}, {"wait": None}])
    run = start_run()
    fake.wait_event("mark", name="ready")
    ((daemon, _),) = daemons(fake).items()
    os.kill(daemon, signal.SIGKILL)
    wait_until(lambda: not psutil.pid_exists(daemon), 5, "claude-run to reap its adopted orphan")
    assert alive(fake.starts()[0]["pid"]), "Claude still runs: the orphan was reaped, not swept"
    run.send(b"\x03")
    assert run.wait() == 0
    assert "leftover" not in run.text


# --------------------------------------------------------------------------- terminal and signals


def test_ctrl_c_reaches_claude_and_not_the_supervisor(fake: FakeClaude, start_run, tmp_path: Path) -> None:
    go = tmp_path / "go"
    fake.plan([{"on_signal": {"INT": "log"}}, {"mark": "ready"}, {"wait_file": str(go)}, {"exit": 0}])
    run = start_run()
    fake.wait_event("mark", name="ready")
    run.send(b"\x03")
    fake.wait_event("signal", sig="INT")
    time.sleep(0.2)  # give a wrongly delivered SIGINT time to end the supervisor
    assert alive(run.pid), f"claude-run died of Ctrl-C:\n{run.text}"
    go.touch()
    assert run.wait() == 0
    assert "Goodbye." in run.text and "interrupted" not in run.text


def test_ctrl_c_ends_claude_and_then_the_supervisor_exits_normally(fake: FakeClaude, start_run) -> None:
    fake.plan([{"mark": "ready"}, {"wait": None}])  # SIGINT: exit 0, as Claude does
    run = start_run()
    fake.wait_event("mark", name="ready")
    run.send(b"\x03")
    assert run.wait() == 0
    assert len(fake.starts()) == 1 and "Goodbye." in run.text


def test_sigterm_is_forwarded_and_the_supervisor_exits_with_claudes_status_without_restarting(
    fake: FakeClaude, start_run, workdir: Path
) -> None:
    fake.plan(
        [
            {"session": ["activate", "sessions/T", "implement"]},
            {"session": ["restart", "sessions/T"], "env": {"WATCHDOG_PID": None}},
            {"mark": "ready"},
            {"wait": None},
        ]
    )
    run = start_run()
    fake.wait_event("mark", name="ready")
    os.kill(run.pid, signal.SIGTERM)
    assert run.wait() == 143
    assert fake.events("signal")[0]["sig"] == "TERM"
    assert len(fake.starts()) == 1, "a stopped supervisor does not relaunch"
    assert read_state(workdir / "sessions" / "T")["killRequested"] is True, "the request stays for later"


def test_sighup_to_a_claude_that_ignores_it_ends_the_tree_after_the_grace_period(
    fake: FakeClaude, start_run
) -> None:
    fake.plan([{"on_signal": {"HUP": "ignore", "TERM": "ignore"}}, {"mark": "ready"}, {"wait": None}])
    run = start_run()
    fake.wait_event("mark", name="ready")
    claude = fake.starts()[0]["pid"]
    started = time.monotonic()
    os.kill(run.pid, signal.SIGHUP)
    assert run.wait() == 128 + signal.SIGKILL
    assert 0.9 <= time.monotonic() - started < 5, "SIGHUP, grace, then the watchdog's TERM, grace, KILL"
    assert not alive(claude)


def test_a_crashed_claude_does_not_leave_the_next_one_a_raw_terminal(fake: FakeClaude, start_run) -> None:
    fake.plan([{"run": ["stty", "raw", "-echo"], "stdin": None}, {"exit": 5}], [{"exit": 0}])
    run = start_run()
    assert run.wait() == 0
    first, second = fake.wait_starts(2)
    assert fake.events("run")[0]["rc"] == 0, "stty changed the terminal"
    assert first["echo"] is True and second["echo"] is True


def test_a_stop_still_ends_claude_when_its_watchdog_is_gone(fake: FakeClaude, start_run) -> None:
    fake.plan([{"on_signal": {"TERM": "ignore"}}, {"mark": "ready"}, {"wait": None}])
    run = start_run()
    fake.wait_event("mark", name="ready")
    start = fake.starts()[0]
    os.kill(int(start["env"]["WATCHDOG_PID"]), signal.SIGKILL)
    os.kill(run.pid, signal.SIGTERM)
    assert run.wait(timeout=30) == 128 + signal.SIGKILL
    assert not alive(start["pid"])


# --------------------------------------------------------------------------- crash loop


def test_a_crash_loop_backs_off_exponentially_and_gives_up(fake: FakeClaude, start_run) -> None:
    fake.plan(default=[{"exit": 3}])
    run = start_run(env={"CLAUDE_RUN_BACKOFF": "0.1", "CLAUDE_RUN_CRASH_LIMIT": "4"})
    assert run.wait() == 3
    starts = fake.wait_starts(4)
    assert len(starts) == 4
    gaps = [b["t"] - a["t"] for a, b in itertools.pairwise(starts)]
    for gap, delay in zip(gaps, (0.1, 0.2, 0.4)):
        assert delay <= gap < delay + 1.5, f"back-off gaps {gaps}"
    errors = [line for line in run.text.splitlines() if line.startswith("claude-run: error:")]
    assert len(errors) == 1 and "4 times within 60s; giving up" in errors[0]
    assert "Goodbye." not in run.text


def test_after_a_crash_claude_resumes_its_own_conversation(
    fake: FakeClaude, start_run, workdir: Path
) -> None:
    session_id = "5f0c1d2e-aaaa-bbbb-cccc-000000000001"
    fake.plan(
        [
            {"session": ["activate", "sessions/C", "implement"]},
            {"state": {"dir": str(workdir / "sessions" / "C"), "set": {"sessionId": session_id}}},
            {"transcript": session_id},
            {"exit": 2},
        ],
        [{"exit": 0}],
    )
    run = start_run()
    assert run.wait() == 0
    _, second = fake.wait_starts(2)
    argv = argv_of(second)
    assert argv[argv.index("--resume") + 1] == session_id
    assert "Resuming conversation 5f0c1d2e..." in run.text


def test_outside_a_fleet_a_killed_claude_without_a_session_resumes_its_conversation(
    fake: FakeClaude, start_run, workdir: Path
) -> None:
    """No pane and no session: the hooks recorded the conversation for this claude-run, which forgets it at exit."""
    conversation = "5f0c1d2e-aaaa-bbbb-cccc-000000000002"
    hook_input = json.dumps({"session_id": conversation, "cwd": str(workdir), "source": "startup"})
    fake.plan(
        [{"run": [script("claude-hook"), "session-start"], "stdin": hook_input}, {"transcript": conversation},
         {"run": ["sh", "-c", "kill -KILL $PPID"]}, {"wait": None}],
        [{"exit": 0}],
    )  # fmt: skip
    dead = pane_records.spot(None, (DEAD_PID, "old-boot:1"))
    assert dead is not None
    pane_records.note(workdir / "sessions", dead[0], "0b9d6f4e-0000", folder=dead[1])  # SIGKILLed long ago
    run = start_run("the first task")
    assert run.wait() == 0
    first, second = fake.wait_starts(2)
    argv = argv_of(second)
    assert "--resume" not in argv_of(first) and argv[argv.index("--resume") + 1] == conversation, run.text
    assert "the first task" not in argv, "the resumed conversation has it already"
    assert "Resuming conversation 5f0c1d2e... of this claude-run (no session)" in run.text
    runs = workdir / "sessions" / ".shepherd" / "runs"
    assert list(runs.iterdir()) == [], "its record ended with it, and so did a dead claude-run's"


def test_a_refused_resume_of_the_users_own_resume_is_retried_once_fresh(fake: FakeClaude, start_run) -> None:
    fake.plan({"resume": "refuse", "steps": []}, [{"exit": 0}])
    run = start_run("--resume", "7e57e57e-0000-0000-0000-000000000000", "--model", "opus")
    assert run.wait() == 0
    first, second = fake.wait_starts(2)
    assert has_resume(argv_of(first)) and not has_resume(argv_of(second))
    assert "--model" in argv_of(second)
    assert "Claude refused to resume the conversation (--resume 7e57e57e" in run.text


# --------------------------------------------------------------------------- errors


def test_missing_claude_binary_is_a_one_line_error_with_exit_127(
    run_env: dict[str, str], workdir: Path
) -> None:
    if any(Path(p).exists() for p in ("/usr/local/bin/claude", "/opt/homebrew/bin/claude")):
        pytest.skip("a system-wide claude is installed")
    env = {k: v for k, v in run_env.items() if k != "CLAUDE_BIN"}
    done = subprocess.run(
        [claude_run_path()], env=env, cwd=workdir, capture_output=True, text=True, timeout=20
    )
    assert done.returncode == 127
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("claude-run: error: claude not found"), lines


def test_claude_bin_that_is_not_executable_is_refused(
    run_env: dict[str, str], workdir: Path, tmp_path: Path
) -> None:
    bogus = tmp_path / "not-claude"
    bogus.write_text("")
    env = dict(run_env, CLAUDE_BIN=str(bogus))
    done = subprocess.run(
        [claude_run_path()], env=env, cwd=workdir, capture_output=True, text=True, timeout=20
    )
    assert done.returncode == 127
    assert done.stderr.startswith("claude-run: error: CLAUDE_BIN=") and done.stderr.count("\n") == 1


def test_no_process_is_left_behind(fake: FakeClaude, start_run, test_tag: str) -> None:
    fake.plan([{"spawn": {"setsid": False}}, {"exit": 0}])
    run = start_run()
    assert run.wait() == 0
    # Claude's own children are Claude's business on a normal exit; only ours must be gone.
    ours = [p for p in tagged(test_tag) if "--fake-claude-helper" not in " ".join(p.cmdline())]
    assert ours == []


def test_what_an_agent_named_its_session_folder_reaches_the_terminal_without_escapes(
    fake: FakeClaude, start_run, workdir: Path
) -> None:
    """The agent renames its session folder (Bash can): claude-run's lines name it, never run its escapes."""
    session_id = "5f0c1d2e-aaaa-bbbb-cccc-000000000002"
    renamed = "C\x1b]0;owned\x07\u202e"
    fake.plan(
        [
            {"session": ["activate", "sessions/C", "implement"]},
            {"state": {"dir": str(workdir / "sessions" / "C"), "set": {"sessionId": session_id}}},
            {"transcript": session_id},
            {"run": ["mv", str(workdir / "sessions" / "C"), str(workdir / "sessions" / renamed)]},
            {"exit": 2},
        ],
        [{"exit": 0}],
    )
    run = start_run()
    assert run.wait() == 0
    fake.wait_starts(2)
    assert "of session C\ufffd]0;owned\ufffd\ufffd" in run.text, run.text
    assert "\x1b" not in run.text and "\u202e" not in run.text


# --------------------------------------------------------------------------- sessions roots


def test_claude_run_records_its_sessions_root_so_agents_elsewhere_cannot_write_it(
    fake: FakeClaude, start_run, run_env: dict[str, str], workdir: Path, tmp_path: Path
) -> None:
    from support.hooks import run as run_hook
    from support.hooks import tool

    fake.plan([{"exit": 0}], [{"exit": 0}])
    for _ in range(2):
        assert start_run().wait() == 0
    registry = Path(run_env["HOME"]) / ".local" / "state" / "claude-shepherd" / "roots"
    assert registry.read_text().splitlines() == [str((workdir / "sessions").resolve())], "recorded once"
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "sessions").mkdir(parents=True)
    env = dict(
        run_env, CLAUDE_SESSIONS_DIR=str(elsewhere / "sessions"), CLAUDE_SUPERVISOR_PID=str(os.getpid())
    )
    handover = str(workdir / "sessions" / "S1" / "DEHYDRATED_CONTEXT.md")
    out = run_hook(
        "pre-tool-use", tool(elsewhere, "Write", file_path=handover, content="x"), env, cwd=elsewhere
    )
    assert "§CMD_PROTECTED_FILE" in out.stdout and "another sessions root" in out.stdout
