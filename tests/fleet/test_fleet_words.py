"""What the fleet's verbs tell a person: counts of agents, attaching from inside another tmux, layout errors.

Every test runs the real ``fleet`` console script against its own tmux world
(see ``support.fleet``); panes run the real ``claude-run`` with the stand-in Claude.
"""

from __future__ import annotations

import re
import typing as t

from support.claude_run import wait_until
from support.fleet import FleetWorld, world  # noqa: F401  (fixture)


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
    assert "  Asked 2 agents to stop (SIGTERM to each claude-run); waiting up to 5s\n" in stop.stdout, stop.stdout
    supervisors = re.findall(r"stopped: supervisor ([\d, ]+) exited", stop.stdout)
    assert len(supervisors) == 2 and all("," not in pids for pids in supervisors), stop.stdout
    assert world.leftovers() == []
