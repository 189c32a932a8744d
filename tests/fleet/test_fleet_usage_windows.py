"""Usage windows in a fleet: per credential in `fleet status` and the watch, agents limited until the
reset, and an alert at 80 % and 95 % once per window per reset.

Real ``fleet`` verbs on a private tmux server, the real ``claude-run`` in each pane with the stand-in
Claude feeding the real ``claude-hook status-line`` and ``stop-failure`` what Claude Code 2.1.328 sends
(tests/e2e/recorded/); the notify command is a recorder.
"""

from __future__ import annotations

import json
import time
import typing as t

import pytest
from support.alerts import records, settle
from support.fleet import FleetWorld
from support.waiting import wait_until

from claude_shepherd.fleet.watch import gather, totals
from claude_shepherd.supervisor.session.usage_windows import clock

pytestmark = pytest.mark.slow  # a real tmux fleet

WAIT = [{"mark": "ready"}, {"wait": None}]
LIMIT_TEXT = "You've hit your 5-hour limit · resets 3:47pm (UTC)"


def status_line(world: FleetWorld, used: float, reset: float) -> dict[str, t.Any]:
    line = {"session_id": "conv-1", "cwd": str(world.project),
            "rate_limits": {"five_hour": {"used_percentage": used, "resets_at": reset},
                            "seven_day": {"used_percentage": 40, "resets_at": reset + 500000}}}  # fmt: skip
    return {"run": ["claude-hook", "status-line"], "stdin": json.dumps(line)}


def stop_failure(world: FleetWorld) -> dict[str, t.Any]:
    data = {"hook_event_name": "StopFailure", "error": "rate_limit", "last_assistant_message": LIMIT_TEXT,
            "cwd": str(world.project)}  # fmt: skip
    return {"run": ["claude-hook", "stop-failure"], "stdin": json.dumps(data)}


