"""fleet start / stop / status / pane-id on a real tmux server with the real claude-run.

Each pane runs ``claude-run`` with the stand-in Claude (``tests/fake_claude.py``);
the agents activate sessions with ``session activate`` exactly as a real agent's
Bash tool would, so what ``fleet stop`` / ``fleet start`` must preserve (S3) or
refuse to resume (S9) is the real state written by the real commands.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import threading
import time
import typing as t
from pathlib import Path

import psutil
import pytest
from support.fleet import FleetWorld, agent, resume_of
from support.waiting import wait_until

from claude_shepherd.fleet import stop as stop_module
from claude_shepherd.supervisor.session.schema import validate_state as parse
from claude_shepherd.supervisor.session.store import read_state, update_state


def two_panes(world: FleetWorld, *labels: str, name: str = "duo") -> Path:
    panes = "".join(f"        - {label}: claude-run\n" for label in labels)
    return world.layout(name, f"  - agents:\n      layout: tiled\n      panes:\n{panes}")


def test_start_labels_panes_runs_claude_run_as_the_pane_process_and_pane_id_answers(
    world: FleetWorld,
) -> None:
    two_panes(world, "A", "B")
    for label in ("A", "B"):
        world.plan(label, [{"run": ["fleet", "pane-id"]}, {"mark": "ready"}, {"wait": None}])
    done = world.fleet("start", "duo", "--no-attach")
    assert done.returncode == 0, done.stderr
    panes = world.panes()
    lines = done.stdout.splitlines()
    assert lines[0] == f"Starting fleet 'duo' (socket {world.socket}) in {world.project}: 1 window, 2 panes"
    for line, label in zip(lines[1:3], ("A", "B")):  # "started" only once seen running
        assert re.fullmatch(
            rf"  agents:{label}  started, running \(claude-run {panes[label]['pane_pid']}, Claude \d+\)", line
        ), line
    assert lines[3:] == [f"Attach with: tmux -L {world.socket} attach -t duo"]
    assert set(panes) == {"A", "B"}
    for label in ("A", "B"):
        world.wait_event(label, "mark", name="ready")
        # The pane's own process is claude-run (exec'd), not a shell that had it typed in.
        cmdline = psutil.Process(int(panes[label]["pane_pid"])).cmdline()
        assert Path(cmdline[1]).name == "claude-run", cmdline
        # Inside the pane, `fleet pane-id` prints the pane's identity.
        (ran,) = world.events(label, "run")
        assert (ran["rc"], ran["stdout"]) == (0, f"duo:agents:{label}\n")
        (start,) = world.starts(label)
        assert start["env"]["CLAUDE_SUPERVISOR_PID"] == panes[label]["pane_pid"]
    assert world.tmux("show-options", "-gwv", "remain-on-exit") == "on"
    # The hooks in the panes run the tmux fleet start ran, never one found on PATH.
    trusted = world.tmux("show-environment", "-g", "CLAUDE_SHEPHERD_TMUX").partition("=")[2]
    assert os.path.isabs(trusted) and start["env"]["CLAUDE_SHEPHERD_TMUX"] == trusted
    assert "Fleet pane ID: duo:agents:A" in world.capture("A")

    # The pane's environment is only a claim: a process outside the pane cannot speak for it.
    spoofed = world.fleet("pane-id", env=world.pane_env("B"))
    assert (spoofed.returncode, spoofed.stdout, spoofed.stderr) == (1, "", "")
    outside = world.fleet("pane-id")
    assert (outside.returncode, outside.stdout, outside.stderr) == (1, "", "")
    other = world.fleet("pane-id", env={"TMUX": "/tmp/tmux-0/default,1,0", "TMUX_PANE": "%0"})
    assert (other.returncode, other.stdout) == (1, ""), "not a fleet socket"

    status = world.fleet("status", "--json")
    assert status.returncode == 0, status.stderr
    rows = {row["label"]: row for row in json.loads(status.stdout)}
    assert rows["A"]["supervisor_alive"] and rows["A"]["supervisor_pid"] == int(panes["A"]["pane_pid"])
    assert rows["A"]["claude_pid"] == world.starts("A")[0]["pid"]
    assert rows["A"]["pane_id"] == "duo:agents:A" and rows["A"]["window"] == "agents"
    table = world.fleet("status")
    assert table.returncode == 0 and "agents:A" in table.stdout and "SUPERVISOR" in table.stdout


def test_stop_leaves_no_process_and_start_resumes_each_panes_own_conversation(world: FleetWorld) -> None:
    """S3 for every pane, S9 for the overflowed one; stubborn children do not survive the stop."""
    two_panes(world, "A", "B", "O")
    world.plan("A", agent({"spawn": {"setsid": True, "ignore_term": True, "depth": 2}}, label="A"))
    world.plan("B", agent({"on_signal": {"TERM": "ignore"}}, label="B"))  # claude-run must escalate
    world.plan("O", agent(label="O"))
    assert world.fleet("start", "duo", "--no-attach").returncode == 0
    for label in ("A", "B", "O"):
        world.wait_event(label, "mark", name="ready")
    sessions = world.project / "sessions"
    assert {p.name for p in sessions.iterdir() if not p.name.startswith(".")} == {"S_A", "S_B", "S_O"}

    rows = {r["label"]: r for r in json.loads(world.fleet("status", "--json").stdout)}
    assert rows["A"]["session_dir"] == str(sessions / "S_A")
    assert (rows["A"]["skill"], rows["A"]["lifecycle"], rows["A"]["overflowed"]) == (
        "implement",
        "active",
        False,
    )

    # The overflow hook fired in pane O before the fleet stopped (S9).
    update_state(sessions / "S_O", lambda s: s.update(overflowed=True))

    began = time.monotonic()
    stop = world.fleet("stop", "--grace", "5")
    elapsed = time.monotonic() - began
    assert stop.returncode == 0, stop.stdout + stop.stderr
    assert "duo:agents:A  stopped: supervisor" in stop.stdout
    assert stop.stdout.rstrip().endswith("no process of the fleet is left.")
    assert elapsed < 5, "graceful: claude-run stopped its Claude well inside the grace"
    assert world.leftovers() == [], [p.cmdline() for p in world.leftovers()]
    assert not world.server_alive()
    for label in ("A", "B", "O"):
        state = read_state(sessions / f"S_{label}")
        parse(state)  # still valid against the schema
        assert state["sessionId"] == f"conv-{label}" and state["fleetPaneId"] == f"duo:agents:{label}"

    again = world.fleet("start", "duo", "--no-attach")
    assert again.returncode == 0, again.stderr
    for label in ("A", "B"):
        first, second = world.wait_starts(label, 2)
        assert resume_of(first) is None and resume_of(second) == f"conv-{label}"
    first, second = world.wait_starts("O", 2)
    assert resume_of(second) is None, "an overflowed conversation is never resumed"
    wait_until(lambda: "filled its context" in world.capture("O"), 10, "the fresh-start reason in pane O")
    assert "Resuming conversation conv-A" in world.capture("A")


def test_a_killed_claude_that_never_activated_a_session_is_resumed_in_its_conversation(
    world: FleetWorld,
) -> None:
    """No session holds the conversation; the pane's record (its SessionStart hook) does."""
    conversation = "0a1b2c3d-0000-4000-8000-00000000beef"
    hook_input = {"session_id": conversation, "cwd": str(world.project), "source": "startup"}
    two_panes(world, "A")
    world.plan(
        "A",
        [{"run": ["claude-hook", "session-start"], "stdin": json.dumps(hook_input)},
         {"transcript": conversation}, {"mark": "ready"}, {"wait": None}],
        default=[{"mark": "again"}, {"wait": None}],
    )  # fmt: skip
    assert world.fleet("start", "duo", "--no-attach").returncode == 0
    world.wait_event("A", "mark", name="ready")
    (first,) = world.starts("A")
    os.kill(first["pid"], signal.SIGKILL)
    _, second = world.wait_starts("A", 2)
    logs = world.fleet("logs", "duo", "--pane", "A", "--socket", world.socket, socket=False)
    assert resume_of(first) is None and resume_of(second) == conversation, logs.stdout
    assert f"Resuming conversation {conversation[:8]}... of fleet pane 'duo:agents:A'" in logs.stdout, (
        logs.stdout
    )
    assert "Starting fresh" not in logs.stdout


