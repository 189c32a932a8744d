"""What the fleet's verbs tell a person: counts of agents, attaching from inside another tmux, layout errors.

Every test runs the real ``fleet`` console script against its own tmux world
(see ``support.fleet``); panes run the real ``claude-run`` with the stand-in Claude.
"""

from __future__ import annotations

import re
import stat
import threading
from pathlib import Path

from support.fleet import BIN, FleetWorld
from support.waiting import wait_until

from claude_shepherd.supervisor.claude_run.run_log import log_path


def start(world: FleetWorld, *labels: str) -> None:
    """Fleet 'duo', one waiting stand-in agent per label, each running."""
    panes = "".join(f"        - {label}: claude-run\n" for label in labels)
    world.layout("duo", f"  - agents:\n      layout: tiled\n      panes:\n{panes}")
    for label in labels:
        world.plan(label, [{"mark": "ready"}, {"wait": None}])
    started = world.fleet("start", "duo", "--no-attach")
    assert started.returncode == 0, started.stdout + started.stderr
    for label in labels:
        world.wait_event(label, "mark", name="ready")


def test_stop_counts_agents_not_their_watchdogs(world: FleetWorld) -> None:
    start(world, "A", "B")
    stop = world.fleet("stop", "--grace", "5")
    assert stop.returncode == 0, stop.stdout + stop.stderr
    assert "  Asked 2 agents to stop (SIGTERM to each claude-run); waiting up to 5s\n" in stop.stdout, (
        stop.stdout
    )
    supervisors = re.findall(r"stopped: supervisor ([\d, ]+) exited", stop.stdout)
    assert len(supervisors) == 2 and all("," not in pids for pids in supervisors), stop.stdout
    assert world.leftovers() == []


def pane_log(world: FleetWorld, label: str, session: str = "duo", window: str = "agents") -> Path:
    """Where claude-run keeps pane *label*'s lines: the user's state folder (the test's own HOME)."""
    return log_path(world.socket, f"{session}:{window}:{label}", {"HOME": str(world.home)})


def test_claude_runs_own_lines_outlive_the_screen_and_fleet_logs_shows_both(world: FleetWorld) -> None:
    world.layout("duo", "  - agents:\n      panes:\n        - A: claude-run\n")
    world.plan("A", [{"exit": 3}], [{"mark": "ready"}, {"wait": None}])
    assert world.fleet("start", "duo", "--no-attach").returncode == 0
    world.wait_event("A", "mark", name="ready")
    path = pane_log(world, "A")
    wait_until(lambda: "starting it again" in path.read_text(), 10, "the crash in the pane's log")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    first = path.read_text().splitlines()
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d[+-]\d{4} \[claude-run\] Fleet pane ID: duo:agents:A", first[0]
    )
    assert any(line.endswith("[claude-run] Starting...") for line in first)
    assert any("[claude-run] Claude exited with status 3 after" in line for line in first)

    # A respawn clears the screen; the log keeps what the first claude-run said.
    pane = world.panes()["A"]["pane_id"]
    world.tmux("respawn-pane", "-k", "-t", pane)
    world.tmux("clear-history", "-t", pane)
    wait_until(
        lambda: path.read_text().count("Fleet pane ID") == 2, 10, "the second claude-run's start in the log"
    )
    wait_until(lambda: "Starting..." in world.capture("A"), 10, "the second claude-run on the screen")
    assert "exited with status 3" not in world.capture("A")

    logs = world.fleet("logs", "duo", "--pane", "A", "-n", "40", "--socket", world.socket, socket=False)
    assert logs.returncode == 0, logs.stderr
    out = logs.stdout.splitlines()
    heading = out.index(
        f"==> claude-run's log of duo:agents:A: {path} (last {len(path.read_text().splitlines())} lines) <=="
    )
    screen = next(i for i, line in enumerate(out) if line.startswith("==> the screen of duo:agents:A (%"))
    assert heading == 0 < screen
    assert any("Claude exited with status 3 after" in line for line in out[heading:screen])
    assert any(line == "[claude-run] Starting..." for line in out[screen:])

    # -f follows the log too: the next claude-run's lines arrive as they are written.
    follow = world.follow_logs("duo", "--pane", "A")
    deadline = threading.Timer(20, follow.kill)  # a line that never comes ends the read, not the test run
    deadline.start()
    try:
        assert follow.stdout is not None
        lines = iter(follow.stdout.readline, "")
        assert any(line.startswith("==> the screen of") for line in lines)
        world.tmux("respawn-pane", "-k", "-t", pane)
        logged = next(
            (line for line in lines if re.match(r"\d{4}-\S+ \S+ \[claude-run\] Fleet pane ID", line)), None
        )
        assert logged is not None and path.read_text().count("Fleet pane ID") == 3
        assert logged in path.read_text()
    finally:
        deadline.cancel()
        follow.kill()
        follow.wait()


