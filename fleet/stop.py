"""Stop a fleet so that no process is left and every session stays resumable.

The bash original killed the tmux session and let SIGHUP do the rest, which
reached only each pane's foreground process group: watchdogs and Claude's own
children survived as orphans (R7). Here, for every pane:

1. SIGTERM to the pane's supervisor (``claude-run``), which ends Claude the
   way it is built to and leaves ``.state.json`` valid — resumable (S3), or
   fresh next time if the session had overflowed (S9); panes without an
   agent get SIGHUP, as a closing terminal would send;
2. wait up to the grace period for the supervisors to exit, then a moment
   for what they ran;
3. SIGKILL whatever is left — the pane's whole process tree, and the trees
   of every process found in it before (re-parented orphans too) — until
   nothing is; a process is the pane's only by descent, never because its
   environment names the pane (an agent can write that);
4. kill the tmux session, and check once more;
5. when that closed the server's last session, wait (up to :data:`SERVER_WAIT`) for the server
   to exit and for what its hooks started (``claude-hook pane-died`` of the panes just closed) to
   end: "no process is left" is said only then, and what outlives the wait is reported instead.
   A server that keeps other sessions (another fleet on the socket) is not waited for.

The processes and the clock are parameters (``procs``, ``clock``, ``sleep``): the fast tests run
these decisions on scripted processes and a fake clock, the slow ones on real fleets.
"""

from __future__ import annotations

import signal
import time
import typing as t
from dataclasses import dataclass, field

from claude_shepherd.fleet import procs as pr
from claude_shepherd.fleet.tmux import NEXT, FleetServer, PaneInfo, list_panes
from claude_shepherd.hooks.pane_died import set_if_still_dead
from claude_shepherd.supervisor.tmux_names import STOPPED, STOPPING_OPTION

DEFAULT_GRACE = 10.0
KILL_ROUNDS = 5
KILL_WAIT = 0.5
SETTLE = 0.5
REAP_WAIT = 2.0
SERVER_WAIT = 5.0


@dataclass
class PaneStop:
    """What stopping did to one pane."""

    pane: PaneInfo
    root_started: float | None = None
    supervisors: list[pr.Proc] = field(default_factory=list)
    members: list[pr.Proc] = field(default_factory=list)
    ignored_term: list[pr.Proc] = field(default_factory=list)
    killed: list[pr.Proc] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def name(self) -> str:
        label = self.pane.label or self.pane.pane_id
        return f"{self.pane.session}:{self.pane.window}:{label}"

    @property
    def outcome(self) -> str:
        if self.ignored_term:
            pids = ", ".join(str(p.pid) for p in self.ignored_term)
            return f"killed: supervisor {pids} ignored SIGTERM"
        if self.supervisors:
            pids = ", ".join(str(p.pid) for p in self.supervisors)
            extra = f"; killed {len(self.killed)} straggler(s)" if self.killed else ""
            return f"stopped: supervisor {pids} exited after SIGTERM in {self.seconds:.1f}s{extra}"
        if self.pane.dead and not self.members:
            return "closed (its process had already exited)"
        if self.killed:
            return f"closed; killed {len(self.killed)} process(es) that ignored SIGHUP"
        return "closed (no agent)"


@dataclass
class StopResult:
    sessions: list[str]
    panes: list[PaneStop]
    leftovers: list[pr.Proc]
    grace: float
    seconds: float
    lingering: list[pr.Proc] = field(default_factory=list)
    """The tmux server whose last session was closed, and what its hooks started, still running
    :data:`SERVER_WAIT` seconds later (not signalled: they are tmux's, and end by themselves)."""
    server_pid: int | None = None
    """The tmux server the stop closed the last session of (None: it keeps other sessions, or none ran)."""

    @property
    def forced(self) -> list[PaneStop]:
        return [p for p in self.panes if p.ignored_term]

    @property
    def still_running(self) -> list[str]:
        """:attr:`lingering`, each named with its PID."""
        return [
            f"the fleet's tmux server (pid {p.pid})" if p.pid == self.server_pid else f"pid {p.describe()}"
            for p in self.lingering
        ]