def test_reconcile_respawns_only_the_dead_pane_and_adds_a_missing_one(world: FleetWorld) -> None:
    world.layout(
        "duo",
        "  - agents:\n      layout: tiled\n      panes:\n"
        "        - A: claude-run\n        - B: claude-run\n        - C: claude-run\n"
        "        - build: echo built\n",
    )
    world.plan("A", [{"mark": "ready"}, {"wait": None}])
    finished = world.base / "B-finishes"
    # B's agent finishes its work once the fleet is up; claude-run then ends: the pane is dead.
    world.plan("B", [{"wait_file": str(finished), "timeout": 60}, {"print": "finished my work"}, {"exit": 0}])
    world.plan("C", [{"mark": "ready"}, {"wait": None}])
    assert world.fleet("start", "duo", "--no-attach").returncode == 0
    finished.touch()
    world.wait_event("A", "mark", name="ready")
    world.wait_event("C", "mark", name="ready")
    wait_until(lambda: world.panes()["B"]["pane_dead"] == "1", 15, "pane B to be dead")
    wait_until(lambda: world.panes()["build"]["pane_dead"] == "1", 15, "the build pane to finish")
    assert "finished my work" in world.capture("B"), "remain-on-exit keeps a finished agent readable"
    before = world.panes()
    world.tmux("kill-pane", "-t", before["C"]["pane_id"])

    done = world.fleet("start", "duo", "--no-attach")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert (
        lines[0] == f"Fleet 'duo' is running (socket {world.socket}) in {world.project}; reconciling with "
        f"{world.project}/tmuxinator/duo.yml"
    )
    assert lines[1].split() == ["agents:A", "running", "(pid", f"{before['A']['pane_pid']})"]
    assert lines[2].split()[:7] == ["agents:B", "respawned", "(exited", "with", "status", "0),", "running"]
    assert lines[3].split()[:3] == ["agents:C", "added,", "running"]
    assert lines[4].split() == [
        "agents:build",
        "idle",
        "(exited",
        "with",
        "status",
        "0;",
        "not",
        "an",
        "agent,",
        "left",
        "alone)",
    ]
    after = world.panes()
    assert after["A"]["pane_pid"] == before["A"]["pane_pid"], "a live pane is left alone"
    assert after["B"]["pane_id"] == before["B"]["pane_id"] and after["B"]["pane_dead"] == "0"
    assert len(world.wait_starts("B", 2)) == 2 and len(world.starts("A")) == 1
    world.wait_starts("C", 2)

    nothing = world.fleet("start", "duo", "--no-attach")
    assert nothing.stdout.splitlines()[-2] == "Nothing to do: every agent is running."
    assert "respawned" not in nothing.stdout and "added" not in nothing.stdout


