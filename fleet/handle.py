"""A fleet, wherever its agents run: what every ``fleet`` verb asks of it.

:func:`claude_shepherd.fleet.resolve.resolve` answers once which fleet a
LAYOUT (or a fleet's name, or nothing) means, and hands back a :class:`Fleet`:
:class:`~claude_shepherd.fleet.local.LocalFleet` for a fleet of this machine,
:class:`~claude_shepherd.fleet.hosts.span_fleet.SpanFleet` for one across hosts
(which asks each host's own local fleet, over :mod:`~.hosts.transport`). A verb
in :mod:`claude_shepherd.fleet.commands` parses its options, resolves, calls the
handle and prints the report: it never asks where the agents run.

A handle says its progress through the printer it was given
(:class:`~claude_shepherd.fleet.output.Printer`) and raises
:class:`~claude_shepherd.fleet.output.FleetFailure` for what must fail the verb.
"""

from __future__ import annotations

import dataclasses
import typing as t
from dataclasses import dataclass

from claude_shepherd.fleet.output import FleetFailure, Said, Say
from claude_shepherd.supervisor.errors import NotRunningError, ShepherdError
from claude_shepherd.supervisor.tmux_names import NOT_RUNNING, UNKNOWN

if t.TYPE_CHECKING:
    from claude_shepherd.fleet.doctor_finding import Finding
    from claude_shepherd.fleet.hosts.span import Part
    from claude_shepherd.fleet.pane_status import PaneStatus
    from claude_shepherd.fleet.reports import (
        AttachReport,
        HostOutcome,
        LogsReport,
        RestartReport,
        StartReport,
        StopReport,
    )


class Agent(t.Protocol):
    """One agent of a fleet, as a row of the watch names it (:class:`claude_shepherd.fleet.watch.AgentRow`)."""

    @property
    def socket(self) -> str:
        """Its fleet's tmux socket on its host."""

    @property
    def host(self) -> str:
        """The machine it runs on (``local``: this one)."""

    @property
    def status(self) -> PaneStatus:
        """Its pane's row of ``fleet status``."""

    @property
    def fleet(self) -> str:
        """Its fleet's name (the tmux session)."""

    @property
    def name(self) -> str:
        """Its label, else its pane."""

    @property
    def where(self) -> str:
        """``[host/]session:window:label``, as a confirmation names it."""


class Fleet(t.Protocol):
    """One fleet, on this machine or across hosts (see the module docstring)."""

    def start(self, *, wait: float | None, attach: bool) -> StartReport | HostsReport:
        """Build the fleet, or reconcile the running one; the report says how the person is then shown
        it (attached when *attach* and a terminal, see :func:`claude_shepherd.fleet.attach.hand_over`)."""

    def stop(self, grace: float, labels: t.Sequence[str] | None) -> StopReport | HostsReport:
        """Stop every agent (or those labelled *labels*) so that no process is left."""

    def drain(self, grace: float, deadline: float, dehydrate: bool) -> StopReport:
        """Let each agent reach a safe point (its turn ends; with *dehydrate*, its handover saved) within
        *deadline* seconds, then stop the fleet and keep it to come back at ``fleet start --all``."""

    def restart(
        self, grace: float, labels: t.Sequence[str] | None, wait: float | None
    ) -> RestartReport | HostsReport:
        """Stop agents gracefully and start them again, resuming their conversations."""

    def status(self) -> StatusReport:
        """One row per pane."""

    def logs(self, label: str, lines: int, follow: bool) -> LogsReport:
        """An agent's claude-run log, then its screen. With *follow* these are said at once and new lines
        after them as they come, until the person interrupts: a report is returned only without it."""

    def attach(self, label: str | None) -> AttachReport:
        """How to show the person the fleet, with *label*'s pane selected (selected already)."""

    def doctor(self, fix: bool) -> Said:
        """Find (and with *fix* repair) what is wrong with the fleet."""

    def budget(
        self,
        window: str | None,
        pane: str | None,
        set_usd: float | None,
        add_usd: float | None,
        per: str | None,
        remove: bool = False,
    ) -> Said:
        """Show the fleet's budgets and spend; with *set_usd*, *add_usd* or *remove* change one (the
        fleet's, a *window*'s or a *pane*'s) at once, then resume the paused agents now within budget."""

    # What the watch's keys do to one agent of the fleet (an :class:`Agent`, a row of the watch);
    # each returns what to tell the person, and holds the fleet's lock (on the agent's own host).

    def attach_command(self, row: Agent, env: t.Mapping[str, str] | None = None) -> tuple[list[str], bool]:
        """The command that shows *row*'s pane, and whether it takes over the terminal."""

    def stop_agent(self, row: Agent, grace: float, *, told: Say, cancelled: t.Callable[[], bool]) -> str:
        """Stop *row*'s agent as ``fleet stop --pane`` does (its pane stays; its conversation resumable)."""

    def restart_agent(self, row: Agent, grace: float, *, told: Say, cancelled: t.Callable[[], bool]) -> str:
        """Stop *row*'s agent gracefully and start it again: it resumes its conversation."""

    def log_lines(self, row: Agent, count: int) -> list[str]:
        """*row*'s pane's recent output, claude-run's own lines included (``fleet logs``)."""


