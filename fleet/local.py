"""A fleet of this machine: one tmux server (socket ``fleet`` or ``fleet-NAME``) and its sessions.

:class:`LocalFleet` is the :class:`~claude_shepherd.fleet.handle.Fleet` every
host runs, this one included: a fleet across hosts asks each host's
``fleet VERB - --json``, which is this class on that host
(:mod:`claude_shepherd.fleet.hosts.span_fleet`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
import typing as t

from claude_shepherd.fleet.handle import Agent, DoctorReport, StatusReport
from claude_shepherd.fleet.hosts.part import STDIN
from claude_shepherd.fleet.output import FleetFailure, Printer, Say, locked
from claude_shepherd.fleet.target import Target
from claude_shepherd.supervisor.errors import NotRunningError, ShepherdError
from claude_shepherd.supervisor.printable import printable
from claude_shepherd.supervisor.tmux_names import FLEET_SOCKET

if t.TYPE_CHECKING:
    from claude_shepherd.fleet.budgets import BudgetReport
    from claude_shepherd.fleet.builder import StartResult
    from claude_shepherd.fleet.layout import Layout
    from claude_shepherd.fleet.reports import (
        AttachReport,
        LogsReport,
        PaneOutcome,
        RestartReport,
        StartReport,
        StopReport,
    )
    from claude_shepherd.fleet.tmux import FleetServer

FOLLOW_INTERVAL = 0.5
"""Seconds between two looks at the log and the screen with ``fleet logs --follow``."""


class LocalFleet:
    """This machine's fleet *where* (None: none runs, *missing* says so), as LAYOUT *layout_arg* named it."""

    def __init__(
        self,
        out: Printer,
        where: Target | None,
        layout_arg: str | None = None,
        missing: ShepherdError | None = None,
    ) -> None:
        self.out = out
        self._where = where
        self.layout_arg = layout_arg
        self.missing = missing

    @property
    def where(self) -> Target:
        if self._where is None:
            raise self.missing or NotRunningError("no fleet is running")
        return self._where

    def _say(self, line: str = "") -> None:
        self.out.say(line)

    # ----------------------------------------------------------------------- start, stop, restart

    def start(self, *, wait: float | None, attach: bool) -> StartReport:
        from claude_shepherd.fleet import builder, known
        from claude_shepherd.fleet.reports import StartReport
        from claude_shepherd.fleet.usage import notice
        from claude_shepherd.fleet.whereabouts import not_moved, relative_root, where_it_runs

        where = self.where
        spec = where.require_layout("start")
        server = where.server()
        if relative_root(spec) and spec.base is not None and not spec.base.is_dir():
            raise builder.StartError(
                f"fleet {spec.name!r} first started in {spec.base}, which is no longer a folder; create it, "
                f"or `fleet forget {spec.name}` to start it from where you are"
            )
        builder.check_roots(spec)  # before a word about starting: a missing root starts nothing
        say = self._say
        with locked(where.socket, "fleet start", say):
            running = server.has_fleet_session(spec.name)
            windows = len(spec.windows)
            place = where_it_runs(spec)
            if running:
                say(
                    f"Fleet {spec.name!r} is running (socket {where.socket}) in {place}; reconciling with {spec.source}"
                )
            else:
                say(
                    f"Starting fleet {spec.name!r} (socket {where.socket}) in {place}: {windows} "
                    f"window{'s' * (windows != 1)}, {spec.pane_count} pane{'s' * (spec.pane_count != 1)}"
                )
            moved = not_moved(spec)
            if moved and self.layout_arg != STDIN:
                say(moved)
            for line in notice(spec):  # a usage window at the wait threshold: agents wait for its reset
                say(line)
            result = builder.start(spec, server)
            if self.layout_arg != STDIN:  # a host's own part is known by the fleet that sent it
                known.remember(spec)
            report = StartReport(
                spec.name,
                where.socket,
                self._started(server, result, wait),
                reconciled=running,
                changed=result.changed,
                left_alone=tuple(result.left_alone),
                again=_again(self.layout_arg),
            )
        if self.out.machine or report.failure() is not None:
            return report
        return dataclasses.replace(
            report, then=self._show(spec.name, spec.attach and attach, server.tmux_bin)
        )

    def drain(self, grace: float, deadline: float, dehydrate: bool) -> StopReport:
        from claude_shepherd.fleet import known
        from claude_shepherd.fleet.drain import drain as bring_to_safe_points

        where = self.where
        sessions = where.running_sessions(where.server())
        bring_to_safe_points(self, deadline, dehydrate, self._say)
        report = self.stop(grace, None)
        kept = [
            s
            for s in sessions
            if known.mark(where.socket, s, wanted=True) or known.is_wanted(where.socket, s)
        ]
        if kept:
            self._say(f"Kept to come back: {', '.join(kept)}; `fleet start --all` (or a boot, `fleet boot enable`) "
                      "starts each agent again in its own conversation.")  # fmt: skip
        return report

    def stop(self, grace: float, labels: t.Sequence[str] | None) -> StopReport:
        from claude_shepherd.fleet.reports import StopReport
        from claude_shepherd.fleet.whereabouts import agents_elsewhere

        if self._where is None:  # stopping what is stopped succeeds, as systemctl stop does
            if not labels:
                self._stopped_by_person(self.layout_arg, None)
            return StopReport("", nothing=f"{str(self.missing).split(';')[0].capitalize()}; nothing to stop.")
        where = self._where
        server = where.server()
        with locked(where.socket, "fleet stop", self._say):
            try:
                sessions = where.running_sessions(server)
            except NotRunningError as exc:
                if not labels and where.layout is not None:  # crashed, then stopped: not back at boot
                    self._stopped_by_person(where.layout.name, where.socket)
                return StopReport(
                    where.socket,
                    nothing=f"{str(exc)[:1].upper()}{str(exc)[1:]}; nothing to stop.",
                    elsewhere=agents_elsewhere(where, server, str(exc)),
                )
            report = self._stop_agents(server, sessions, grace, labels)
            if not labels:
                for session in sessions:
                    self._stopped_by_person(session, where.socket)
            if (
                not labels and where.layout is not None and report.failure() is None
            ):  # a decoy under the fleet's name is not the whole fleet
                done = f"stopped the session named {where.layout.name!r}"
                report = dataclasses.replace(report, elsewhere=agents_elsewhere(where, server, done))
        return report

    def _stopped_by_person(self, name: str | None, socket: str | None) -> None:
        """A person's stop of the whole fleet: ``fleet start --all`` leaves it stopped (a host's own part
        is the fleet's that sent it, which records it)."""
        from claude_shepherd.fleet import known

        if name is None or self.layout_arg == STDIN:
            return
        for record in known.named(name, socket):
            known.mark(record.socket, record.name, wanted=False)

    def restart(self, grace: float, labels: t.Sequence[str] | None, wait: float | None) -> RestartReport:
        from claude_shepherd.fleet import builder, elsewhere
        from claude_shepherd.fleet.reports import RestartReport, StartReport
        from claude_shepherd.fleet.usage import notice

        where = self.where
        spec = where.require_layout("restart")
        server = where.server()
        with locked(where.socket, "fleet restart", self._say):
            sessions = where.running_sessions(server)
            chosen = labels or [p.label for w in spec.windows for p in w.panes if p.label and p.runs_agent]
            blocked = elsewhere.blockers(spec, server)
            if blocked:  # before anything is stopped: a restart must not end in agents it cannot start again
                raise FleetFailure(
                    f"nothing restarted: {'; '.join(blocked)}; an agent may have relabelled its pane or "
                    "renamed its window; fix that (see `fleet status`) and restart again"
                )
            stopped = self._stop_agents(server, sessions, grace, chosen)
            if stopped.failure() is not None:
                return RestartReport(stopped, None)
            waits = tuple(notice(spec))  # a usage window at its threshold: the agents will wait for its reset
            result = builder.start(spec, server)
            asked = dataclasses.replace(result, panes=tuple(p for p in result.panes if p.action != "running"))
            started = StartReport(
                spec.name,
                spec.socket_name,
                self._started(server, asked, wait),  # not the panes left running: not asked for
                reconciled=True,
                changed=True,
                left_alone=tuple(result.left_alone),
                again=_again(self.layout_arg),
            )
        return RestartReport(stopped, started, waits)

    def _started(
        self, server: FleetServer, result: StartResult, wait: float | None
    ) -> tuple[PaneOutcome, ...]:
        """Each pane's outcome, the started agents' once seen running (or not)."""
        from claude_shepherd.fleet import readiness
        from claude_shepherd.fleet.reports import PaneOutcome

        timeout = readiness.default_wait() if wait is None else wait
        launched = {p.pane_id for p in result.launched}
        outcomes = (
            readiness.wait_running(server, sorted(launched), timeout=timeout)
            if launched and timeout > 0
            else {}
        )
        kept = {p.pane_id for p in result.panes if p.action == "running" and p.pane_id not in launched}
        held = readiness.waiting(server, kept) if kept else {}
        panes = []
        for pane in result.panes:
            outcome = outcomes.get(pane.pane_id) if pane.pane_id in launched else None
            panes.append(
                PaneOutcome(
                    pane.name,
                    pane.action,
                    pane.detail,
                    launched=pane.pane_id in launched,
                    running=None if outcome is None else outcome.running,
                    why="" if outcome is None else outcome.detail,
                    last_lines=() if outcome is None or outcome.running else tuple(outcome.last_lines),
                    waiting=outcome.waiting if outcome is not None else held.get(pane.pane_id, ""),
                    dialog="" if outcome is None else outcome.dialog,
                )
            )
        return tuple(panes)

    def _stop_agents(
        self, server: FleetServer, sessions: list[str], grace: float, labels: t.Sequence[str] | None
    ) -> StopReport:
        """Stop the agents (all, or those labelled *labels*): what each pane's became, and what survived."""
        from claude_shepherd.fleet.reports import PaneOutcome, StopReport
        from claude_shepherd.fleet.stop import SERVER_WAIT
        from claude_shepherd.fleet.stop import stop as stop_fleet

        where, say = self.where, self._say
        pane_ids: set[str] | None = None
        if labels:
            pane_ids = {found.pane_id for found in where.labelled(server, sessions, labels)}
            say(
                f"Stopping {', '.join(labels)} of {', '.join(repr(s) for s in sessions)} (socket {where.socket})..."
            )
        else:
            say(f"Stopping {', '.join(repr(s) for s in sessions)} (socket {where.socket})...")
        result = stop_fleet(
            server, sessions, grace=grace, progress=lambda line: say(f"  {line}"), pane_ids=pane_ids
        )
        return StopReport(
            where.socket,
            tuple(sessions),
            tuple(labels or ()),
            tuple(PaneOutcome(p.name, p.outcome) for p in result.panes),
            seconds=result.seconds,
            grace=grace,
            survivors=tuple(p.pid for p in result.leftovers),
            forced=tuple(p.name for p in result.forced),
            lingering=tuple(result.still_running),
            lingering_pids=tuple(p.pid for p in result.lingering),
            server_wait=SERVER_WAIT,
        )

    # ----------------------------------------------------------------------- budgets

    def budget(
        self,
        window: str | None,
        pane: str | None,
        set_usd: float | None,
        add_usd: float | None,
        per: str | None,
        remove: bool = False,
    ) -> BudgetReport:
        from claude_shepherd.fleet import budgets

        where = self.where
        spec = where.require_layout("budget")
        changed: str | None = None
        resumed: list[str] = []
        still_paused: list[str] = []
        if set_usd is not None or add_usd is not None or remove:
            with locked(where.socket, "fleet budget", self._say):
                changed = budgets.change(
                    spec, window=window, pane=pane, set_usd=set_usd, add_usd=add_usd, per=per, remove=remove
                )
                server = where.server()
                if server.has_fleet_session(spec.name):
                    changed += " (in effect now)"
                    resumed, still_paused = budgets.resume(spec, server, self._say)
                else:  # kept over the layout's budget by the next start
                    changed += f" (the fleet is stopped: in effect once `fleet start {spec.name}` starts it)"
        return budgets.BudgetReport(spec.name, changed, budgets.lines(spec), resumed, still_paused)

    # ----------------------------------------------------------------------- status, logs, attach

    def status(self) -> StatusReport:
        from claude_shepherd.fleet.status import collect
        from claude_shepherd.fleet.tmux import list_panes

        where = self.where
        server = where.server()
        panes = list_panes(server)  # one tmux call: a session always has a pane, each pane says its session
        sessions = where.running_sessions(server, list(dict.fromkeys(p.session for p in panes)))
        layout = where.layout
        trees = {f"{layout.name}:{w.name}:{p.label}": (p.worktree, w.root) for w in layout.windows
                 for p in w.panes if p.label and p.worktree} if layout is not None else {}  # fmt: skip
        rows = collect(server, sessions, panes, trees)
        return StatusReport(
            f"Fleet {', '.join(repr(s) for s in sessions)} (socket {where.socket})", rows, socket=where.socket
        )

    def logs(self, label: str, lines: int, follow: bool) -> LogsReport:
        from claude_shepherd.fleet.reports import LogsReport
        from claude_shepherd.fleet.tmux import new_lines, pane_history
        from claude_shepherd.supervisor.claude_run.run_log import log_path, tail

        where, say = self.where, self._say
        server = where.server()
        sessions = where.running_sessions(server)
        found = where.pane_labelled(server, sessions, label)
        identity = f"{found.session}:{found.window}:{found.label}"
        path = log_path(where.socket, identity, os.environ)

        def history(count: int) -> list[str]:
            return [printable(line) for line in pane_history(server, found.pane_id, count)]

        kept = tail(path, lines)
        shown = history(lines)[-lines:]
        report = LogsReport(identity, str(path), found.pane_id, tuple(kept), tuple(shown))
        if not follow:
            return report
        for line in report.lines():  # what is followed: said at once, then each new line as it comes
            say(line)
        while True:
            time.sleep(FOLLOW_INTERVAL)
            now_kept = tail(path, lines + 200)
            for line in new_lines(kept, now_kept):
                say(line)
            kept = now_kept
            now = history(lines + 200)
            for line in new_lines(shown, now):
                say(line)
            shown = now

    def attach(self, label: str | None) -> AttachReport:
        where = self.where
        server = where.server()
        sessions = where.running_sessions(server)
        session, chosen = sessions[0], None
        if label is not None:
            found = where.pane_labelled(server, sessions, label)
            session, chosen = found.session, found.pane_id
            server.cmd("select-window", "-t", found.window_id)
            server.cmd("select-pane", "-t", found.pane_id)  # asked for by the person: focus is theirs to move
        return self._show(session, True, server.tmux_bin, chosen)

    def _show(self, session: str, wanted: bool, tmux: str, pane: str | None = None) -> AttachReport:
        """How to show the person the fleet, as the watch's Enter does: switch inside the fleet's tmux,
        else attach (nested inside another tmux: they asked for it); without a terminal, the command."""
        from claude_shepherd.fleet.attach import attach_command, nested_hint
        from claude_shepherd.fleet.reports import AttachReport

        socket = self.where.socket
        if not wanted or not (os.isatty(0) and os.isatty(1)):
            return AttachReport(
                socket, session, pane, hint=f"Attach with: tmux -L {socket} attach -t {session}"
            )
        argv, takes_terminal = attach_command(tmux, socket, session, pane)
        return AttachReport(
            socket,
            session,
            pane,
            note=nested_hint(socket) or "",
            argv=tuple(argv),
            program=tmux,
            takes_terminal=takes_terminal,
        )

    # ----------------------------------------------------------------------- one agent, for the watch

    def attach_command(self, row: Agent, env: t.Mapping[str, str] | None = None) -> tuple[list[str], bool]:
        """Select *row*'s pane (the person asked to look at it), then the tmux command that shows it,
        as ``fleet attach`` runs it (see :mod:`claude_shepherd.fleet.attach`)."""
        from claude_shepherd.fleet.attach import attach_command as command

        server = self.where.server()
        server.run("select-window", "-t", row.status.pane)
        server.run("select-pane", "-t", row.status.pane)
        return command(server.tmux_bin, row.socket, row.fleet, row.status.pane, env)

    def stop_agent(self, row: Agent, grace: float, *, told: Say, cancelled: t.Callable[[], bool]) -> str:
        """The pane is the row's own (``%N``), not whichever pane carries its label now."""
        from claude_shepherd.fleet.watch_lock import fleet_held

        with fleet_held(row, "stop", told=told, cancelled=cancelled):
            return self._stopped(row, grace)[0]

    def restart_agent(self, row: Agent, grace: float, *, told: Say, cancelled: t.Callable[[], bool]) -> str:
        """Stop, then start the pane's command again in the fleet's environment
        (:func:`claude_shepherd.fleet.builder.respawn`); one hold of the fleet's lock covers both, so
        no other verb acts between them."""
        from claude_shepherd.fleet.builder import respawn
        from claude_shepherd.fleet.watch_lock import fleet_held

        with fleet_held(row, "restart", told=told, cancelled=cancelled):
            said, pane_left = self._stopped(row, grace)
            if not pane_left:
                return f"{said}; nothing to restart"
            respawn(self.where.server(), row.status.pane)
            return f"{said}; restarted"

    def _stopped(self, row: Agent, grace: float) -> tuple[str, bool]:
        """Stop *row*'s agent: what to tell the person, and whether its pane is still there."""
        from claude_shepherd.fleet.stop import stop

        result = stop(self.where.server(), [row.fleet], grace=grace, pane_ids={row.status.pane})
        if not result.panes:
            return f"{row.name}: its pane is gone already", False
        if result.leftovers:
            return f"{row.name}: {len(result.leftovers)} process(es) survived SIGKILL", True
        return f"{row.name}: {result.panes[0].outcome}", True

    def log_lines(self, row: Agent, count: int) -> list[str]:
        from claude_shepherd.fleet.tmux import pane_history

        return [printable(line) for line in pane_history(self.where.server(), row.status.pane, count)]

    # ----------------------------------------------------------------------- doctor

    def doctor(self, fix: bool) -> DoctorReport:
        from claude_shepherd.fleet import doctor as dr
        from claude_shepherd.fleet.live import fleet_sockets

        say = self._say
        where = self._where or Target(FLEET_SOCKET)  # none or several running: doctor looks at every fleet
        layouts: list[Layout] = [where.layout] if where.layout else []
        servers = [where.server()]
        with contextlib.ExitStack() as held:
            if fix:  # what is repaired is decided under the locks of every fleet it may touch
                for name in fleet_sockets(where.socket):
                    held.enter_context(locked(name, "fleet doctor --fix", say))
            examined = dr.examine(layouts, servers)
            findings = [finding for finding in examined if not finding.info]
            if fix:
                dr.repair(findings)
        refreshed = [f"{note.kind}: {note.fixed}" for note in dr.refresh_caches(examined)]  # after the fixes
        return DoctorReport(refreshed, findings, fix)


def _again(layout: str | None) -> str:
    """The start that respawns what did not run, as the person named the fleet."""
    return f"fleet start {layout}" if layout and layout != STDIN else "fleet start"