def test_stop_kills_a_supervisor_that_ignores_sigterm_and_says_so(world: FleetWorld) -> None:
    stubborn = world.base / "stubborn" / "claude-run"
    stubborn.parent.mkdir()
    stubborn.write_text(
        "#!/usr/bin/env python3\n"
        "import signal, subprocess, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "subprocess.Popen(['sleep', '600'], start_new_session=True)\n"
        "print('ignoring SIGTERM', flush=True)\n"
        "time.sleep(600)\n"
    )
    stubborn.chmod(0o755)
    world.layout("mule", f"  - agents:\n      panes:\n        - Mule: {stubborn}\n        - A: claude-run\n")
    world.plan("A", [{"mark": "ready"}, {"wait": None}])
    assert world.fleet("start", "mule", "--no-attach").returncode == 0
    world.wait_event("A", "mark", name="ready")
    wait_until(lambda: "ignoring SIGTERM" in world.capture("Mule"), 10, "the stubborn supervisor")

    began = time.monotonic()
    stop = world.fleet("stop", "mule", "--grace", "1")
    elapsed = time.monotonic() - began
    assert stop.returncode == 1
    assert stop.stderr == (
        "fleet: error: 1 agent(s) ignored SIGTERM for 1s and were killed: mule:agents:Mule; "
        "their sessions may not have saved their state\n"
    )
    assert "mule:agents:Mule  killed: supervisor" in stop.stdout
    assert "mule:agents:A     stopped: supervisor" in stop.stdout
    # --grace 1 is the wait, not the default 10 s (a bound, not a speed target: a loaded machine is slow)
    assert elapsed < stop_module.DEFAULT_GRACE, elapsed
    assert world.leftovers() == [], [p.cmdline() for p in world.leftovers()]