def test_a_missing_root_is_blamed_on_the_root_that_set_it(world: FleetWorld) -> None:
    path = world.layout(
        "duo",
        "  - a: claude-run\n  - b:\n      root: nowhere\n      panes:\n        - B: claude-run\n",
        extra="root: /nonexistent/project\n",
    )
    started = world.fleet("start", "duo", "--no-attach")
    assert started.returncode == 1
    assert started.stderr == (
        f"fleet: error: {path}:3: root: /nonexistent/project is not a directory; "
        "create it or change the layout's root:\n"
    )
    path.write_text(path.read_text().replace("root: /nonexistent/project\n", ""))
    started = world.fleet("start", "duo", "--no-attach")
    assert started.returncode == 1
    assert started.stderr == (
        f"fleet: error: {path}:6: windows[1].b.root: {world.project / 'nowhere'} is not a "
        "directory; create it or change the window's root:\n"
    )
    assert not world.server_alive()


def test_a_yaml_syntax_error_is_one_line_naming_file_line_and_column(world: FleetWorld) -> None:
    path = world.layout("duo", "  - agents:\n      panes:\n        - A: claude-run\n       - B: claude-run\n")
    started = world.fleet("start", "duo", "--no-attach")
    assert started.returncode == 1 and started.stdout == ""
    assert started.stderr == (
        f"fleet: error: {path}:7:8: YAML syntax: this line is indented differently from the "
        "lines it belongs with; line it up with them (the '- ' of one list in one column, the "
        "keys of one mapping in one column)\n"
    )


def test_attach_from_inside_another_tmux_attaches_there_as_the_watch_does(world: FleetWorld) -> None:
    start(world, "A", "B")
    outer = f"outer-{world.socket}"  # not a fleet socket; in the test's own TMUX_TMPDIR like the fleet's
    done = world.dir / "attach.rc"
    command = f"{BIN / 'fleet'} attach duo --pane B --socket {world.socket}; echo $? > {done}; sleep 600"
    try:
        world.tmux(
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "mine",
            "-x",
            "120",
            "-y",
            "40",
            "-c",
            str(world.project),
            command,
            socket=outer,
        )
        clients = lambda: world.tmux("list-clients", "-F", "#{client_session}", check=False)  # noqa: E731
        try:
            wait_until(lambda: clients() == "duo", 15, "a client of the fleet's tmux in the outer pane")
        except AssertionError:
            raise AssertionError(world.tmux("capture-pane", "-p", "-t", "mine", socket=outer)) from None
        assert world.panes()["B"]["pane_active"] == "1"
        screen = world.tmux("capture-pane", "-p", "-t", "mine", socket=outer)
        assert "Inside another tmux" not in screen and "Attach with:" not in screen
        world.tmux("detach-client", "-s", "duo")
        assert wait_until(
            lambda: done.is_file() and done.read_text().strip() == "0", 10, "fleet attach to return"
        )
    finally:
        world.tmux("kill-server", check=False, socket=outer)


def test_start_restart_and_stop_say_what_they_did_as_json(world: FleetWorld) -> None:
    """``--json``: the lines a person reads, and the verb's report beside them: each pane's outcome."""
    import json

    world.layout("duo", "  - agents:\n      panes:\n        - A: claude-run\n        - B: claude-run\n")
    world.plan("A", [{"mark": "ready"}, {"wait": None}], [{"mark": "again"}, {"wait": None}])
    world.plan("B", [{"mark": "ready"}, {"wait": None}])
    started = world.fleet("start", "duo", "--no-attach", "--json")
    assert started.returncode == 0, started.stdout + started.stderr
    answer = json.loads(started.stdout)
    assert answer["exit_code"] == 0 and answer["error"] is None
    report = answer["report"]
    assert report["verb"] == "start" and report["fleet"] == "duo" and not report["reconciled"]
    assert {p["name"]: (p["action"], p["running"]) for p in report["panes"]} == {
        "agents:A": ("started", True),
        "agents:B": ("started", True),
    }
    assert any(line.startswith("  agents:A  started, running (") for line in answer["lines"]), answer
    world.wait_event("A", "mark", name="ready")

    restarted = json.loads(world.fleet("restart", "duo", "--pane", "A", "--grace", "5", "--json").stdout)
    assert restarted["exit_code"] == 0, restarted
    report = restarted["report"]
    assert report["verb"] == "restart" and report["stopped"]["labels"] == ["A"]
    assert [p["name"] for p in report["stopped"]["panes"]] == ["duo:agents:A"]
    assert [(p["name"], p["action"], p["running"]) for p in report["started"]["panes"]] == [
        ("agents:A", "respawned", True)
    ]
    world.wait_event("A", "mark", name="again")

    stopped = json.loads(world.fleet("stop", "duo", "--grace", "5", "--json").stdout)
    assert stopped["exit_code"] == 0, stopped
    report = stopped["report"]
    assert report["verb"] == "stop" and report["sessions"] == ["duo"] and report["survivors"] == []
    assert sorted(p["name"] for p in report["panes"]) == ["duo:agents:A", "duo:agents:B"]
    assert all(p["action"].startswith("stopped: supervisor ") for p in report["panes"]), report
    assert stopped["lines"][-1].endswith("no process of the fleet is left."), stopped
    assert world.leftovers() == []

    again = json.loads(world.fleet("stop", "duo", "--json").stdout)
    assert again["exit_code"] == 0 and again["report"]["nothing"] == again["lines"][-1], again
