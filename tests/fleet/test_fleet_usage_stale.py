"""A usage reading or mark that no longer holds is not shown nor waited for: an agent that went on is
not `limited`, a reading past its reset is none, and a person can clear one (`fleet usage --clear`).

Real ``fleet`` verbs on a private tmux server, the real ``claude-run`` in each pane with the stand-in
Claude feeding the real hooks what Claude Code sends.
"""

from __future__ import annotations

import json
import time
import typing as t

import pytest
from support.fleet import FleetWorld
from support.waiting import wait_until

from claude_shepherd.supervisor.session import usage_windows

pytestmark = pytest.mark.slow  # a real tmux fleet

WAIT = [{"mark": "ready"}, {"wait": None}]
DUO = "  - agents:\n      panes:\n        - A: claude-run\n        - B: claude-run\n"


def hook(world: FleetWorld, event: str, **data: t.Any) -> dict[str, t.Any]:
    return {"run": ["claude-hook", event], "stdin": json.dumps({"session_id": "conv-1", "cwd": str(world.project),
                                                                   **data})}  # fmt: skip


def rows(world: FleetWorld) -> dict[str, dict[str, t.Any]]:
    done = world.fleet("status", "--json")
    return {row["label"]: row for row in json.loads(done.stdout)}


def test_an_agent_that_went_on_is_not_shown_limited_and_a_past_reading_is_none(world: FleetWorld) -> None:
    """A parked agent's mark stands until its reset (and a grace after): Claude going on before that (a
    person's prompt after an early reset) left its running row `limited` for up to 15 minutes."""
    world.layout("duo", DUO)
    reset = time.time() + 3600
    limit = {"five_hour": {"used_percentage": 100, "resets_at": reset}}
    world.plan("A", [hook(world, "status-line", rate_limits=limit),
                     hook(world, "stop-failure", error="rate_limit",
                          last_assistant_message="You've hit your limit"),
                     {"mark": "limited"}, {"wait_file": str(world.base / "go-on"), "timeout": 60},
                     hook(world, "user-prompt-submit", prompt="go on, please"), *WAIT])  # fmt: skip
    world.plan("B", WAIT)
    started = world.fleet("start", "duo", "--no-attach", "--wait", "0", env={"CLAUDE_USAGE_IGNORE": "1"})
    assert started.returncode == 0, started.stdout + started.stderr
    wait_until(lambda: world.events("A", "mark") or None, 20, "A limited")
    wait_until(lambda: rows(world)["A"]["state"] == "limited" or None, 10, "A's pane limited")
    assert rows(world)["A"]["limited_until"] == pytest.approx(reset, abs=0.01)
    (world.base / "go-on").touch()
    wait_until(lambda: len(world.events("A", "mark")) >= 2 or None, 20, "A's prompt")
    row = wait_until(lambda: (r := rows(world)["A"])["state"] == "working" and r, 10, "A working")
    assert row["limited_until"] is None, "a running agent shown limited until an old reset"
    assert "limited" not in world.fleet("status", "duo").stdout

    past = {"seven_day": {"used_percentage": 100, "resets_at": time.time() + 2}}
    usage_windows.note_reading(world.project / "sessions", str(world.config), past)
    assert "seven_day" in rows(world)["A"]["usage_windows"]
    time.sleep(2.5)
    assert "seven_day" not in rows(world)["A"]["usage_windows"], "a reading past its reset shown as the use"


def test_fleet_usage_clear_lets_the_agents_a_reading_holds_go_on(world: FleetWorld) -> None:
    world.layout("duo", DUO)
    reading = {"five_hour": {"used_percentage": 97, "resets_at": time.time() + 3600}}
    usage_windows.note_reading(world.project / "sessions", str(world.config), reading)
    world.plan("A", WAIT)
    world.plan("B", WAIT)
    started = world.fleet("start", "duo", "--no-attach", "--wait", "0")
    assert started.returncode == 0, started.stdout + started.stderr
    wait_until(lambda: all(rows(world)[label]["limited_until"] for label in "AB") or None, 20, "both parked")
    listed = world.fleet("usage", "duo")
    assert listed.returncode == 0 and "five_hour 97%" in listed.stdout, listed.stdout + listed.stderr
    assert "holds duo:agents:A, duo:agents:B" in listed.stdout, listed.stdout
    assert world.starts("A") == []

    wrong = world.fleet("usage", "duo", "--clear", "~/nothing")
    assert wrong.returncode == 1 and "no reading of '~/nothing' is kept" in wrong.stderr, wrong.stderr
    cleared = world.fleet("usage", "duo", "--clear", str(world.config))
    assert cleared.returncode == 0, cleared.stdout + cleared.stderr
    assert "2 agent(s) it held go on" in cleared.stdout, cleared.stdout
    wait_until(
        lambda: world.starts("A") and world.starts("B"), 20, "both agents once the reading was cleared"
    )
    assert usage_windows.read_credential(world.project / "sessions", str(world.config)) is None
    panes = {row["label"]: row["pane"] for row in rows(world).values()}
    for label in "AB":
        state = world.tmux("show-options", "-p", "-v", "-t", panes[label], "@pane_notify", check=False)
        assert state != "limited", f"{label}'s border still limited once its Claude started"