# --------------------------------------------------------------------------- reports

PAST = {"stop": "stopped", "restart": "restarted"}
"""What a watch key's verb did, as it tells the person."""


@dataclass(frozen=True)
class DoctorReport:
    """``fleet doctor`` of this machine: the caches it refreshed and what it found (and fixed)."""

    refreshed: list[str]
    findings: list[Finding]
    fix: bool

    def lines(self) -> list[str]:
        lines = list(self.refreshed)
        if not self.findings:
            return [*lines, "No problems found."]
        for finding in self.findings:
            lines.append(f"{finding.kind}: {finding.message}")
            if finding.fixed:
                fixed = finding.fixed
                lines.append(f"  {fixed}" if fixed.startswith("not fixed") else f"  fixed: {fixed}")
            elif self.fix and finding.fix is None:
                lines.append("  not fixed: repair it by hand")
        return lines

    def failure(self) -> ShepherdError | None:
        unfixed = [f for f in self.findings if not f.fixed or f.fixed.startswith("not fixed")]
        if not unfixed:
            return None
        hint = "" if self.fix else "; run `fleet doctor --fix` to repair"
        return FleetFailure(f"{len(unfixed)} problem(s) {'left' if self.fix else 'found'}{hint}")

    def as_json(self) -> dict[str, object]:
        findings = [{"kind": f.kind, "message": f.message, "fixed": f.fixed} for f in self.findings]
        return {"verb": "doctor", "refreshed": self.refreshed, "findings": findings, "fix": self.fix}


@dataclass(frozen=True)
class HostsReport:
    """What each host said, under its name, and the hosts that did not do all that was asked."""

    said: list[str]
    problems: list[str]
    hosts: tuple[HostOutcome, ...] = ()
    """Each host asked, with its own report (``--json``'s document)."""
    then: AttachReport | None = None
    """After a start: how the person is shown the fleet (said even when a host failed)."""
    verb: str = "doctor"

    def lines(self) -> list[str]:
        return [*self.said, *(self.then.lines() if self.then else ())]

    def as_json(self) -> dict[str, object]:
        return {
            "verb": self.verb,
            "hosts": [dataclasses.asdict(h) for h in self.hosts],
            "problems": self.problems,
            **({"then": self.then.as_json()} if self.then else {}),
        }

    def failure(self) -> ShepherdError | None:
        if not self.problems:
            return None
        return FleetFailure(
            f"{len(self.problems)} host(s) did not do all that was asked: {'; '.join(self.problems)}"
        )


@dataclass(frozen=True)
class HostStatus:
    """One host's rows of a fleet across hosts."""

    part: Part
    rows: list[PaneStatus]
    problem: str | None
    """Why the host's agents are unknown (it did not answer), or why none run there."""
    seconds: float


def identity(host: str, row: PaneStatus) -> str:
    """``host/session:window:label``: two hosts may use the same labels."""
    return f"{host}/{row.pane_id or f'{row.session}:{row.window}:{row.pane}'}"