def test_stop_returns_only_once_the_fleets_tmux_server_and_its_hooks_jobs_are_gone(
    world: FleetWorld,
) -> None:
    """The server exits by itself once its last session is closed, but only after the pane-died hooks
    of the panes it just closed: here slow ones, one that holds the server up (``run-shell``) and one
    that outlives it (``run-shell -b``), as a loaded machine makes ``claude-hook pane-died``."""
    two_panes(world, "A", "B")
    for label in ("A", "B"):
        world.plan(label, [{"mark": "ready"}, {"wait": None}])
    assert world.fleet("start", "duo", "--no-attach").returncode == 0
    for label in ("A", "B"):
        world.wait_event(label, "mark", name="ready")
    world.tmux("set-hook", "-g", "pane-died[43]", "run-shell -b 'sleep 1.5'")
    world.tmux("set-hook", "-g", "pane-died[44]", "run-shell 'sleep 0.5'")
    server_pid = int(world.tmux("display-message", "-p", "#{pid}"))

    stop = world.fleet("stop", "--grace", "5")
    assert stop.returncode == 0, stop.stdout + stop.stderr
    assert not psutil.pid_exists(server_pid) or psutil.Process(server_pid).status() == psutil.STATUS_ZOMBIE
    assert world.leftovers() == [], [p.cmdline() for p in world.leftovers()]
    assert stop.stdout.rstrip().endswith("no process of the fleet is left."), stop.stdout


def test_bad_input_is_one_line_with_the_right_exit_status(world: FleetWorld) -> None:
    two_panes(world, "A")
    stopped = world.fleet("stop", "duo")  # stopping what is stopped succeeds, as systemctl stop does
    assert (stopped.returncode, stopped.stderr) == (0, "")
    assert stopped.stdout == f"Fleet 'duo' is not running on socket {world.socket}; nothing to stop.\n"
    status = world.fleet("status")
    assert (status.returncode, status.stderr) == (
        3,
        f"fleet: error: no fleet is running on socket {world.socket}\n",
    )
    as_json = world.fleet("status", "--json")  # always JSON, errors included
    assert as_json.returncode == 3
    assert json.loads(as_json.stdout) == {
        "error": f"no fleet is running on socket {world.socket}",
        "exit_code": 3,
    }

    unknown = world.fleet("start", "nope", "--no-attach")
    assert unknown.returncode == 1
    assert (
        unknown.stderr.startswith("fleet: error: no layout named 'nope' in ")
        and unknown.stderr.count("\n") == 1
    )
    assert "available: duo" in unknown.stderr

    broken = world.project / "tmuxinator" / "broken.yml"
    broken.write_text("name: broken\nwindows:\n  - a: [x\n")
    yaml = world.fleet("start", "broken", "--no-attach")
    assert (yaml.returncode, yaml.stderr) == (
        1,
        f"fleet: error: {broken}:3:8: YAML syntax: this [ is never closed; close it, or put the value in quotes\n",
    )

    no_tmux = world.fleet("start", "duo", "--no-attach", env={"PATH": "/nonexistent"})
    assert (no_tmux.returncode, no_tmux.stderr) == (
        127,
        "fleet: error: tmux not found on PATH; install tmux 3.2 or newer\n",
    )

    bad_socket = world.fleet("stop", "--socket", "work", socket=False)
    assert (bad_socket.returncode, bad_socket.stderr) == (
        1,
        "fleet: error: socket 'work' is not a fleet socket; use fleet or fleet-NAME\n",
    )
    assert not world.server_alive()


