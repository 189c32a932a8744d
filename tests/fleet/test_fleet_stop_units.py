"""``fleet stop``'s decisions on scripted processes and a fake clock: whom it signals, when, and what it says.

The panes are real (a private tmux server); what runs in them is scripted (support.procs), so the
grace, the escalation to SIGKILL and the report are checked to the tenth of a second without
waiting. The slow tests stop real fleets (test_fleet_truth.py, test_fleet_tmux.py, test_fleet_states.py).
"""

from __future__ import annotations

import signal
import typing as t

import pytest
from support.procs import FakeProcesses, ScriptedFleet
from support.tmux_panes import Tmux

from claude_shepherd.fleet.procs import Proc
from claude_shepherd.fleet.reports import StopReport
from claude_shepherd.fleet.stop import KILL_ROUNDS, SERVER_WAIT, SETTLE, StopResult, stop
from claude_shepherd.fleet.tmux import FleetServer, PaneInfo, list_panes
from claude_shepherd.supervisor.tmux_names import PANE_OPTION, STOPPED

TERM, KILL, HUP = signal.SIGTERM, signal.SIGKILL, signal.SIGHUP
T0 = 1000.0


def run_stop(
    server: FleetServer, procs: FakeProcesses, grace: float = 10.0, **options: t.Any
) -> tuple[StopResult, list[str]]:
    said: list[str] = []
    result = stop(
        server,
        ["s"],
        grace=grace,
        progress=said.append,
        procs=procs,
        clock=procs.clock,
        sleep=procs.clock.sleep,
        **options,
    )
    return result, said


def report_of(result: StopResult, pane: PaneInfo) -> str:
    return next(r.outcome for r in result.panes if r.pane.pane_id == pane.pane_id)


def test_agents_that_obey_sigterm_are_waited_for_not_killed_and_their_times_are_reported(
    scripted_fleet: ScriptedFleet,
) -> None:
    server, panes, procs = scripted_fleet.server, scripted_fleet.panes, scripted_fleet.procs
    quick, quick_claude = procs.agent(panes[0].pid, on_term=1.25)
    slow, _ = procs.agent(panes[1].pid, on_term=2.95)
    result, said = run_stop(server, procs)
    assert said == ["Asked 2 agents to stop (SIGTERM to each claude-run); waiting up to 10s"]
    assert procs.signals(quick) == [(T0, TERM)] and procs.signals(slow) == [(T0, TERM)]
    assert procs.signals(quick_claude) == []  # its claude-run ends it
    assert report_of(result, panes[0]) == f"stopped: supervisor {quick.pid} exited after SIGTERM in 1.3s"
    assert report_of(result, panes[1]) == f"stopped: supervisor {slow.pid} exited after SIGTERM in 3.0s"
    assert report_of(result, panes[2]) == "closed (no agent)"
    assert result.forced == [] and result.leftovers == []
    assert list_panes(server) == [], "the fleet's session is closed"


def test_a_supervisor_that_ignores_sigterm_is_killed_with_its_tree_when_the_grace_is_over(
    scripted_fleet: ScriptedFleet,
) -> None:
    server, panes, procs = scripted_fleet.server, scripted_fleet.panes, scripted_fleet.procs
    stubborn, claude = procs.agent(panes[0].pid, on_term=None)
    obedient, _ = procs.agent(panes[1].pid, on_term=0.5)
    result, said = run_stop(server, procs, grace=4.0)
    assert said == ["Asked 2 agents to stop (SIGTERM to each claude-run); waiting up to 4s"]
    [(term_at, term), (kill_at, kill)] = procs.signals(stubborn)
    assert (term_at, term, kill) == (T0, TERM, KILL) and kill_at == pytest.approx(T0 + 4.0)
    assert [sig for _, sig in procs.signals(claude)] == [KILL]
    assert [sig for _, sig in procs.signals(obedient)] == [TERM]
    assert report_of(result, panes[0]) == f"killed: supervisor {stubborn.pid} ignored SIGTERM"
    assert report_of(result, panes[1]) == f"stopped: supervisor {obedient.pid} exited after SIGTERM in 0.5s"
    assert [r.pane.pane_id for r in result.forced] == [panes[0].pane_id] and result.leftovers == []