def _members(table: pr.Table, report: PaneStop, *, pane_gone: bool = False) -> list[pr.Proc]:
    """The pane's tree now, and what is left of the members found before (re-parented orphans included)."""
    pane = report.pane
    root = 0 if (pane.dead or pane_gone or report.root_started is None) else pane.pid
    return table.of_pane(root, report.root_started, known=[*report.members, *report.killed])


def stop(
    server: FleetServer,
    sessions: t.Sequence[str],
    *,
    grace: float = DEFAULT_GRACE,
    progress: t.Callable[[str], None] | None = None,
    pane_ids: t.Collection[str] | None = None,
    procs: pr.Processes = pr.LOCAL,
    clock: t.Callable[[], float] = time.monotonic,
    sleep: t.Callable[[float], None] = time.sleep,
) -> StopResult:
    """Stop every pane of *sessions* on *server* — or only the panes *pane_ids* (``%N``: what the
    person chose, never a label an agent could have copied), keeping the fleet's tmux session and the
    stopped panes (dead, resumable by ``fleet start``); see the module docstring for the order."""
    started = clock()
    panes = [
        p
        for p in list_panes(server)
        if (p.session in sessions if pane_ids is None else p.pane_id in pane_ids)
    ]
    table = procs.snapshot()
    reports = []
    for pane in panes:
        root = table.by_pid.get(pane.pid)
        report = PaneStop(pane, root_started=root.create_time if root else None)
        report.members = _members(table, report)
        report.supervisors = [p for p in report.members if p.is_supervisor]
        reports.append(report)

    # 1. Ask nicely, each pane marked first: its death is a stop (no alert), not an exit.
    _mark(server, [["set-option", "-p", "-t", r.pane.pane_id, STOPPING_OPTION, str(r.pane.pid)]
                   for r in reports if not r.pane.dead])  # fmt: skip
    for report in reports:
        if report.supervisors:
            procs.send(report.supervisors, signal.SIGTERM)
        else:
            procs.send(report.members, signal.SIGHUP)
    agents = sum(1 for r in reports if r.supervisors)
    if progress and agents:
        progress(
            f"Asked {agents} agent{'s' * (agents != 1)} to stop (SIGTERM to {'each' if agents != 1 else 'its'} "
            f"claude-run); waiting up to {grace:g}s"
        )

    # 2. Wait, all panes together, for the supervisors and then for what they ran.
    deadline = started + grace
    pending = [p for r in reports for p in r.supervisors]
    while pending and clock() < deadline:
        pending = procs.wait_gone(pending, min(0.1, max(0.0, deadline - clock())))
        now = clock() - started
        for report in reports:
            if report.supervisors and not report.seconds and not procs.alive(report.supervisors):
                report.seconds = now
    # What a supervisor leaves behind (a child that setsid'd away and ignores SIGTERM) gets a
    # moment to follow it, not the whole grace: the agent has already saved its state.
    everything = [p for r in reports for p in r.members]
    procs.wait_gone(everything, min(SETTLE, max(0.0, deadline - clock())))
    for report in reports:
        report.ignored_term = procs.alive(report.supervisors)
        if report.supervisors and not report.seconds:
            report.seconds = clock() - started

    # 3. Escalate: the whole tree of each pane, fresh children and re-parented orphans included.
    _kill_rounds(procs, reports)

    # 4. Let tmux reap its panes, close the sessions (not for some panes), then make sure nothing came back.
    _wait_reaped(server, {r.pane.pane_id for r in reports}, clock=clock, sleep=sleep)
    if pane_ids is not None:  # the panes stay: they say they were stopped (the pane-died hook may come later)
        _mark(
            server,
            [set_if_still_dead(r.pane.pane_id, str(r.pane.pid), STOPPED) for r in reports if not r.pane.dead],
        )
    lone = None if pane_ids is not None else _lone_server(server, sessions, procs)
    jobs = [] if lone is None else _hook_jobs(procs, lone, reports)
    if pane_ids is None:
        for name in sessions:
            server.cmd("kill-session", "-t", f"={name}")
    leftovers = _kill_rounds(procs, reports, panes_gone=pane_ids is None)
    # 5. The server exits by itself once its last session is closed, a moment later: the hooks of the
    # panes it just closed may still run.
    lingering = [] if lone is None else _wait_server_gone(procs, lone, jobs, reports, clock=clock)
    return StopResult(
        list(sessions),
        reports,
        leftovers,
        grace,
        clock() - started,
        lingering=lingering,
        server_pid=None if lone is None else lone.pid,
    )