def start_agents(world: FleetWorld, *labels: str) -> None:
    """Start fleet 'duo' with one stand-in agent per label, each activated and ready."""
    two_panes(world, *labels)
    for label in labels:
        world.plan(label, agent(label=label))
    assert world.fleet("start", "duo", "--no-attach").returncode == 0
    for label in labels:
        world.wait_event(label, "mark", name="ready")


def test_one_agent_at_a_time_stop_and_restart_leave_the_others_alone(world: FleetWorld) -> None:
    """supervisorctl's verbs: stop or restart one pane's agent; the rest keep running."""
    start_agents(world, "A", "B")
    b_pid = world.panes()["B"]["pane_pid"]

    stopped = world.fleet("stop", "duo", "--pane", "A", "--grace", "5")
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert "`fleet start` resumes it" in stopped.stdout
    panes = world.panes()
    assert (
        panes["A"]["pane_dead"] == "1" and panes["B"]["pane_dead"] == "0" and panes["B"]["pane_pid"] == b_pid
    )
    assert world.server_alive()

    assert (
        world.fleet("start", "duo", "--no-attach").returncode == 0
    )  # brings A back, resuming its conversation
    first, second = world.wait_starts("A", 2)
    assert resume_of(first) is None and resume_of(second) == "conv-A"
    assert world.panes()["B"]["pane_pid"] == b_pid, "B was never touched"

    restarted = world.fleet("restart", "duo", "--pane", "B", "--grace", "5")
    assert restarted.returncode == 0, restarted.stdout + restarted.stderr
    first, second = world.wait_starts("B", 2)
    assert resume_of(second) == "conv-B"
    assert len(world.starts("A")) == 2, "A was not restarted"

    unknown = world.fleet("stop", "duo", "--pane", "nope")
    assert unknown.returncode == 1 and "no pane labelled nope" in unknown.stderr


def test_an_agent_passing_for_another_cannot_turn_the_operators_verbs_on_it(
    world: FleetWorld, monkeypatch: t.Any
) -> None:
    """Agent A relabels its pane B (it has $TMUX): no verb guesses which B is meant, and the watch's keys
    act on the pane of the row the person chose."""
    from claude_shepherd.fleet import watch as w

    start_agents(world, "A", "B")
    panes = world.panes()
    a_id, b_id = panes["A"]["pane_id"], panes["B"]["pane_id"]
    world.tmux("set-option", "-p", "-t", a_id, "@pane_label", "B")

    def dead() -> dict[str, str]:
        rows = world.tmux("list-panes", "-a", "-F", "#{pane_id} #{pane_dead}").splitlines()
        return dict(line.split() for line in rows)

    def active() -> str:
        return world.tmux("display-message", "-p", "-t", "duo:", "#{pane_id}")

    before = active()
    for verb in (["stop", "duo", "--pane", "B", "--grace", "5"], ["restart", "duo", "--pane", "B", "--grace", "5"],
                 ["restart", "duo", "--grace", "5"], ["logs", "duo", "--pane", "B", "--socket", world.socket],
                 ["attach", "duo", "--pane", "B", "--socket", world.socket]):  # fmt: skip
        refused = world.fleet(*verb)
        assert refused.returncode == 1, refused.stdout + refused.stderr
        told = (
            "nothing restarted: in window agents, {a}, {b} are all labelled B"
            if verb[0] == "restart"
            else "2 panes ({a}, {b}) are labelled B"
        )
        assert told.format(a=a_id, b=b_id) in refused.stderr, refused.stderr
    assert dead() == {a_id: "0", b_id: "0"}, "nothing was stopped"
    assert active() == before, "attach selected no pane"

    monkeypatch.setenv("TMUX_TMPDIR", str(world.tmux_tmpdir))
    rows = {row.status.pane: row for row in w.gather().rows}
    assert "stopped: supervisor" in w.stop_agent(rows[b_id], 5)
    assert dead() == {a_id: "0", b_id: "1"}, "the watch stopped the chosen row's pane, and only it"

    started = world.fleet("start", "duo", "--no-attach")
    assert started.returncode == 1 and "agents:B  left alone" in started.stdout, started.stdout
    assert "window agents was left alone (see above)" in started.stderr
    assert dead() == {a_id: "0", b_id: "1"} and len(world.starts("B")) == 1, "no pane respawned or added"