def test_status_and_watch_show_each_window_per_credential_and_who_is_limited_and_alert_once(
    world: FleetWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    from support.alerts import recorder

    argv, out = recorder(world.base)
    world.layout(
        "duo",
        "  - agents:\n      panes:\n        - A: claude-run\n        - B: claude-run\n",
        extra=f"notify: {json.dumps([*argv, '{label}', '{state}'])}\n",
    )
    reset = time.time() + 3600
    world.plan("A", [status_line(world, 82, reset), status_line(world, 96, reset), status_line(world, 100, reset),
                     stop_failure(world), *WAIT])  # fmt: skip
    world.plan("B", [status_line(world, 82, reset), *WAIT])
    started = world.fleet("start", "duo", "--no-attach")
    assert started.returncode == 0, started.stdout + started.stderr
    for label in "AB":
        wait_until(lambda label=label: world.events(label, "mark") or None, 20, f"{label} ready")

    alerts = settle(out, 2)
    assert [a[1].split(" (")[0] for a in alerts] == ["usage five_hour 80%", "usage five_hour 95%"], alerts
    assert all(a[0] == "A" for a in alerts) or all(a[0] in "AB" for a in alerts)
    time.sleep(1)
    assert len(records(out)) == 2, "one alert per window per reset"

    done = world.fleet("status", "--json")
    rows = {row["label"]: row for row in json.loads(done.stdout)}
    assert rows["A"]["credential"] == rows["B"]["credential"] == str(world.config)
    assert rows["B"]["usage_windows"]["five_hour"]["used_percentage"] == 100, "one reading per credential"
    assert (
        rows["A"]["limited_until"] == pytest.approx(reset, abs=0.01)
        and rows["A"]["limited_window"] == "five_hour"
    )
    assert rows["A"]["state"] == "limited" and rows["B"]["limited_until"] is None

    text = world.fleet("status", "duo")
    assert f"five_hour 100% (resets {clock(reset)})" in text.stdout, text.stdout
    assert f"limited until {clock(reset)}" in text.stdout
    assert "waiting: 1 agent(s) at a usage limit until" in text.stdout

    monkeypatch.setenv("TMUX_TMPDIR", str(world.tmux_tmpdir))
    lines = totals(gather([world.socket]).rows)
    assert any("five_hour 100%" in line for line in lines), lines


def test_fleet_start_into_a_spent_window_says_so_and_the_agents_wait_for_the_reset(world: FleetWorld) -> None:
    from claude_shepherd.supervisor.session import usage_windows

    world.layout("duo", "  - agents:\n      panes:\n        - A: claude-run\n        - B: claude-run\n")
    # the reset far enough ahead that a loaded machine's start and status come before it
    reset, m0 = time.time() + 15, time.monotonic()  # the stand-in logs monotonic times
    reading = {"five_hour": {"used_percentage": 97, "resets_at": reset}}
    usage_windows.note_reading(world.project / "sessions", str(world.config), reading)
    for label in "AB":
        world.plan(label, WAIT)
    started = world.fleet(
        "start", "duo", "--no-attach", "--wait", "0", env={"CLAUDE_USAGE_RESUME_INTERVAL": "3"}
    )
    said = started.stdout + started.stderr
    assert "Usage window five_hour of " in said and f"reopens at {clock(reset)}" in said, said
    assert "`claude-run --ignore-usage-limits` as the panes' command in " in said
    rows = {row["label"]: row for row in json.loads(world.fleet("status", "--json").stdout)}
    assert rows["A"]["limited_until"] == pytest.approx(reset, abs=0.01), "status says what they wait for"
    assert world.starts("A") == [] and world.starts("B") == [], "started into a spent window"
    wait_until(lambda: world.starts("A") and world.starts("B"), 60, "both agents after the reset")
    firsts = sorted(world.starts(label)[0]["t"] for label in "AB")
    assert firsts[0] >= m0 + 15 - 0.1 and firsts[1] >= firsts[0] + 3 - 0.2, "one at a time after the reset"


@pytest.mark.parametrize(
    "slots, mark, windows",
    [
        (
            {"agents": []},
            {"until": "15:47", "window": 7, "since": "now"},
            {"five_hour": {"used_percentage": "100", "resets_at": []}},
        ),
        ({"agents": {"duo:agents:A": "soon"}, "reset": None}, {"until": 1e300, "since": "now"}, {"x": 1}),
        ({"agents": {"duo:agents:A": 1e300}}, {"until": "now", "since": "now"}, {}),
        ([], [], []),
    ],
)
def test_status_survives_usage_files_of_any_shape(
    world: FleetWorld, slots: t.Any, mark: t.Any, windows: t.Any
) -> None:
    """The usage files are the hooks' (out of the file tools' reach); whatever they hold, `fleet status`
    shows every row, what it cannot read as unknown."""
    world.layout("duo", "  - agents:\n      panes:\n        - A: claude-run\n        - B: claude-run\n")
    reset = time.time() + 3600
    world.plan("A", [status_line(world, 100, reset), stop_failure(world), *WAIT])
    world.plan("B", WAIT)
    # --wait 0: once A read the window at 100 %, B's claude-run rightly holds its launch for the reset
    started = world.fleet("start", "duo", "--no-attach", "--wait", "0")
    assert started.returncode == 0, started.stdout + started.stderr
    wait_until(lambda: world.events("A", "mark") or None, 20, "A limited")
    usage = world.project / "sessions" / ".shepherd" / "usage"
    (credential_file,) = (usage / "credentials").glob("*.json")
    credential = json.loads(credential_file.read_text())["credential"]
    credential_file.write_text(json.dumps({"credential": credential, "windows": windows}))
    for agent in (usage / "agents").glob("*.json"):
        record = json.loads(agent.read_text())
        now = time.time()
        limited = {k: now if v == "now" else v for k, v in mark.items()} if isinstance(mark, dict) else mark
        agent.write_text(json.dumps({**record, "limited": limited}))
    (usage / "resume-slots.json").write_text(json.dumps({credential: slots}))
    for args in (["status", "duo"], ["status", "duo", "--json"]):
        shown = world.fleet(*args)
        assert "Traceback" not in shown.stderr and shown.returncode in (0, 1), shown.stderr
        assert "A" in shown.stdout and "B" in shown.stdout, shown.stdout