def test_what_a_supervisor_leaves_behind_gets_a_moment_not_the_whole_grace(
    scripted_fleet: ScriptedFleet,
) -> None:
    server, panes, procs = scripted_fleet.server, scripted_fleet.panes, scripted_fleet.procs
    run, _ = procs.agent(panes[0].pid, on_term=1.0)
    straggler = procs.spawn(run.pid, ["node", "server.js"], on_term=None, on_hup=None, outlives_parent=True)
    result, _ = run_stop(server, procs, grace=30.0)
    [(kill_at, kill)] = procs.signals(straggler)  # found in the pane's tree before, re-parented since
    assert kill == KILL and kill_at == pytest.approx(T0 + 1.0 + SETTLE)
    assert report_of(result, panes[0]) == (
        f"stopped: supervisor {run.pid} exited after SIGTERM in 1.0s; killed 1 straggler(s)"
    )
    assert result.forced == [] and result.leftovers == []


def test_panes_without_an_agent_get_sighup_and_what_ignores_it_is_killed(
    scripted_fleet: ScriptedFleet,
) -> None:
    server, panes, procs = scripted_fleet.server, scripted_fleet.panes, scripted_fleet.procs
    shell = procs.spawn(0, ["bash"], pid=panes[0].pid)
    deaf = procs.spawn(0, ["bash"], pid=panes[1].pid, on_hup=None)
    result, said = run_stop(server, procs)
    assert said == []  # no agent was asked to stop
    assert procs.signals(shell) == [(T0, HUP)]
    assert procs.signals(deaf) == [(T0, HUP), (T0 + SETTLE, KILL)]
    assert report_of(result, panes[0]) == "closed (no agent)"
    assert report_of(result, panes[1]) == "closed; killed 1 process(es) that ignored SIGHUP"


def test_a_process_even_sigkill_does_not_end_is_reported_as_left_over(
    scripted_fleet: ScriptedFleet,
) -> None:
    server, panes, procs = scripted_fleet.server, scripted_fleet.panes, scripted_fleet.procs
    run, _ = procs.agent(panes[0].pid, on_term=0.0)
    stuck = procs.spawn(run.pid, ["fuse-driver"], on_term=None, on_kill=None, outlives_parent=True)
    result, _ = run_stop(server, procs)
    kills = [sig for _, sig in procs.signals(stuck)]
    assert kills == [KILL] * (2 * KILL_ROUNDS), (
        "killed in every round, before and after the session is closed"
    )
    assert [p.pid for p in result.leftovers] == [stuck.pid]


def test_stopping_some_panes_signals_only_theirs_and_keeps_the_session(
    scripted_fleet: ScriptedFleet, tmux: Tmux
) -> None:
    server, panes, procs = scripted_fleet.server, scripted_fleet.panes, scripted_fleet.procs
    chosen, _ = procs.agent(panes[1].pid, on_term=0.3)
    other, other_claude = procs.agent(panes[0].pid, on_term=0.3)
    result, said = run_stop(server, procs, pane_ids={panes[1].pane_id})
    assert said == ["Asked 1 agent to stop (SIGTERM to its claude-run); waiting up to 10s"]
    assert [r.pane.pane_id for r in result.panes] == [panes[1].pane_id]
    assert [sig for _, sig in procs.signals(chosen)] == [TERM]
    assert procs.signals(other) == [] and procs.signals(other_claude) == []
    assert [p.pane_id for p in list_panes(server)] == [p.pane_id for p in panes], "the session stays"
    assert tmux.option(panes[1].pane_id, PANE_OPTION) == STOPPED, "the stopped pane says so"
    assert tmux.option(panes[0].pane_id, PANE_OPTION) == ""


def scripted_server(procs: FakeProcesses, tmux: Tmux) -> tuple[Proc, Proc]:
    """The fixture's real tmux server as the stop finds it (through ``#{pid}``), scripted, and a
    pane-died hook's job it runs (``run-shell -b``: it outlives the server, re-parented)."""
    server = procs.spawn(1, ["tmux", "-L", tmux.socket], pid=int(tmux.pid), real=False, name="tmux: server")
    hook = procs.spawn(server.pid, ["python", "claude-hook", "pane-died", "%1"], outlives_parent=True)
    return server, hook