def test_a_renamed_window_or_session_does_not_get_its_agents_started_twice(world: FleetWorld) -> None:
    """An agent renames its window, then its fleet's session (it has $TMUX): fleet start starts no second
    agent for an identity whose agent still runs, and says why. A session file it forges is no evidence."""
    from claude_shepherd.supervisor.session.identity import start_token

    start_agents(world, "A", "B")
    decoy = world.project / "sessions" / "S_DECOY"  # "B's agent runs as init": written with Bash
    decoy.mkdir()
    (decoy / ".state.json").write_text(json.dumps({"pid": 1, "pidStart": start_token(1), "skill": "x",
                                                   "fleetPaneId": "duo:agents:B", "lifecycle": "active"}))  # fmt: skip
    restarted = world.fleet("restart", "duo", "--pane", "B", "--grace", "5")
    assert restarted.returncode == 0, restarted.stdout + restarted.stderr
    world.wait_starts("B", 2)

    world.tmux("rename-window", "-t", world.panes()["A"]["pane_id"], "agents\u200d")  # reads as "agents"
    refused = world.fleet("restart", "duo", "--pane", "B", "--grace", "5")  # B could not be started again
    assert (
        refused.returncode == 1 and "nothing restarted: duo:agents:A runs as supervisor" in refused.stderr
    ), refused.stderr
    assert world.panes()["B"]["pane_dead"] == "0" and len(world.starts("B")) == 2, "B was not stopped"
    started = world.fleet("start", "duo", "--no-attach")
    assert started.returncode == 1, started.stdout + started.stderr
    assert "left alone (its agent runs outside this window: supervisor" in started.stdout, started.stdout
    assert "window agents was left alone" in started.stderr
    assert len(world.panes()) == 2 and len(world.starts("A")) == 1 and len(world.starts("B")) == 2, (
        "no agent added"
    )

    # Then the session, with every binding removed: only the fleet's shape gives it away.
    world.tmux("rename-window", "-t", world.panes()["A"]["pane_id"], "agents")
    world.tmux("rename-session", "-t", "duo", "duo\u200d")
    for label in ("A", "B"):
        update_state(world.project / "sessions" / f"S_{label}", lambda state: state.pop("fleetPaneId", None))
    built = world.fleet("start", "duo", "--no-attach")
    assert (
        built.returncode == 1
        and "fleet 'duo' seems to run under another name (session 'duo\\u200d'" in built.stderr
    ), built.stderr
    assert world.tmux("list-sessions", "-F", "#{session_name}").splitlines() == ["duo\u200d"], (
        "no second fleet"
    )
    assert len(world.starts("A")) == 1 and len(world.starts("B")) == 2
    stopped = world.fleet("stop", "duo")
    assert (
        stopped.returncode == 1
        and "but session 'duo\\u200d' has its windows, labels and sessions" in stopped.stderr
    ), stopped.stderr
    world.tmux("new-session", "-d", "-s", "duo", "-n", "decoy", "sleep 600")  # a decoy under the fleet's name
    stopped = world.fleet("stop", "duo")
    assert stopped.returncode == 1, stopped.stdout + stopped.stderr
    assert "stopped the session named 'duo', but session 'duo\\u200d' has its windows" in stopped.stderr, (
        stopped.stderr
    )


