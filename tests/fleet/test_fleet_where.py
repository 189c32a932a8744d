"""Where a fleet runs: a relative ``root:`` is from the folder the fleet first started in, and the fleet
stays there whatever folder it is started (or restarted, or reconciled) from, until it is forgotten.

Through the real ``fleet`` and ``claude-run``, with the stand-in Claude logging the folder it runs in.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

import pytest
from support.fleet import PER_PANE, FleetWorld, agent, resume_of
from support.waiting import wait_until

PANES = "  - agents:\n      panes:\n        - A: claude-run\n"


def crew(world: FleetWorld, where: str, root: str | None) -> Path:
    """The layout ``crew``, with *root* (or none), in the person's own folder or the project's."""
    folder = world.home / ".config" / "tmuxinator" if where == "own" else world.project / "tmuxinator"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "crew.yml"
    rooted = f"root: {root}\n" if root is not None else ""
    path.write_text(f"name: crew\n{rooted}pre_window: {json.dumps(PER_PANE)}\nwindows:\n{PANES}")
    return path


@pytest.mark.parametrize(("where", "root"), [("own", "."), ("project", None)])
def test_a_fleet_started_again_from_another_folder_starts_where_it_first_started(
    world: FleetWorld, where: str, root: str | None
) -> None:
    crew(world, where, root)
    elsewhere = world.base / "elsewhere"
    elsewhere.mkdir()
    project = str(world.project)
    world.plan("A", agent(label="A"), agent(label="A"), agent(label="A"), agent(label="A"))

    first = world.fleet("start", "crew", "--no-attach")
    assert first.returncode == 0, first.stdout + first.stderr
    world.wait_event("A", "mark", name="ready")
    assert f"Starting fleet 'crew' (socket {world.socket}) in {project}: 1 window, 1 pane" in first.stdout
    assert "first started" not in first.stdout, "nothing moved: nothing to say"
    assert world.fleet("stop", "crew").returncode == 0

    again = world.fleet("start", "crew", "--no-attach", cwd=elsewhere)
    out = again.stdout + again.stderr
    assert again.returncode == 0, out
    _, second = world.wait_starts("A", 2)
    assert second["cwd"] == project, "it ran in the folder it was started from this time"
    assert resume_of(second) == "conv-A", "its own conversation, resumed where it lives"
    assert f"(socket {world.socket}) in {project}: 1 window" in again.stdout, out
    written = root or "."
    assert (
        f"  root: {written} is read from {project}, where fleet 'crew' first started, not from {elsewhere}; "
        "to move it: fleet stop crew, fleet forget crew, then start it there"
    ) in again.stdout, out

    os.kill(int(world.panes()["A"]["pane_pid"]), signal.SIGKILL)  # a dead agent: respawned from elsewhere
    wait_until(lambda: world.panes()["A"]["pane_dead"] == "1", 15, "A's pane to die")
    added = world.fleet("start", "crew", "--no-attach", cwd=elsewhere)
    assert added.returncode == 0 and f"is running (socket {world.socket}) in {project};" in added.stdout, (
        added.stdout + added.stderr
    )
    *_, third = world.wait_starts("A", 3)
    assert third["cwd"] == project

    restarted = world.fleet("restart", "crew", cwd=elsewhere)
    assert restarted.returncode == 0, restarted.stdout + restarted.stderr
    *_, fourth = world.wait_starts("A", 4)
    assert fourth["cwd"] == project and resume_of(fourth) == "conv-A"

    assert world.fleet("stop", "crew").returncode == 0
    assert world.fleet("forget", "crew").returncode == 0
    if where == "own":  # a name in the person's folders is found from anywhere; forgotten, it starts here
        moved = world.fleet("start", "crew", "--no-attach", cwd=elsewhere)
        assert moved.returncode == 0 and f"in {elsewhere}: 1 window" in moved.stdout, moved.stdout
        *_, fifth = wait_until(lambda: len(s := world.starts("A")) >= 5 and s, 30, "A's fifth start")
        assert fifth["cwd"] == str(elsewhere)


def test_a_fleet_whose_first_folder_is_gone_is_not_started_elsewhere_unasked(world: FleetWorld) -> None:
    crew(world, "own", ".")
    gone = world.base / "gone"
    gone.mkdir()
    world.plan("A", agent(label="A"))
    assert world.fleet("start", "crew", "--no-attach", cwd=gone).returncode == 0
    world.wait_event("A", "mark", name="ready")
    assert world.fleet("stop", "crew").returncode == 0
    shutil.rmtree(gone)  # the sessions the agent kept there went with it

    refused = world.fleet("start", "crew", "--no-attach")
    assert refused.returncode == 1 and refused.stdout == "", refused.stdout
    assert refused.stderr == (
        f"fleet: error: fleet 'crew' first started in {gone}, which is no longer a folder; create it, or "
        "`fleet forget crew` to start it from where you are\n"
    )
    assert len(world.starts("A")) == 1
