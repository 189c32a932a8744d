"""Scripted processes on a fake clock: the one stand-in for the fleet's processes seam.

``fleet stop`` and the wait for started agents take a :class:`~claude_shepherd.fleet.procs.Processes`
and a clock (as ``claude-run``'s loop takes a runner and a clock). :class:`FakeProcesses` is that
collaborator for the fast tests: each process is told how it answers each signal (exits so many
seconds later, or never), waiting moves the clock to the next exit instead of sleeping, and every
signal is logged with the time it was sent. The real processes are the slow tests' business.

As on Linux, a process that exits takes its children with it unless they outlive it (a child that
``setsid``-ed away): those are re-parented to init. A scripted process given a real pane's pid
stands for what runs in the pane: when it exits, the pane's real process (a ``sleep``) is killed,
so tmux sees the pane die as it would. The ``scripted_fleet`` fixture gives the tmux fixture's
panes (session ``s``) with a scripted shell in each.
"""

from __future__ import annotations

import contextlib
import os
import signal
import typing as t
from dataclasses import dataclass, field

import pytest

from claude_shepherd.fleet.procs import Proc, Table
from claude_shepherd.fleet.tmux import FleetServer, PaneInfo, list_panes

if t.TYPE_CHECKING:
    from support.tmux_panes import Tmux

SUPERVISOR = ["/venv/bin/python", "/venv/bin/claude-run", "--agent", "a"]
CLAUDE = ["claude", "--resume", "conv"]
FIRST_PID = 10_000_000
"""Beyond any pid_max: a scripted pid never names a real process."""