def test_another_projects_copy_of_the_layout_on_the_same_socket_is_not_a_renamed_fleet(
    world: FleetWorld,
) -> None:
    """Two projects, one socket, the same windows and labels: each starts, and stopping one leaves the other."""
    other = world.base / "other-project"
    other.mkdir()
    windows = "  - agents:\n      panes:\n        - A: claude-run\n"
    world.layout("p1", windows, extra=f"root: {world.project}\n")
    world.layout("p2", windows, extra=f"root: {other}\n")
    world.plan("A", [{"mark": "ready"}, {"wait": None}])
    assert world.fleet("start", "p1", "--no-attach").returncode == 0
    world.wait_event("A", "mark", name="ready")
    second = world.fleet("start", "p2", "--no-attach")
    assert second.returncode == 0, second.stdout + second.stderr
    wait_until(lambda: len(world.starts("A")) == 2 or None, 15, "both projects' agents")
    stopped = world.fleet("stop", "p2", "--grace", "5")
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert world.tmux("list-sessions", "-F", "#{session_name}").splitlines() == ["p1"]


def test_attach_selects_an_agents_pane_and_logs_show_its_output(world: FleetWorld) -> None:
    start_agents(world, "A", "B")

    attach = world.fleet("attach", "duo", "--pane", "B", "--socket", world.socket, socket=False)
    assert attach.returncode == 0, attach.stderr
    assert attach.stdout.strip() == f"Attach with: tmux -L {world.socket} attach -t duo"  # no terminal here
    assert world.panes()["B"]["pane_active"] == "1" and world.panes()["A"]["pane_active"] == "0"

    logs = world.fleet("logs", "duo", "--pane", "A", "-n", "20", "--socket", world.socket, socket=False)
    assert logs.returncode == 0, logs.stderr
    assert (
        "[claude-run] Fleet pane ID: duo:agents:A" in logs.stdout
        and "[claude-run] Starting..." in logs.stdout
    )
    assert "duo:agents:B" not in logs.stdout

    follow = world.follow_logs("duo", "--pane", "A")
    try:
        assert follow.stdout is not None
        seen = [follow.stdout.readline() for _ in range(2)]
        assert any("[claude-run]" in line for line in seen)
        assert follow.poll() is None, "-f keeps following"
    finally:
        follow.kill()
        follow.wait()

    missing = world.fleet("logs", "duo", "--pane", "nope", "--socket", world.socket, socket=False)
    assert (
        missing.returncode == 1
        and "no pane labelled nope" in missing.stderr
        and "labels: A, B" in missing.stderr
    )

    # An agent can relabel its own pane (it has $TMUX); the error listing labels shows it, not its escapes.
    world.tmux("set-option", "-p", "-t", world.panes()["B"]["pane_id"], "@pane_label", "B\x1b]0;owned\x07")
    relabelled = world.fleet("logs", "duo", "--pane", "nope", "--socket", world.socket, socket=False)
    assert relabelled.returncode == 1 and "labels: A, B\ufffd]0;owned\ufffd" in relabelled.stderr, (
        relabelled.stderr
    )


