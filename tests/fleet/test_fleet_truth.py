"""What the fleet says is checked before it is said, and no two verbs at once lose a fleet.

Through the real ``fleet`` console script on a private tmux server, with the real
``claude-run`` and the stand-in Claude in every pane.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import psutil
from support.fleet import BIN, FleetWorld
from support.waiting import wait_until

PLAIN_PATH = "/usr/local/bin:/usr/bin:/bin"
"""A terminal whose venv is not activated: none of our scripts is on it."""


def duo(world: FleetWorld, *labels: str, name: str = "duo", command: str = "claude-run") -> Path:
    panes = "".join(f"        - {label}: {command}\n" for label in labels)
    for label in labels:
        world.plan(label)  # each Claude waits until it is stopped
    return world.layout(name, f"  - agents:\n      layout: tiled\n      panes:\n{panes}")


def fleet_at(
    world: FleetWorld, *args: str, path: str = PLAIN_PATH, **env: str
) -> subprocess.CompletedProcess[str]:
    """``.venv/bin/fleet ARGS`` from a terminal whose PATH is *path* (not the venv's)."""
    return world.fleet(*args, env={"PATH": path, **env})


def supervisors(world: FleetWorld) -> dict[str, int]:
    """label -> pid of the claude-run running in that pane (only live panes)."""
    return {label: int(row["pane_pid"]) for label, row in world.panes().items() if row["pane_dead"] == "0"}


# --------------------------------------------------------------------------- started means running


def test_start_from_a_terminal_without_the_venv_runs_this_installations_claude_run(world: FleetWorld) -> None:
    duo(world, "A", "B")
    done = fleet_at(world, "start", "duo", "--no-attach")
    assert done.returncode == 0, done.stdout + done.stderr
    assert all(", running (claude-run " in line for line in done.stdout.splitlines()[1:3]), done.stdout
    for label, pid in supervisors(world).items():
        assert Path(psutil.Process(pid).cmdline()[1]).resolve() == (BIN / "claude-run").resolve(), label
    # The session keeps the fleet's PATH: first a folder of links to our four scripts and nothing else
    # (the venv's python and pip stay off the agents' PATH).
    first = Path(world.tmux("show-environment", "-t", "duo", "PATH").partition("=")[2].split(os.pathsep)[0])
    assert sorted(p.name for p in first.iterdir()) == ["claude-hook", "claude-run", "fleet", "session"]
    assert all(p.resolve() == (BIN / p.name).resolve() for p in first.iterdir())


def test_a_respawn_asked_from_another_terminal_runs_in_the_fleets_environment(world: FleetWorld) -> None:
    duo(world, "A")
    assert world.fleet("start", "duo", "--no-attach").returncode == 0
    first = supervisors(world)["A"]
    psutil.Process(first).kill()
    wait_until(lambda: world.panes()["A"]["pane_dead"] == "1", 10, "pane A dead")
    # Another terminal: no venv on PATH. tmux gives a respawned pane its client's PATH: it must be the fleet's.
    again = fleet_at(world, "start", "duo", "--no-attach")
    assert again.returncode == 0, again.stdout + again.stderr
    assert re.search(r"agents:A  respawned \(.*\), running \(claude-run \d+, Claude \d+\)", again.stdout), (
        again.stdout
    )
    assert (
        Path(psutil.Process(supervisors(world)["A"]).cmdline()[1]).resolve() == (BIN / "claude-run").resolve()
    )


def test_start_fails_naming_each_agent_that_did_not_come_up_with_its_status_and_last_lines(
    world: FleetWorld,
) -> None:
    # B's claude-run finds no Claude: it says so and exits 127.
    world.plan("A")
    world.layout(
        "duo",
        "  - agents:\n      panes:\n        - A: claude-run\n"
        "        - B: CLAUDE_BIN=/nonexistent/claude claude-run\n",
    )
    done = world.fleet("start", "duo", "--no-attach", "--wait", "120")  # it returns once both are known
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert re.fullmatch(r"  agents:A  started, running \(claude-run \d+, Claude \d+\)", lines[1]), lines
    assert lines[2] == "  agents:B  started, but NOT RUNNING: exited with status 127"
    assert any(line.startswith("            | ") and "nonexistent/claude" in line for line in lines[3:]), (
        lines
    )
    assert not any("Pane is dead" in line for line in lines)
    assert done.stderr.strip() == (
        "fleet: error: 1 agent(s) not running: agents:B (their last lines are above); fix the cause "
        "and run `fleet start duo` again, which respawns them"
    )
    assert "Attach with" not in done.stdout


def test_an_agent_that_dies_soon_after_it_starts_is_not_called_running(world: FleetWorld) -> None:
    duo(world, "A")
    world.plan("A", default=[{"exit": 3}])  # every Claude exits at once: a crash loop
    # The default settle: a Claude must stay up 2 s (the test fleets' 0.5 s is less than a loaded
    # machine may take to start the stand-in Claude that then exits at once).
    env = {"CLAUDE_RUN_BACKOFF": "0.3", "FLEET_START_SETTLE": "2"}
    done = world.fleet("start", "duo", "--no-attach", "--wait", "3", env=env)
    assert done.returncode == 1, done.stdout
    assert "started, but NOT RUNNING" in done.stdout
    assert "running (claude-run" not in done.stdout


def test_status_fails_and_doctor_reports_a_dead_agent_and_fixes_it(world: FleetWorld) -> None:
    duo(world, "A", "B")
    assert world.fleet("start", "duo", "--no-attach").returncode == 0
    healthy = world.fleet("status", "duo")
    assert healthy.returncode == 0, healthy.stderr
    psutil.Process(supervisors(world)["B"]).kill()
    wait_until(lambda: world.panes()["B"]["pane_dead"] == "1", 10, "pane B dead")

    status = world.fleet("status", "duo")
    assert status.returncode == 1
    assert status.stderr.startswith("fleet: error: 1 agent(s) not running: B (exited SIGKILL)"), status.stderr
    as_json = world.fleet("status", "duo", "--json")
    assert as_json.returncode == 1 and as_json.stdout.lstrip().startswith("[")

    doctor = world.fleet("doctor", "duo")
    assert doctor.returncode == 1
    assert re.search(
        r"^dead-agent: the agent of duo:agents:B \(pane %\d+, socket fleet-pytest-\w+\) killed by SIGKILL;",
        doctor.stdout,
        re.M,
    ), doctor.stdout
    fixed = fleet_at(world, "doctor", "duo", "--fix")
    assert "fixed: respawned" in fixed.stdout, fixed.stdout
    wait_until(lambda: world.fleet("status", "duo").returncode == 0, 10, "B running again")
    assert (
        Path(psutil.Process(supervisors(world)["B"]).cmdline()[1]).resolve() == (BIN / "claude-run").resolve()
    )


def test_an_agent_stopped_on_request_is_no_dead_agent(world: FleetWorld) -> None:
    duo(world, "A", "B")
    assert world.fleet("start", "duo", "--no-attach").returncode == 0
    assert world.fleet("stop", "duo", "--pane", "B").returncode == 0
    wait_until(lambda: world.panes()["B"]["pane_dead"] == "1", 10, "pane B stopped")
    status = world.fleet("status", "duo")
    assert status.returncode == 0, status.stderr
    assert re.search(r"^agents:B .* stopped\s*$", status.stdout, re.M), status.stdout
    doctor = world.fleet("doctor", "duo")
    assert "dead-agent" not in doctor.stdout, doctor.stdout


# --------------------------------------------------------------------------- LAYOUT everywhere or nowhere


def test_with_no_layout_the_one_running_fleet_is_meant_and_several_are_listed(world: FleetWorld) -> None:
    duo(world, "A")
    assert world.fleet("start", "duo", "--no-attach").returncode == 0
    # No LAYOUT, no --socket, no default layout: the one fleet that runs, on whichever socket.
    status = world.fleet("status", socket=False)
    assert status.returncode == 0, status.stderr
    assert status.stdout.startswith(f"Fleet 'duo' (socket {world.socket})")
    # Named as `fleet status` shows it (its session), not by its layout file.
    (world.project / "tmuxinator" / "duo.yml").rename(world.project / "tmuxinator" / "renamed.yml")
    by_session = world.fleet("status", "duo", socket=False)
    assert by_session.returncode == 0, by_session.stderr
    (world.project / "tmuxinator" / "renamed.yml").rename(world.project / "tmuxinator" / "duo.yml")
    # The fleet remembers its layout file: restart needs no LAYOUT.
    restart = world.fleet("restart", socket=False)
    assert restart.returncode == 0, restart.stdout + restart.stderr

    duo(world, "Z", name="solo")
    second = world.fleet("start", "solo", "--no-attach", "--socket", world.socket + "-2", socket=False)
    try:
        assert second.returncode == 0, second.stderr
        several = world.fleet("status", socket=False)
        assert several.returncode == 2
        assert several.stderr.strip() == (
            f"fleet: error: 2 fleets are running: duo (socket {world.socket}), solo (socket {world.socket}-2); "
            "name one, e.g. fleet status duo"
        )
        assert world.fleet("stop", "solo", socket=False).returncode == 0
    finally:
        world.tmux("kill-server", check=False, socket=world.socket + "-2")
    assert world.fleet("stop", socket=False).returncode == 0
    nothing = world.fleet("status", socket=False)
    assert (nothing.returncode, nothing.stderr.strip()) == (
        3,
        "fleet: error: no fleet is running; start one: fleet start LAYOUT",
    )
    assert world.fleet("stop", socket=False).stdout == "No fleet is running; nothing to stop.\n"


# --------------------------------------------------------------------------- one verb at a time


HOLD = textwrap.dedent("""
    import sys
    from claude_shepherd.fleet.lock import fleet_lock
    with fleet_lock(sys.argv[1], "fleet test-holder"):
        print("held", flush=True)
        sys.stdin.readline()  # until the test lets go
""")


def _hold(world: FleetWorld) -> subprocess.Popen[str]:
    """Another process holding the fleet's lock until its stdin gets a line (or it is killed)."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD, world.socket], env=world.env,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def test_the_fleet_lock_excludes_another_process_and_a_waiting_verb_says_for_whom(world: FleetWorld) -> None:
    duo(world, "A")
    holder = _hold(world)
    try:
        refused = world.fleet("start", "duo", "--no-attach", env={"FLEET_LOCK_TIMEOUT": "0.5"})
        assert refused.returncode == 1
        assert refused.stdout.splitlines() == [
            f"Waiting for fleet test-holder (pid {holder.pid}) to finish with socket {world.socket} (up to 0.5s)..."
        ]
        assert re.fullmatch(
            rf"fleet: error: fleet test-holder \(pid {holder.pid}\) has been changing the fleet on "
            rf"socket {world.socket} for over \d+s; wait for it to finish \(or set FLEET_LOCK_TIMEOUT "
            r"to wait longer\) and try again\n",
            refused.stderr,
        ), refused.stderr
        assert not world.server_alive()  # nothing was built behind the holder's back
    finally:
        holder.kill()
        holder.wait()
    # The kernel dropped the killed holder's lock: the next verb goes straight through.
    done = world.fleet("start", "duo", "--no-attach", env={"FLEET_LOCK_TIMEOUT": "0.5"})
    assert done.returncode == 0, done.stderr
    assert "Waiting for" not in done.stdout


def test_a_verb_waits_for_the_holder_and_then_acts(world: FleetWorld) -> None:
    duo(world, "A")
    holder = _hold(world)
    waiting = subprocess.Popen([str(BIN / "fleet"), "start", "duo", "--no-attach", "--socket", world.socket],
                               cwd=world.project, env=world.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert waiting.stdout is not None
        assert waiting.stdout.readline().startswith("Waiting for fleet test-holder")
        assert not world.server_alive()  # it waits: nothing built yet
        assert holder.stdin is not None
        holder.stdin.write("done\n")
        holder.stdin.flush()
        out, err = waiting.communicate(timeout=60)
    finally:
        holder.kill()
        holder.wait()
        waiting.kill()
        waiting.wait()
    assert waiting.returncode == 0, err
    assert "agents:A  started, running" in out


def _fleet_whole_or_gone(world: FleetWorld, labels: tuple[str, ...]) -> str:
    """'whole' (every agent running, one pane per label) or 'gone' (no server, no process); else raise."""
    if world.server_alive() and world.tmux("list-sessions", "-F", "#{session_name}", check=False):
        panes = world.panes()
        assert sorted(panes) == sorted(labels), panes
        wait_until(lambda: world.fleet("status", "duo").returncode == 0, 10, "every agent running")
        return "whole"
    assert not [p for p in world.leftovers() if "claude-run" in " ".join(p.cmdline())], "agents left behind"
    return "gone"


ROUNDS = 8
"""Rounds of the three verbs at once, each in the order the scheduler gives it (20 rounds took 3.5 minutes of
the suite on a loaded two-core machine)."""


def test_two_starts_and_a_stop_at_once_never_lose_the_fleet(world: FleetWorld) -> None:
    labels = ("A", "B")
    duo(world, *labels)
    outcomes: list[str] = []
    for _ in range(ROUNDS):
        results: dict[str, subprocess.CompletedProcess[str]] = {}

        def run(key: str, *args: str) -> None:
            results[key] = world.fleet(*args, env={"FLEET_STOP_GRACE": "3"})  # noqa: B023 (joined in this round)

        threads = [threading.Thread(target=run, args=("start1", "start", "duo", "--no-attach")),
                   threading.Thread(target=run, args=("start2", "start", "duo", "--no-attach")),
                   threading.Thread(target=run, args=("stop", "stop", "duo"))]  # fmt: skip
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(90)
        for key, done in results.items():
            assert done.returncode == 0, f"{key}: {done.stdout}{done.stderr}"
            assert "Traceback" not in done.stderr
        outcomes.append(_fleet_whole_or_gone(world, labels))
        assert world.fleet("stop", "duo").returncode == 0
        assert _fleet_whole_or_gone(world, labels) == "gone"
    assert len(outcomes) == ROUNDS


def test_a_running_fleet_without_the_death_alert_gets_it_from_fleet_start(world: FleetWorld) -> None:
    duo(world, "A")
    assert world.fleet("start", "duo", "--no-attach").returncode == 0
    world.tmux("set-hook", "-gu", "pane-died[42]")  # a fleet built before its agents' deaths were alerts
    assert "claude-hook" not in world.tmux("show-hooks", "-g", "pane-died")
    assert world.fleet("start", "duo", "--no-attach").returncode == 0
    assert "pane-died" in world.tmux("show-hooks", "-g", "pane-died")
    assert "pane-died" in world.tmux("show-hooks", "-g", "pane-died").split("run-shell", 1)[1]


def test_a_fleet_started_by_an_agent_gives_its_agents_nothing_of_the_callers_identity(
    world: FleetWorld,
) -> None:
    duo(world, "A")
    elsewhere = world.base / "other-project" / "sessions"
    caller = {"CLAUDECODE": "1", "CLAUDE_CODE_ENTRYPOINT": "cli", "CLAUDE_SUPERVISOR_PID": "4242",
              "CLAUDE_PID": "4444", "WATCHDOG_PID": "4343", "CLAUDE_SESSIONS_DIR": str(elsewhere)}  # fmt: skip
    assert world.fleet("start", "duo", "--no-attach", env=caller).returncode == 0
    (start,) = world.wait_starts("A", 1)
    env = start["env"]
    assert "CLAUDECODE" not in env and "CLAUDE_CODE_ENTRYPOINT" not in env, "Claude refuses to start nested"
    assert env["CLAUDE_SUPERVISOR_PID"] == world.panes()["A"]["pane_pid"]
    assert env.get("CLAUDE_PID") != "4444" and env.get("WATCHDOG_PID") != "4343"
    assert env["CLAUDE_SESSIONS_DIR"] == str(world.project / "sessions"), "the fleet's own sessions root"


def test_doctor_fix_decides_under_the_locks_of_the_fleets_it_repairs(world: FleetWorld) -> None:
    duo(world, "A")
    assert world.fleet("start", "duo", "--no-attach").returncode == 0
    holder = _hold(world)
    try:
        refused = world.fleet("doctor", "duo", "--fix", env={"FLEET_LOCK_TIMEOUT": "0.5"})
    finally:
        holder.kill()
        holder.wait()
    assert refused.returncode == 1
    assert "has been changing the fleet" in refused.stderr, refused.stderr
    assert "fixed:" not in refused.stdout


def test_a_name_that_is_a_layout_file_and_another_running_fleet_is_refused(world: FleetWorld) -> None:
    duo(world, "A", name="x")  # tmuxinator/x.yml runs fleet 'x' ...
    assert world.fleet("start", "x", "--no-attach").returncode == 0
    world.layout("y", "  - w:\n      panes:\n        - B: claude-run\n")
    (world.project / "tmuxinator" / "y.yml").rename(world.project / "tmuxinator" / "x-file.yml")
    (world.project / "tmuxinator" / "x.yml").rename(world.project / "tmuxinator" / "x-real.yml")
    (world.project / "tmuxinator" / "x-file.yml").rename(
        world.project / "tmuxinator" / "x.yml"
    )  # ... x.yml: fleet 'y'
    stop = world.fleet("stop", "x", socket=False)
    assert stop.returncode == 2, stop.stdout + stop.stderr
    assert "is both the layout" in stop.stderr and "--socket" in stop.stderr
    assert world.fleet("status", "x", "--socket", world.socket, socket=False).returncode == 0
    assert world.server_alive(), "nothing was stopped on a guess"


def test_a_socket_name_that_leads_out_of_tmuxs_folder_is_refused(world: FleetWorld) -> None:
    for name in ("fleet-x/../../escape", "fleet-..", "fleet-a b"):
        done = world.fleet("status", "--socket", name, socket=False)
        assert done.returncode != 0 and "Traceback" not in done.stderr, (name, done.stderr)
        assert "not a fleet socket" in done.stderr, done.stderr
    assert not list(world.tmux_tmpdir.rglob("*escape*"))


def test_restart_says_why_the_recorded_layout_cannot_be_used(world: FleetWorld) -> None:
    path = duo(world, "A")
    assert world.fleet("start", "duo", "--no-attach").returncode == 0
    path.write_text(path.read_text().replace("name: duo", "name: renamed"))
    done = world.fleet("restart", socket=False)
    assert done.returncode == 2
    assert f"its recorded layout {path} now names fleet 'renamed'" in done.stderr, done.stderr