@dataclass(frozen=True)
class StatusReport:
    """``fleet status`` of one fleet: its rows, and, across hosts, each host's."""

    title: str
    """``Fleet 'NAME' (socket S)``, with ``on N hosts`` across hosts."""
    rows: list[PaneStatus]
    hosts: list[HostStatus] | None = None
    """Across hosts: each host's rows, in the layout's order (None: a fleet of this machine)."""
    width: int = 0
    """How wide the HOST column of the per-host lines is."""
    name: str = ""
    """The fleet's name, as the advice in a failure names it."""
    socket: str = ""
    """The fleet's tmux socket (on each of its hosts): what names its agents in the attention queue."""

    def heading(self) -> list[str]:
        """The lines above the table."""
        costs = [row.cost_usd for row in self.rows if row.cost_usd is not None]
        total = f", ${sum(costs):.2f} spent" if costs else ""
        lines = [f"{self.title}: {len(self.rows)} pane(s){total}"]
        lines += [f"  {h.part.name:<{self.width}}  {_host_line(h)}" for h in self.hosts or ()]
        windows: dict[str, float] = {}
        for row in self.rows:
            if row.cost_usd is not None:
                windows[row.window] = windows.get(row.window, 0.0) + row.cost_usd
        if len(windows) > 1:
            lines.append("  spent by window: " + ", ".join(f"{w} ${c:.2f}" for w, c in windows.items()))
        paused = [row.label or row.pane for row in self.rows if row.paused]
        if paused:
            lines.append(
                f"  paused (budget): {', '.join(paused)}; `fleet budget {self.name or self.rows[0].session}` "
                "shows the budgets, --add USD raises one"
            )
        from claude_shepherd.fleet.status_table import dialog_line, usage_lines  # loaded for the table

        lines += dialog_line(self.rows, self.name)  # agents at a dialog of Claude Code's, not yet running
        lines += usage_lines(self.rows)  # usage windows per credential, agents parked by one
        lines += self._waiting()
        return lines

    def _waiting(self) -> list[str]:
        """How many entries of the attention queue wait for the person, and which (the snoozed left out)."""
        from claude_shepherd.supervisor import attention

        hosts = self.host_column() or ["local"] * len(self.rows)
        refs = [
            (attention.ref_for(host, self.socket, row), kind)
            for row, host in zip(self.rows, hosts)
            for kind in attention.kinds_of(row)
        ]
        if not refs or not self.socket:
            return []
        waiting = attention.waiting_of(refs)
        if not waiting:
            return []
        named = "; ".join(e.words() if e.host == "local" else f"{e.host}/{e.words()}" for e in waiting[:5])
        more = f"; and {len(waiting) - 5} more" if len(waiting) > 5 else ""
        return [
            f"  waiting for you: {len(waiting)} ({named}{more}); `fleet watch` and `fleet web` show them first"
        ]

    def host_column(self) -> list[str] | None:
        """The HOST cell of each row, across hosts."""
        return None if self.hosts is None else [h.part.name for h in self.hosts for _ in h.rows]

    def as_json(self) -> list[dict[str, object]]:
        if self.hosts is None:
            return [row.as_json() for row in self.rows]
        out = []
        for h in self.hosts:
            for row in h.rows:
                item = {"host": h.part.name, "identity": identity(h.part.name, row), **row.as_json()}
                if h.problem:
                    item["problem"] = h.problem
                out.append(item)
        return out

    def failure(self) -> ShepherdError | None:
        """Why the verb fails after the rows are shown: agents not running, hosts that did not answer."""
        if self.hosts is None:
            dead = [row for row in self.rows if row.agent and row.state.startswith("exited")]
            if not dead:
                return None
            names = ", ".join(f"{row.label or row.pane} ({row.state})" for row in dead)
            first = dead[0]
            return FleetFailure(
                f"{len(dead)} agent(s) not running: {names}; `fleet logs {first.session} --pane {first.label or first.pane}` "
                f"shows why, `fleet start {first.session}` respawns them"
            )
        return self._span_failure(self.hosts)

    def _span_failure(self, hosts: list[HostStatus]) -> ShepherdError | None:
        name = self.name
        if hosts and all(h.rows and all(r.state == NOT_RUNNING for r in h.rows) for h in hosts):
            return NotRunningError(
                f"fleet {name!r} is not running on any of its hosts; start it: fleet start {name}"
            )
        problems = [f"{h.part.name} {h.problem}" for h in hosts if h.problem]
        dead = [
            (h.part.name, row)
            for h in hosts
            if not h.problem
            for row in h.rows
            if row.agent and row.state.startswith("exited")
        ]
        if not (problems or dead):
            return None
        said = [*problems, *(f"{identity(host, row)} {row.state}" for host, row in dead)]
        advice = []
        if problems:
            advice.append(
                "the agents of a host that did not answer may still run (`fleet doctor` checks the hosts)"
            )
        if dead:
            host, row = dead[0]
            advice.append(
                f"`fleet logs {name} --pane {host}/{row.label or row.pane}` shows why, "
                f"`fleet start {name}` respawns dead agents"
            )
        return FleetFailure(f"{'; '.join(said)}; {'; '.join(advice)}")


def _host_line(h: HostStatus) -> str:
    if h.problem:
        return f"{h.problem} ({len(h.rows)} agent(s) {h.rows[0].state if h.rows else UNKNOWN})"
    states: dict[str, int] = {}
    for row in h.rows:
        state = row.state or ("running" if row.supervisor_alive else "—")
        states[state] = states.get(state, 0) + 1
    cost = sum(row.cost_usd for row in h.rows if row.cost_usd is not None)
    summary = ", ".join(f"{n} {state}" for state, n in states.items()) or "no panes"
    return f"{summary}, ${cost:.2f} ({h.seconds * 1000:.0f} ms)"
