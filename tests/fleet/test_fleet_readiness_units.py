"""The wait for started agents on scripted processes and a fake clock: when an agent counts as running,
and what is said of one that is not.

The panes are real (a private tmux server); what runs in them is scripted (support.procs). The
slow tests start real fleets (test_fleet_states.py, test_fleet_tmux.py).
"""

from __future__ import annotations

import typing as t

import pytest
from support.procs import CLAUDE, FakeProcesses, ScriptedFleet
from support.tmux_panes import Tmux

from claude_shepherd.fleet.readiness import POLL, Outcome, wait_running
from claude_shepherd.fleet.tmux import FleetServer, PaneInfo, list_panes

T0 = 1000.0


def wait(
    server: FleetServer,
    procs: FakeProcesses,
    panes: t.Sequence[PaneInfo],
    timeout: float = 10.0,
    **options: t.Any,
) -> dict[str, Outcome]:
    options = {
        "settle": 2.0,
        "clock": procs.clock,
        "wall": procs.clock,
        "sleep": procs.clock.sleep,
        **options,
    }
    return wait_running(server, [p.pane_id for p in panes], timeout=timeout, procs=procs, **options)


@pytest.mark.parametrize("marked", [True, False])
def test_an_agent_runs_once_its_claude_has_stayed_up_for_the_settle_time(
    scripted_fleet: ScriptedFleet, tmux: Tmux, marked: bool
) -> None:
    """Twice that when no SessionStart hook of its Claude has marked its pane: a Claude starting slowly
    may yet show a dialog of Claude Code's."""
    server, panes, procs = scripted_fleet.server, scripted_fleet.panes, scripted_fleet.procs
    run, claude = procs.agent(panes[0].pid)
    if marked:
        tmux("set-option", "-p", "-t", panes[0].pane_id, "@pane_claude", str(claude.pid))
    got = wait(server, procs, panes[:1])
    assert got == {
        panes[0].pane_id: Outcome(panes[0].pane_id, True, f"claude-run {run.pid}, Claude {claude.pid}")
    }
    up = T0 + (2.0 if marked else 4.0)
    assert up <= procs.clock.now < up + POLL + 1e-9, "not a round longer than needed"


def test_an_agent_whose_claude_shows_a_startup_dialog_is_reported_waiting_at_it(
    scripted_fleet: ScriptedFleet, tmux: Tmux
) -> None:
    server, panes, procs = scripted_fleet.server, scripted_fleet.panes, scripted_fleet.procs
    screen = "printf ' Accessing workspace:\\n\\n /srv/p\\n\\n Enter to confirm\\n'; exec sleep 600"
    tmux("respawn-pane", "-k", "-t", panes[0].pane_id, screen)
    panes = list_panes(server)
    procs.agent(panes[0].pid)
    got = wait(server, procs, panes[:1])[panes[0].pane_id]
    assert (got.running, got.detail, got.dialog) == (
        False,
        "waiting: trust dialog for /srv/p",
        "trust dialog for /srv/p",
    )
    assert procs.clock.now < T0 + 2.0 + POLL + 1e-9, "said once Claude stayed up, not later"


def test_an_agent_not_running_when_the_time_is_up_is_reported_with_what_was_seen_and_its_last_lines(
    scripted_fleet: ScriptedFleet, tmux: Tmux
) -> None:
    server, panes, procs = scripted_fleet.server, scripted_fleet.panes, scripted_fleet.procs
    tmux("respawn-pane", "-k", "-t", panes[1].pane_id, "printf 'one\\ntwo\\n'; exec sleep 600")
    tmux("respawn-pane", "-k", "-t", panes[2].pane_id, "exec sleep 600")
    panes = list_panes(server)
    procs.spawn(0, ["sh"], pid=panes[1].pid)
    run = procs.spawn(0, ["sh"], pid=panes[2].pid)
    supervisor = procs.spawn(run.pid, ["/venv/bin/python", "/venv/bin/claude-run"])
    got = wait(server, procs, panes[1:3], timeout=5.0)
    assert got[panes[1].pane_id].detail == "not running after 5s: claude-run is not running in it"
    assert got[panes[1].pane_id].last_lines == ("one", "two")
    assert (
        got[panes[2].pane_id].detail
        == f"not running after 5s: claude-run (pid {supervisor.pid}) has no Claude running"
    )
    assert not any(o.running for o in got.values())
    assert procs.clock.now == pytest.approx(T0 + 5.0, abs=POLL)


def test_a_claude_that_keeps_restarting_never_counts_as_running(
    scripted_fleet: ScriptedFleet,
) -> None:
    server, panes, procs = scripted_fleet.server, scripted_fleet.panes, scripted_fleet.procs
    run, claude = procs.agent(panes[0].pid)
    latest = [claude]

    def sleep(seconds: float) -> None:
        """Claude crashes and claude-run starts another every second."""
        procs.clock.sleep(seconds)
        if procs.clock.now - latest[0].create_time >= 1.0:
            procs.exit(latest[0])
            latest[0] = procs.spawn(run.pid, CLAUDE)

    got = wait(server, procs, panes[:1], timeout=6.0, sleep=sleep)[panes[0].pane_id]
    assert not got.running and got.detail.startswith("not running after 6s: Claude (pid ")
    assert got.detail.endswith(") has only just started") and str(claude.pid) not in got.detail


def test_a_pane_that_died_is_reported_at_once_with_its_exit_status_and_last_lines(
    scripted_fleet: ScriptedFleet, tmux: Tmux
) -> None:
    server, panes, procs = scripted_fleet.server, scripted_fleet.panes, scripted_fleet.procs
    _, claude = procs.agent(panes[0].pid)
    tmux("set-option", "-p", "-t", panes[0].pane_id, "@pane_claude", str(claude.pid))  # its SessionStart ran
    tmux("respawn-pane", "-k", "-t", panes[1].pane_id, "echo 'claude-run: command not found'; exit 127")
    got = wait(server, procs, panes[:2], timeout=30.0)
    died = got[panes[1].pane_id]
    assert (died.running, died.detail) == (False, "exited with status 127")
    assert died.last_lines == ("claude-run: command not found",), "tmux's own 'Pane is dead' line is left out"
    assert got[panes[0].pane_id].running
    assert procs.clock.now < T0 + 2.0 + 1.0, (
        "the wait ended when the last agent was known, not at the timeout"
    )