def test_closing_the_last_session_waits_for_the_tmux_server_and_its_hooks_jobs_to_exit(
    scripted_fleet: ScriptedFleet, tmux: Tmux
) -> None:
    server, panes, procs = scripted_fleet.server, scripted_fleet.panes, scripted_fleet.procs
    procs.agent(panes[0].pid, on_term=1.0)
    tmux_server, hook = scripted_server(procs, tmux)
    procs.exit(tmux_server, after=3.0)  # still running the hooks of the panes it just closed
    procs.exit(hook, after=3.5)
    result, _ = run_stop(server, procs)
    assert procs.alive([tmux_server, hook]) == [], "nothing of the fleet runs when stop returns"
    assert result.seconds == pytest.approx(3.5, abs=0.2)
    assert result.lingering == [] and result.server_pid == tmux_server.pid


def test_a_tmux_server_that_outlives_the_wait_is_reported_with_its_pid_not_claimed_gone(
    scripted_fleet: ScriptedFleet, tmux: Tmux
) -> None:
    server, panes, procs = scripted_fleet.server, scripted_fleet.panes, scripted_fleet.procs
    procs.agent(panes[0].pid, on_term=1.0)
    tmux_server, hook = scripted_server(procs, tmux)  # neither ever exits
    result, _ = run_stop(server, procs)
    assert [p.pid for p in result.lingering] == [tmux_server.pid, hook.pid]
    assert result.still_running == [
        f"the fleet's tmux server (pid {tmux_server.pid})",
        f"pid {hook.pid} (python claude-hook pane-died %1)",
    ]
    assert result.seconds == pytest.approx(1.0 + SERVER_WAIT, abs=0.2), "the wait is bounded"
    assert procs.signals(tmux_server) == [] and procs.signals(hook) == [], "tmux's, not ours to kill"
    said = StopReport(  # as `fleet stop` reports it: not "no process of the fleet is left", but a failure
        tmux.socket,
        ("s",),
        seconds=result.seconds,
        lingering=tuple(result.still_running),
        lingering_pids=tuple(p.pid for p in result.lingering),
        server_wait=SERVER_WAIT,
    )
    assert not any("no process of the fleet is left" in line for line in said.lines())
    assert str(said.failure()) == (
        f"the fleet's tmux server (pid {tmux_server.pid}); pid {hook.pid} (python claude-hook pane-died %1) "
        f"still ran {SERVER_WAIT:g}s after the fleet's session closed (tmux's, ending by themselves: "
        f"`ps -p {tmux_server.pid},{hook.pid}` shows what still runs)"
    )


def test_a_tmux_server_that_keeps_another_session_is_not_waited_for(
    scripted_fleet: ScriptedFleet, tmux: Tmux
) -> None:
    server, panes, procs = scripted_fleet.server, scripted_fleet.panes, scripted_fleet.procs
    procs.agent(panes[0].pid, on_term=1.0)
    tmux("new-session", "-d", "-s", "another-fleet", "sleep 600")
    tmux_server, _ = scripted_server(procs, tmux)
    result, _ = run_stop(server, procs)
    assert result.server_pid is None and result.lingering == []
    assert result.seconds == pytest.approx(1.0, abs=0.2)
    assert procs.signals(tmux_server) == []
    assert tmux("list-sessions", "-F", "#{session_name}") == "another-fleet", "the other fleet runs on"


def test_a_tmux_server_set_to_outlive_its_last_session_is_not_waited_for(
    scripted_fleet: ScriptedFleet, tmux: Tmux
) -> None:
    server, panes, procs = scripted_fleet.server, scripted_fleet.panes, scripted_fleet.procs
    procs.agent(panes[0].pid, on_term=1.0)
    tmux("set-option", "-s", "exit-empty", "off")
    scripted_server(procs, tmux)
    result, _ = run_stop(server, procs)
    assert result.server_pid is None and result.lingering == []
    assert result.seconds == pytest.approx(1.0, abs=0.2)
