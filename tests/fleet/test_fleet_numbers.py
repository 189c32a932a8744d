"""What an agent writes into its pane cannot break the operator's view: numbers it sets in pane options
or its environment cost only their own field, and a process naming a pane in its environment is not that
pane's member. Real tmux, the real claude-run, the stand-in Claude."""

from __future__ import annotations

import json
import subprocess
import sys
import typing as t

import psutil
import pytest
from support.fleet import FleetWorld
from support.waiting import wait_until

HOSTILE = ["²", "٣", "-1", " 2", "1_0", "nan", "inf", "1e3", "9" * 40]
"""What ``isdigit``/``int``/``float`` let through or choke on; none of it is a number we believe."""


def start_agents(world: FleetWorld, *labels: str) -> None:
    """Fleet 'duo', one stand-in agent per label, each running."""
    panes = "".join(f"        - {label}: claude-run\n" for label in labels)
    world.layout("duo", f"  - agents:\n      layout: tiled\n      panes:\n{panes}")
    for label in labels:
        world.plan(label, [{"mark": "ready"}, {"wait": None}])
    assert world.fleet("start", "duo", "--no-attach").returncode == 0
    for label in labels:
        world.wait_event(label, "mark", name="ready")


def decoy_supervisor(world: FleetWorld, pane_label: str, **env: str) -> subprocess.Popen[bytes]:
    """A process outside every pane that looks like a claude-run and names *pane_label*'s pane in its env."""
    script = world.base / "claude-run"
    script.write_text("import time\ntime.sleep(600)\n")
    return subprocess.Popen([sys.executable, str(script)], env={**world.env, **world.pane_env(pane_label), **env},
                            stdin=subprocess.DEVNULL)  # fmt: skip


def status_rows(world: FleetWorld) -> dict[str, dict[str, t.Any]]:
    done = world.fleet("status", "--json")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return {row["label"]: row for row in json.loads(done.stdout)}


def test_a_number_an_agent_wrote_in_its_pane_costs_only_that_field(
    world: FleetWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    from claude_shepherd.fleet import watch as w

    start_agents(world, "A", "B")
    a = world.panes()["A"]["pane_id"]
    monkeypatch.setenv("TMUX_TMPDIR", str(world.tmux_tmpdir))
    for turn in range(3):  # every hostile value in every option, three at a time
        values = HOSTILE[turn::3]
        for option, raw in zip(("@pane_restarts", "@pane_cost", "@pane_context"), values):
            world.tmux("set-option", "-p", "-t", a, option, raw)
        rows = status_rows(world)
        assert (rows["A"]["restarts"], rows["A"]["cost_usd"], rows["A"]["context_usage"]) == (
            None,
            None,
            None,
        ), values
        assert rows["A"]["supervisor_alive"] and rows["B"]["restarts"] == 0, (
            "the rest of the row, and the other rows"
        )
        assert {row.status.label for row in w.gather().rows} == {"A", "B"}, "the watch shows the whole fleet"
    table = world.fleet("status")
    assert table.returncode == 0 and "2 pane(s)" in table.stdout, table.stderr


def test_doctor_survives_a_supervisor_pid_that_is_not_a_number(world: FleetWorld) -> None:
    start_agents(world, "A")
    planted = [subprocess.Popen(["sleep", "600"], env={**world.env, **world.pane_env("A"),
                                                       "CLAUDE_SUPERVISOR_PID": raw}, stdin=subprocess.DEVNULL)
               for raw in ("²", "٣", "99999999999999999999999")]  # fmt: skip
    try:
        done = world.fleet("doctor", "duo")
        assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr
        assert done.stdout.strip(), "doctor reported"
        assert all(proc.poll() is None for proc in planted), "and ended nothing without --fix"
    finally:
        for proc in planted:
            proc.kill()
            proc.wait()


def test_a_process_naming_a_pane_in_its_environment_is_not_its_member(world: FleetWorld) -> None:
    """Membership is descent from the pane's process: a decoy claude-run carrying pane A's TMUX_PANE is
    neither A's supervisor in status nor stopped with A, and what A really ran still ends."""
    start_agents(world, "A", "B")
    stopped = world.fleet("stop", "duo", "--pane", "A", "--grace", "5")
    assert stopped.returncode == 0, stopped.stderr
    decoy = decoy_supervisor(world, "A")
    try:
        wait_until(
            lambda: psutil.Process(decoy.pid).cmdline()[1:] == [str(world.base / "claude-run")], 5, "decoy"
        )
        rows = status_rows(world)
        assert (rows["A"]["supervisor_pid"], rows["A"]["supervisor_alive"]) == (None, False), rows["A"]
        assert rows["B"]["supervisor_alive"]
        b_supervisor = psutil.Process(int(world.panes()["B"]["pane_pid"]))
        again = world.fleet("stop", "duo", "--grace", "5")
        assert again.returncode == 0, again.stderr
        assert decoy.poll() is None, "a process outside the fleet's panes is never signalled"
        assert not b_supervisor.is_running() or b_supervisor.status() == psutil.STATUS_ZOMBIE
    finally:
        decoy.kill()
        decoy.wait()


def test_a_startup_window_that_only_looks_like_an_index_is_refused_in_one_line(world: FleetWorld) -> None:
    world.layout("duo", "  - agents:\n      panes:\n        - A: claude-run\n", extra='startup_window: "²"\n')
    done = world.fleet("start", "duo", "--no-attach")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert (
        "startup_window" in done.stderr and "names no window" in done.stderr and done.stderr.count("\n") == 1
    )
