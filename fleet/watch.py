"""What ``fleet watch`` shows: one row per agent of every running fleet, most urgent first.

The rows come from what the agents already publish — the pane options the
hooks set (state, context, cost), the restart count ``claude-run`` sets, each
pane's session state and the process table — never from reading screens.
This module gathers and orders them and does what the keys ask (attach,
restart, stop, log); :mod:`claude_shepherd.fleet.watch_app` draws them. It
imports no terminal library, so the bench and the tests can time and check
a refresh on its own.
"""

from __future__ import annotations

import os
import typing as t
from dataclasses import dataclass
from pathlib import Path

from claude_shepherd.fleet import procs as pr
from claude_shepherd.fleet.live import live_fleets
from claude_shepherd.fleet.status import PaneStatus, pane_rows
from claude_shepherd.fleet.tmux import FleetServer, pane_history
from claude_shepherd.supervisor.printable import printable
from claude_shepherd.supervisor.session.paths import display_name

NEEDS_YOU, ERROR, EXITED, WORKING, DONE = "needs-you", "error", "exited", "working", "done"
URGENCY: dict[str, int] = {NEEDS_YOU: 0, ERROR: 1, EXITED: 2, WORKING: 3, DONE: 4}
"""The order of the rows: what needs the person first; an agent with no state yet comes last."""


@dataclass(frozen=True)
class AgentRow:
    """One pane of one fleet, as the watch shows it."""

    socket: str
    """The fleet's tmux socket name (``fleet``, ``fleet-NAME``): where the keys act."""
    status: PaneStatus

    @property
    def key(self) -> str:
        return f"{self.socket}\x1f{self.status.pane}"

    @property
    def fleet(self) -> str:
        return self.status.session

    @property
    def state(self) -> str:
        """working / needs-you / done / error / exited, or "" before the agent said anything."""
        raw = self.status.state
        return EXITED if raw.startswith(EXITED) else raw

    @property
    def name(self) -> str:
        return self.status.label or self.status.pane

    def cells(self, now: float) -> tuple[str, ...]:
        """The :data:`COLUMNS`, each cut short enough for the row to fit 80 columns."""
        s = self.status
        return (
            _cut(self.fleet, 10),
            _cut(self.name, 12),
            _cut(self.state or "—", 9),
            f"{s.context_usage * 100:.0f}%" if s.context_usage is not None else "—",
            f"${s.cost_usd:.2f}" if s.cost_usd is not None else "—",
            _cut(display_name(Path(s.session_dir)), 16) if s.session_dir else "—",
            _cut(s.skill or "—", 10),
            _cut(s.phase or "—", 14),
            uptime(now - s.started_at) if s.started_at else "—",
            str(s.restarts) if s.restarts is not None else "—",
        )


COLUMNS = ("FLEET", "AGENT", "STATE", "CTX", "COST", "SESSION", "SKILL", "PHASE", "UP", "RST")


def _cut(text: str, width: int) -> str:
    """*text* made :func:`printable` (agents name their phases and sessions) and cut to *width*."""
    text = printable(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def uptime(seconds: float) -> str:
    """``42s``, ``7m``, ``3h05m``, ``2d04h``: as short as the column allows."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86400:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 86400}d{seconds % 86400 // 3600:02d}h"


def ordered(rows: t.Iterable[AgentRow]) -> list[AgentRow]:
    """Most urgent first, then by fleet, in layout order (the sort is stable), so rows do not jump."""
    return sorted(rows, key=lambda r: (URGENCY.get(r.state, len(URGENCY)), r.fleet, r.socket))


@dataclass(frozen=True)
class Gathered:
    """One look at every fleet: its agents' rows, and the fleet sockets whose server did not answer."""

    rows: list[AgentRow]
    silent: list[str]


def gather() -> Gathered:
    """Every agent row of every fleet server that answers, from one process-table snapshot."""
    fleets = live_fleets()
    silent = sorted(Path(path).name for path in fleets.unanswered)
    if not fleets.servers:
        return Gathered([], silent)
    table = pr.snapshot()
    rows: list[AgentRow] = []
    for path, server in fleets.servers.items():
        rows += [AgentRow(server.socket_name, status) for status in pane_rows(path, fleets.panes[path], table)
                 if status.label or status.supervisor_alive]  # not an unlabelled shell (or this watch)
    return Gathered(ordered(rows), silent)


def totals(rows: t.Sequence[AgentRow]) -> list[str]:
    """One line per fleet: how many agents, how many in each state that matters, what they cost."""
    lines: list[str] = []
    for fleet in sorted({(r.fleet, r.socket) for r in rows}):
        mine = [r for r in rows if (r.fleet, r.socket) == fleet]
        counts = [f"{n} {state}" for state in URGENCY if (n := sum(r.state == state for r in mine))]
        costs = [r.status.cost_usd for r in mine if r.status.cost_usd is not None]
        where = fleet[0] if fleet[1] == "fleet" else f"{fleet[0]} ({fleet[1]})"
        parts = [f"{where}: {len(mine)} agent{'s' * (len(mine) != 1)}", *counts, f"${sum(costs):.2f}"]
        lines.append(" · ".join(parts))
    return lines


# --------------------------------------------------------------------------- what the keys do


def server_of(row: AgentRow) -> FleetServer:
    return FleetServer(row.socket)


def select(row: AgentRow) -> FleetServer:
    """Make *row*'s pane the current one of its fleet (the person asked to look at it)."""
    server = server_of(row)
    server.run("select-window", "-t", row.status.pane)
    server.run("select-pane", "-t", row.status.pane)
    return server


def attach_command(row: AgentRow, env: t.Mapping[str, str] | None = None) -> tuple[list[str], bool]:
    """The tmux command that shows *row*'s pane, and whether it takes over the terminal
    (as ``fleet attach`` does: see :mod:`claude_shepherd.fleet.attach`)."""
    from claude_shepherd.fleet.attach import attach_command as command

    server = select(row)
    return command(server.tmux_bin, row.socket, row.fleet, row.status.pane, env)


def attach_env(env: t.Mapping[str, str] | None = None) -> dict[str, str]:
    from claude_shepherd.fleet.attach import attach_env as without_tmux

    return without_tmux(env)


def stop_agent(row: AgentRow, grace: float) -> str:
    """Stop *row*'s agent as ``fleet stop --pane`` does (its pane stays; its conversation resumable).

    The pane is the row's own (``%N``), not whichever pane carries its label now.
    """
    from claude_shepherd.fleet.stop import stop

    result = stop(server_of(row), [row.fleet], grace=grace, pane_ids={row.status.pane})
    if result.leftovers:
        return f"{row.name}: {len(result.leftovers)} process(es) survived SIGKILL"
    return f"{row.name}: {result.panes[0].outcome}" if result.panes else f"{row.name}: its pane is gone already"


def restart_agent(row: AgentRow, grace: float) -> str:
    """Stop *row*'s agent gracefully, then start its pane's command again: it resumes its conversation."""
    from claude_shepherd.fleet.builder import respawn

    stopped = stop_agent(row, grace)
    respawn(server_of(row), row.status.pane)
    return f"{stopped}; restarted"


def log_lines(row: AgentRow, count: int = 500) -> list[str]:
    """The pane's recent output, claude-run's own lines included (``fleet logs``)."""
    return [printable(line) for line in pane_history(server_of(row), row.status.pane, count)]