def test_logs_and_the_watch_show_claudes_prompt_with_its_no_break_space(
    world: FleetWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude draws its prompt as `❯` and a no-break space: a space, never a replacement character."""
    from claude_shepherd.fleet import watch

    two_panes(world, "A")
    world.plan("A", [{"print": '\u276f\u00a0Try "fix the tests"'}, {"mark": "ready"}, {"wait": None}])
    assert world.fleet("start", "duo", "--no-attach").returncode == 0
    world.wait_event("A", "mark", name="ready")
    logs = world.fleet("logs", "duo", "--pane", "A", "--socket", world.socket, socket=False)
    assert logs.returncode == 0, logs.stderr
    assert "\ufffd" not in logs.stdout, logs.stdout
    assert re.search('^\u276f[ \u00a0]Try "fix the tests"$', logs.stdout, re.MULTILINE), logs.stdout
    monkeypatch.setenv("TMUX_TMPDIR", str(world.tmux_tmpdir))
    (row,) = watch.gather(["duo"]).rows
    shown = watch.log_lines(row)  # the watch's `l`
    assert any(re.fullmatch('\u276f[ \u00a0]Try "fix the tests"', line) for line in shown), shown


REDRAWING = """
import sys, time
for i in range(40):
    print(f"history {i}")
print("\\x1b]0;retitled\\x07title set")
n = 0
while True:
    n += 1
    if n % 5 == 0:
        print(f"\\r{' ' * 30}\\routput {n // 5}")  # a new line of output
    sys.stdout.write(f"\\rspinner {n} \\u202e")  # the bottom row, redrawn in place
    sys.stdout.flush()
    time.sleep(0.1)
"""


def test_logs_follow_prints_new_output_once_while_the_bottom_row_is_redrawn(world: FleetWorld) -> None:
    script = world.base / "redraw.py"
    script.write_text(REDRAWING)
    world.layout("duo", f"  - agents:\n      panes:\n        - T: {sys.executable} -u {script}\n")
    assert world.fleet("start", "duo", "--no-attach").returncode == 0
    follow = world.follow_logs("duo", "--pane", "T", "-n", "60")
    got: list[str] = []

    def read() -> None:
        assert follow.stdout is not None
        for line in follow.stdout:
            got.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        wait_until(
            lambda: sum(line.startswith("output ") for line in got) >= 5, 60, "five new lines of output"
        )
    finally:
        follow.terminate()
        follow.wait(timeout=10)
        reader.join(timeout=10)
    out = "".join(got)
    lines = [line.rstrip() for line in out.splitlines()]
    assert [line for line in lines if line.startswith("history ")] == [f"history {i}" for i in range(40)], (
        "the history is printed once, never again when the bottom row changes"
    )
    outputs = [line for line in lines if line.startswith("output ")]
    first = int(outputs[0].split()[1]) if outputs else 0
    assert len(outputs) >= 4 and outputs == [f"output {n}" for n in range(first, first + len(outputs))], (
        "each new line once, in order"
    )
    assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out


def test_a_pane_removed_from_the_layout_but_running_is_reported_not_touched(world: FleetWorld) -> None:
    start_agents(world, "A", "B")
    b_pid = world.panes()["B"]["pane_pid"]
    two_panes(world, "A")  # B is removed from the layout while it runs

    again = world.fleet("start", "duo", "--no-attach")
    assert again.returncode == 0, again.stderr
    assert (
        f"agents:B  not in the layout (still running (pid {b_pid}); stop it with fleet stop --pane B)"
        in again.stdout
    )
    assert world.panes()["B"]["pane_pid"] == b_pid, "reported, never touched"
    doctor = world.fleet("doctor", "duo")
    assert doctor.returncode == 1 and "not-in-layout: pane duo:agents:B is not in" in doctor.stdout


def test_status_shows_each_agents_cost_restarts_and_uptime(world: FleetWorld) -> None:
    """Cost comes from the status line's input, restarts from claude-run: both through pane options."""
    two_panes(world, "A", "B")
    status_input = json.dumps(
        {
            "cwd": str(world.project),
            "cost": {"total_cost_usd": 1.239},
            "context_window": {"used_percentage": 30},
        }
    )
    world.plan(
        "A",
        [{"exit": 3}],
        [{"run": ["claude-hook", "status-line"], "stdin": status_input}, {"mark": "ready"}, {"wait": None}],
    )
    world.plan("B", [{"mark": "ready"}, {"wait": None}])
    assert world.fleet("start", "duo", "--no-attach").returncode == 0
    for label in ("A", "B"):
        world.wait_event(label, "mark", name="ready")
    (ran,) = world.events("A", "run")
    assert ran["rc"] == 0 and "$1.24" in ran["stdout"], ran

    status = world.fleet("status", "--json")
    rows = {row["label"]: row for row in json.loads(status.stdout)}
    assert (rows["A"]["cost_usd"], rows["A"]["restarts"]) == (1.24, 1), "one crash, one relaunch"
    assert (rows["B"]["cost_usd"], rows["B"]["restarts"]) == (None, 0)
    started = psutil.Process(int(world.panes()["A"]["pane_pid"])).create_time()
    assert rows["A"]["started_at"] == started
    table = world.fleet("status")
    assert "COST" in table.stdout and "$1.24" in table.stdout and "2 pane(s), $1.24 spent" in table.stdout
