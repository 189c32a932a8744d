"""The attention queue in a real fleet, and ``fleet web``'s guard over plain HTTP.

An agent flapping between needs-you and working ten times, through the real hooks in its pane, pages
the person once: the queue holds one entry with its count, and ``fleet status`` says it waits. The
web's guard refuses what is not the page's own: a foreign Host, a form's content type, an oversized
body, the cookie without the header, and an action on a pane that now holds another agent.
"""

from __future__ import annotations

import json
import sys
import typing as t
import urllib.request

import pytest
from support.alerts import recorder, settle
from support.fleet import FleetWorld, agent
from support.web import Web

from claude_shepherd.supervisor.attention import Queue

pytestmark = pytest.mark.slow


def state_of(world: FleetWorld) -> dict[str, str]:
    """Where the fleet's own processes keep the queue (its HOME's state folder)."""
    return {"HOME": world.env["HOME"]}


def test_an_agent_flapping_ten_times_pages_once_and_waits_as_one_entry(world: FleetWorld) -> None:
    argv, out = recorder(world.base)
    world.layout(
        "duo",
        "  - agents:\n      panes:\n        - A: claude-run\n        - B: claude-run\n",
        extra=f"notify: {json.dumps([*argv, '{label}', '{state}'])}\n",
    )
    hook = [sys.executable, "-m", "claude_shepherd.supervisor.pane_notify"]
    flaps: list[dict[str, t.Any]] = []
    for _ in range(10):
        flaps += [{"run": [*hook, "needs-you"]}, {"run": [*hook, "working"]}]
    world.plan("A", agent(*flaps[:-1], {"mark": "flapped"}, label="A"))  # ends needing the person
    world.plan("B", agent(label="B"))
    started = world.fleet("start", "duo", "--no-attach")
    assert started.returncode == 0, started.stdout + started.stderr
    world.wait_event("A", "mark", 60, name="flapped")

    assert settle(out, 1) == [["A", "needs-you"]], "ten flaps, one page"
    (entry,) = Queue(state_of(world)).waiting()
    assert (entry.label, entry.kind, entry.count, entry.socket) == ("A", "needs-you", 10, world.socket)

    status = world.fleet("status")
    said = "waiting for you: 1 (A needs you (×10)); `fleet watch` and `fleet web` show them first"
    assert said in status.stdout, (status.stdout, [e.as_json() for e in Queue(state_of(world)).read()])
    Queue(state_of(world)).snooze(entry.id)
    assert "waiting for you" not in world.fleet("status").stdout, "a snoozed entry is quiet everywhere"


def test_the_guard_refuses_what_is_not_the_pages_own(world: FleetWorld) -> None:
    world.layout("duo", "  - agents:\n      panes:\n        - A: claude-run\n        - B: claude-run\n")
    world.plan("A", agent(label="A"))
    world.plan("B", agent(label="B"))
    assert world.fleet("start", "duo", "--no-attach").returncode == 0
    for label in ("A", "B"):
        world.wait_event(label, "mark", 30, name="ready")
    panes = world.panes()
    web = Web(world, "--interval", "1")
    try:
        bearer = {"Authorization": "Bearer " + web.token}
        own = {**bearer, "Origin": web.base, "Content-Type": "application/json"}
        host = web.base.removeprefix("http://")

        assert (
            web.request("/api/view", headers={**bearer, "Host": f"evil.example:{host.split(':')[1]}"})[0]
            == 421
        )
        with urllib.request.urlopen(f"{web.base}/?token={web.token}", timeout=30) as first:
            cookie = first.headers["Set-Cookie"].split(";", 1)[0]
        name, _, key = cookie.partition("=")
        assert name == f"fleet_web_{host.split(':')[1]}" and key and key != web.token, (
            "the cookie, which a browser sends to every port of this address, is not the token"
        )
        for value in (key, web.token):
            assert web.request("/api/view", headers={"Cookie": f"{name}={value}"})[0] == 401
        assert web.request("/", headers={"Cookie": f"{name}={web.token}"})[0] == 401
        status, page = web.request("/", headers={"Cookie": cookie})
        assert status == 200 and "<script nonce=" in page, "the cookie is good for the page alone"
        form = {**own, "Content-Type": "application/x-www-form-urlencoded"}
        assert web.request("/api/snooze", body={}, headers=form)[0] == 415
        big = {"key": "x" * 5000, "opened": 1, "until": "hour"}
        assert web.request("/api/snooze", body=big, headers=own)[0] == 413

        # A restart naming B as the page saw it, but in A's pane: refused, nothing restarted.
        wrong = {
            "host": "local",
            "socket": world.socket,
            "pane": panes["A"]["pane_id"],
            "identity": "duo:agents:B",
        }
        status, said = web.request("/api/restart", body=wrong, headers=own)
        assert status == 409 and "now holds duo:agents:A, not duo:agents:B" in said, said
        gone = {**wrong, "pane": "%999"}
        status, said = web.request("/api/restart", body=gone, headers=own)
        assert status == 409 and "is gone" in said, said
        assert len(world.starts("A")) == len(world.starts("B")) == 1
        status, said = web.request(
            "/api/budget", body={**wrong, "identity": "duo:agents:A", "add_usd": 0.001}, headers=own
        )
        assert status == 400 and "whole number of cents" in said, said

        right = {**wrong, "pane": panes["B"]["pane_id"]}
        status, said = web.request("/api/restart", body=right, headers=own)
        assert status == 200 and "restarted" in json.loads(said)["said"], said
        world.wait_starts("B", 2)
        assert len(world.starts("A")) == 1, "only B"
    finally:
        assert web.stop() == 0


def test_fleet_web_without_its_extra_says_how_to_install_it(tmp_path: t.Any) -> None:
    import subprocess

    probe = (
        "import sys\n"
        "sys.modules['starlette'] = None\n"  # as if the web extra were not installed
        "from claude_shepherd.fleet.cli import run\n"
        "sys.exit(run(['web']))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr == "fleet: error: fleet web needs the web extra: pip install 'claude-shepherd[web]'\n"


def test_fleet_web_on_another_address_says_plainly_who_controls_the_fleet(world: FleetWorld) -> None:
    import subprocess

    from support.fleet import BIN

    served = subprocess.Popen([str(BIN / "fleet"), "web", "--bind", "0.0.0.0"], cwd=world.project, env=world.env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert served.stdout is not None
        warning, url = served.stdout.readline(), served.stdout.readline()
    finally:
        served.terminate()
        served.communicate(timeout=20)
    assert "anyone who can reach it and holds this URL controls the fleet" in warning, warning
    assert url.startswith("http://0.0.0.0:") and "/?token=" in url and served.returncode == 0
