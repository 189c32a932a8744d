"""A fleet is known by its name until it is forgotten: after a stop, `fleet start NAME` finds the layout
file it was started from wherever that lies; `fleet ls` lists the fleets started here; `fleet forget`
lets go of a name, or of a host that never answered."""

from __future__ import annotations

import json
import re

from support.fleet import FleetWorld, agent, resume_of
from support.waiting import wait_until


def test_a_stopped_fleet_is_started_again_by_its_name_listed_and_forgotten(world: FleetWorld) -> None:
    elsewhere = world.project / "layouts" / "crew.yml"  # not where names are looked up
    elsewhere.parent.mkdir()
    world.layout("crew", "  - agents:\n      panes:\n        - A: claude-run\n").rename(elsewhere)
    world.plan("A", agent(label="A"))
    assert world.fleet("start", str(elsewhere), "--no-attach").returncode == 0
    world.wait_event("A", "mark", name="ready")

    listed = json.loads(world.fleet("ls", "--json").stdout)
    assert len(listed[0].pop("digest")) == 64, "the layout's hash, as it started"
    assert listed == [{"name": "crew", "socket": world.socket, "layout": str(elsewhere), "hosts": ["local"],
                       "agents": 1, "folder": str(world.project), "wanted": True, "state": "running"}]  # fmt: skip
    assert world.fleet("forget", "crew").returncode == 1, "a running fleet is not forgotten"

    assert world.fleet("stop", "crew").returncode == 0
    assert json.loads(world.fleet("ls", "--json").stdout)[0]["wanted"] is False, "a person stopped it"
    table = world.fleet("ls").stdout.splitlines()
    assert re.match(r"NAME +STATE +AGENTS +HOSTS +LAYOUT$", table[0]), table
    assert re.match(rf"crew \({world.socket}\) +stopped +1 +local +{re.escape(str(elsewhere))}$", table[1])

    again = world.fleet("start", "crew", "--no-attach")  # by name: what every message calls it
    assert again.returncode == 0, again.stdout + again.stderr
    _, second = wait_until(lambda: len(s := world.starts("A")) >= 2 and s, 30, "A's second start")
    assert resume_of(second) == "conv-A", "its own conversation, resumed"
    assert world.fleet("stop", "crew").returncode == 0

    forgot = world.fleet("forget", "crew")
    assert forgot.returncode == 0, forgot.stderr
    assert (
        forgot.stdout
        == f"Forgot fleet 'crew' (layout {elsewhere}); its sessions and conversations are kept.\n"
    )
    gone = world.fleet("start", "crew", "--no-attach")
    assert gone.returncode == 1 and "no layout named 'crew'" in gone.stderr, gone.stderr
    assert "`fleet ls` lists the fleets started here" in gone.stderr
    assert world.fleet("ls").stdout == "No fleet has been started here; start one: fleet start LAYOUT\n"
    assert elsewhere.is_file() and (world.project / "sessions" / "S_A" / ".state.json").is_file()


def test_a_host_that_never_answered_is_not_kept_after_stop_nor_when_the_layout_is_corrected(
    world: FleetWorld,
) -> None:
    """No sshd needed: the host is a typo that never resolves, so no start ever reached it."""
    typo = "  - gpu:\n      host: nosuch.invalid\n      panes:\n        - T: claude-run\n"
    here = "  - agents:\n      panes:\n        - A: claude-run\n"
    world.layout("solo", "  - agents:\n      panes:\n        - S: claude-run\n")
    world.plan("S", [{"wait": None}])
    assert world.fleet("start", "solo", "--no-attach").returncode == 0
    path = world.layout("far", here + typo)
    world.plan("A", [{"wait": None}])
    far = world.fleet("start", "far", "--no-attach", env={"FLEET_HOST_TIMEOUT": "3"})
    assert far.returncode == 1 and "nosuch.invalid  UNREACHABLE: " in far.stdout, far.stdout

    path.write_text(path.read_text().replace(typo, ""))  # the typo corrected: the window taken out
    corrected = world.fleet("start", "far", "--no-attach", env={"FLEET_HOST_TIMEOUT": "3"})
    assert corrected.returncode == 0, corrected.stdout + corrected.stderr
    assert "nosuch.invalid" not in corrected.stdout, (
        "nothing ever ran there: the corrected layout replaces it"
    )
    assert world.fleet("stop", "far").returncode == 0

    path.write_text(path.read_text() + typo)  # the typo again, then a stop: it never answered
    world.fleet("start", "far", "--no-attach", env={"FLEET_HOST_TIMEOUT": "3"})
    stop = world.fleet("stop", "far", env={"FLEET_HOST_TIMEOUT": "3"})
    assert stop.returncode == 1 and "nosuch.invalid" in stop.stdout, stop.stdout
    status = world.fleet("status")
    assert status.returncode == 0 and "agents:S" in status.stdout, (
        "with no LAYOUT, the one fleet that runs: far is not kept for a host that nothing ever reached",
        status.stdout + status.stderr,
    )
    assert [f["state"] for f in json.loads(world.fleet("ls", "--json").stdout)] == ["stopped", "running"]
    assert world.fleet("stop", "solo").returncode == 0