def _lone_server(server: FleetServer, sessions: t.Sequence[str], procs: pr.Processes) -> pr.Proc | None:
    """The tmux server's process when *sessions* are all it has, so that closing them ends it; None
    when it keeps another session (another fleet may share the socket), is set to outlive its last
    one (``exit-empty`` off), or is not found."""
    listed = server.cmd("list-sessions", "-F", "#{pid} #{exit-empty} #{session_name}")
    rows = [line.split(" ", 2) for line in listed.stdout] if listed.returncode == 0 else []
    if not rows or any(len(row) < 3 or row[2] not in sessions or row[1] != "1" for row in rows):
        return None
    try:
        pid = int(rows[0][0])
    except ValueError:
        return None
    return procs.trees([pid]).by_pid.get(pid)


def _hook_jobs(procs: pr.Processes, tmux_server: pr.Proc, reports: list[PaneStop]) -> list[pr.Proc]:
    """What the server runs besides its panes' processes — the jobs its hooks started (``run-shell
    -b``), and theirs — while it is still *tmux_server* (not a reused pid)."""
    table = procs.trees([tmux_server.pid])
    if table.same(tmux_server) is None:
        return []
    panes = {r.pane.pid for r in reports}
    tops = [pid for pid in table.children.get(tmux_server.pid, []) if pid not in panes]
    return [member for top in tops for member in table.descendants(top)]


def _wait_server_gone(
    procs: pr.Processes,
    tmux_server: pr.Proc,
    jobs: list[pr.Proc],
    reports: list[PaneStop],
    timeout: float = SERVER_WAIT,
    *,
    clock: t.Callable[[], float],
) -> list[pr.Proc]:
    """Wait until *tmux_server* has exited and every job its hooks started (*jobs*, and any found
    while it lives: re-parented when it exits, they are followed by identity) has ended; return
    those still running after *timeout*, the server first."""
    deadline = clock() + timeout
    known = {(p.pid, p.create_time): p for p in [tmux_server, *jobs]}
    while True:
        for job in _hook_jobs(procs, tmux_server, reports):
            known.setdefault((job.pid, job.create_time), job)
        left = procs.alive(list(known.values()))
        if not left or clock() >= deadline:
            return left
        procs.wait_gone(left, min(0.1, max(0.0, deadline - clock())))


def _mark(server: FleetServer, commands: list[list[str]]) -> None:
    """Run *commands* in one tmux call (best effort: a pane that is gone needs no mark)."""
    args: list[t.Any] = []
    for command in commands:
        args += [NEXT, *command] if args else command
    if args:
        server.cmd(*args)


def _wait_reaped(
    server: FleetServer,
    pane_ids: set[str],
    timeout: float = REAP_WAIT,
    *,
    clock: t.Callable[[], float],
    sleep: t.Callable[[float], None],
) -> None:
    """Wait until tmux shows every pane dead, i.e. it has reaped each pane's process.

    Killing the session first would let the server exit with exited agents
    unreaped: they would linger as zombies of init, and a zombie's PID looks
    alive to the next ``claude-run``, which would then refuse to resume.
    """
    deadline = clock() + timeout
    while clock() < deadline:
        if all(p.dead for p in list_panes(server) if p.pane_id in pane_ids):
            return
        sleep(0.02)


def _kill_rounds(procs: pr.Processes, reports: list[PaneStop], *, panes_gone: bool = False) -> list[pr.Proc]:
    """SIGKILL every remaining process of the panes until none is left; return the unkillable."""
    remaining: list[pr.Proc] = []
    for _ in range(KILL_ROUNDS):
        table = procs.snapshot()
        remaining = []
        for report in reports:
            alive = procs.alive(_members(table, report, pane_gone=panes_gone))
            if alive:
                procs.send(alive, signal.SIGKILL)
                report.killed.extend(p for p in alive if p.pid not in {k.pid for k in report.killed})
                remaining.extend(alive)
        if not remaining:
            return []
        remaining = procs.wait_gone(remaining, KILL_WAIT)
        if not remaining:
            return []
    return remaining
