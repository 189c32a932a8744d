"""Starting agents into a window at its threshold: waiting for it is no failure.

`fleet start` and `fleet restart` waited for the agents' Claude, which their claude-run holds until the
window reopens, then ended NOT RUNNING, exit 1, "fix the cause and run fleet start again", a command that
then said "Nothing to do". Real ``fleet`` verbs, the real ``claude-run`` in each pane, the stand-in Claude.
"""

from __future__ import annotations

import json
import re
import time

import pytest
from support.fleet import FleetWorld
from support.waiting import wait_until

from claude_shepherd.supervisor.session import usage_windows
from claude_shepherd.supervisor.session.usage_windows import clock

pytestmark = pytest.mark.slow  # a real tmux fleet

WAIT = [{"mark": "ready"}, {"wait": None}]
DUO = "  - agents:\n      panes:\n        - A: claude-run\n        - B: claude-run\n"


def test_start_and_restart_into_a_held_window_say_it_waits_and_until_when_and_succeed(
    world: FleetWorld,
) -> None:
    world.layout("duo", DUO)
    reset = time.time() + 3600
    usage_windows.note_reading(world.project / "sessions", str(world.config),
                               {"five_hour": {"used_percentage": 97, "resets_at": reset}})  # fmt: skip
    world.plan("A", WAIT)
    world.plan("B", WAIT)
    zone = time.strftime("%Z", time.localtime(reset))
    waits = f"waiting for the 5-hour window until {clock(reset)} ({zone})"

    started = world.fleet("start", "duo", "--no-attach", env={"FLEET_START_WAIT": "30"})
    said = started.stdout + started.stderr
    assert started.returncode == 0, said
    assert f"agents:A  started, {waits}" in said and f"agents:B  started, {waits}" in said, said
    assert "NOT RUNNING" not in said and "fix the cause" not in said, said

    rows = {row["label"]: row for row in json.loads(world.fleet("status", "--json").stdout)}
    assert rows["A"]["limited_until"] == pytest.approx(reset, abs=0.01)
    assert f"limited until {clock(reset)}" in world.fleet("status", "duo").stdout
    wait_until(lambda: "limited" in world.tmux("show-options", "-p", "-v", "-t", rows["A"]["pane"], "@pane_notify"),
               10, "A's border limited")  # fmt: skip

    again = world.fleet("start", "duo", "--no-attach")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Nothing to do: every agent is running or waiting for a usage window" in again.stdout, again.stdout
    assert re.search(rf"agents:A  running \(pid \d+\), {re.escape(waits)}", again.stdout), again.stdout

    restarted = world.fleet("restart", "duo", "--pane", "A", env={"FLEET_START_WAIT": "30"})
    said = restarted.stdout + restarted.stderr
    assert restarted.returncode == 0, said
    assert f", {waits}" in said and "NOT RUNNING" not in said, said
    assert world.starts("A") == [] and world.starts("B") == []