class Clock:
    """Seconds that pass only when a test (or a wait of the seam) says so."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += max(0.0, seconds)


@dataclass
class Scripted:
    """One process and how it answers signals: seconds until it exits, None for never."""

    proc: Proc
    answers: dict[int, float | None]
    outlives_parent: bool = False
    real: bool = False
    exits_at: float | None = None
    exited: bool = False


@dataclass
class Sent:
    at: float
    pid: int
    sig: signal.Signals


@dataclass
class FakeProcesses:
    """:class:`~claude_shepherd.fleet.procs.Processes` over scripted processes and :attr:`clock`."""

    clock: Clock = field(default_factory=Clock)
    sent: list[Sent] = field(default_factory=list)
    _procs: dict[int, Scripted] = field(default_factory=dict)
    _next: int = FIRST_PID

    # ------------------------------------------------------------------ the script

    def spawn(
        self,
        ppid: int,
        cmdline: t.Sequence[str] = ("sleep", "600"),
        *,
        pid: int | None = None,
        name: str = "",
        started: float | None = None,
        on_term: float | None = 0.0,
        on_hup: float | None = 0.0,
        on_kill: float | None = 0.0,
        outlives_parent: bool = False,
        real: bool | None = None,
    ) -> Proc:
        """A running process (*pid*: a real pane's, replacing what was scripted for it, else a new one) that exits *on_term*, *on_hup*,
        *on_kill* seconds after that signal (None: never). *real* (by default: when *pid* is given): its
        scripted exit kills the real process *pid*; a real pid given only to be found (a tmux server's) is not."""
        real = pid is not None if real is None else real
        if pid is None:
            pid, self._next = self._next, self._next + 1
        proc = Proc(pid=pid, ppid=ppid, cmdline=list(cmdline), name=name or cmdline[0],
                    create_time=self.clock.now if started is None else started)  # fmt: skip
        answers = {signal.SIGTERM: on_term, signal.SIGHUP: on_hup, signal.SIGKILL: on_kill}
        self._procs[pid] = Scripted(proc, answers, outlives_parent, real)
        return proc

    def agent(self, pane_pid: int, **supervisor: t.Any) -> tuple[Proc, Proc]:
        """A pane's ``claude-run`` (its process, *pane_pid*) and the Claude it runs, which ends with it."""
        run = self.spawn(0, SUPERVISOR, pid=pane_pid, **supervisor)
        return run, self.spawn(run.pid, CLAUDE, on_term=None)

    def exit(self, proc: Proc, after: float = 0.0) -> None:
        """*proc* exits *after* seconds from now, whatever it is sent."""
        self._exit_at(self._procs[proc.pid], self.clock.now + after)
        self._settle()

    def signals(self, proc: Proc) -> list[tuple[float, signal.Signals]]:
        """What *proc* was sent, and when (seconds on the clock)."""
        return [(s.at, s.sig) for s in self.sent if s.pid == proc.pid]

    # ------------------------------------------------------------------ the seam

    def snapshot(self) -> Table:
        self._settle()
        return Table(self._copy(s) for s in self._running())

    def trees(self, roots: t.Iterable[int]) -> Table:
        table = self.snapshot()
        return Table(member for root in roots for member in table.descendants(root))

    def send(self, procs: t.Iterable[Proc], sig: signal.Signals) -> list[Proc]:
        sent = []
        for proc in procs:
            scripted = self._same(proc)
            if scripted is None:
                continue
            self.sent.append(Sent(self.clock.now, proc.pid, sig))
            after = scripted.answers.get(sig)
            if after is not None:
                self._exit_at(scripted, self.clock.now + after)
            sent.append(proc)
        self._settle()
        return sent

    def alive(self, procs: t.Iterable[Proc]) -> list[Proc]:
        self._settle()
        return [proc for proc in procs if self._same(proc) is not None]

    def wait_gone(self, procs: list[Proc], timeout: float) -> list[Proc]:
        deadline = self.clock.now + max(0.0, timeout)
        for at in sorted({s.exits_at for s in self._running() if s.exits_at is not None}):
            if at > deadline or not self.alive(procs):
                break
            self.clock.now = max(self.clock.now, at)
        left = self.alive(procs)
        if left:
            self.clock.now = deadline
        return self.alive(procs)

    # ------------------------------------------------------------------ inside

    def _running(self) -> list[Scripted]:
        return [s for s in self._procs.values() if not s.exited]

    def _same(self, proc: Proc) -> Scripted | None:
        """The running process *proc* names (not one that reused its pid)."""
        scripted = self._procs.get(proc.pid)
        if scripted is None or scripted.exited or scripted.proc.create_time != proc.create_time:
            return None
        return scripted

    @staticmethod
    def _copy(scripted: Scripted) -> Proc:
        p = scripted.proc
        return Proc(pid=p.pid, ppid=p.ppid, cmdline=list(p.cmdline), create_time=p.create_time, name=p.name)

    @staticmethod
    def _exit_at(scripted: Scripted, at: float) -> None:
        scripted.exits_at = at if scripted.exits_at is None else min(scripted.exits_at, at)

    def _settle(self) -> None:
        """Let every exit due by now happen, in order: children go with their parent, or to init."""
        while due := sorted(
            (s for s in self._running() if s.exits_at is not None and s.exits_at <= self.clock.now),
            key=lambda s: t.cast(float, s.exits_at),
        ):
            gone = due[0]
            gone.exited = True
            if gone.real:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(gone.proc.pid, signal.SIGKILL)
            for child in self._running():
                if child.proc.ppid == gone.proc.pid:
                    if child.outlives_parent:
                        child.proc.ppid = 1
                    else:
                        self._exit_at(child, t.cast(float, gone.exits_at))


@dataclass
class ScriptedFleet:
    server: FleetServer
    panes: list[PaneInfo]
    procs: FakeProcesses


@pytest.fixture
def scripted_fleet(tmux: Tmux, monkeypatch: pytest.MonkeyPatch) -> ScriptedFleet:
    """The tmux fixture's session ``s`` (four panes, ``remain-on-exit`` on), each pane's process
    scripted as a shell that a SIGHUP ends; a test scripts agents in them."""
    monkeypatch.setenv("TMUX_TMPDIR", str(tmux.dir))
    tmux("set-option", "-g", "remain-on-exit", "on")
    server = FleetServer(tmux.socket)
    world = ScriptedFleet(server, list_panes(server), FakeProcesses())
    for pane in world.panes:
        world.procs.spawn(0, ["bash"], pid=pane.pid)
    return world
