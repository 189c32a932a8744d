"""What ``fleet watch`` shows: one row per agent of every running fleet, most urgent first.

The rows come from what the agents already publish — the pane options the
hooks set (state, context, cost), the restart count ``claude-run`` sets, each
pane's session state and the process table — never from reading screens.
This module gathers and orders them and does what the keys ask (attach,
restart, stop, log); :mod:`claude_shepherd.fleet.watch_app` draws them. It
imports no Textual, so the bench and the tests can time and check a refresh
and the columns that fit a width on their own.
"""

from __future__ import annotations

import typing as t
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from rich.cells import cell_len, set_cell_size

from claude_shepherd.fleet import procs as pr
from claude_shepherd.fleet.dialogs import with_dialogs
from claude_shepherd.fleet.hosts import LOCAL
from claude_shepherd.fleet.hosts.relay import Relay
from claude_shepherd.fleet.live import live_fleets
from claude_shepherd.fleet.pane_status import PaneStatus
from claude_shepherd.fleet.resolve import of_row
from claude_shepherd.fleet.status import pane_rows
from claude_shepherd.fleet.status_table import shown_state, usage_lines, worktree_cell
from claude_shepherd.supervisor import attention
from claude_shepherd.supervisor.printable import printable
from claude_shepherd.supervisor.session.paths import display_name
from claude_shepherd.supervisor.tmux_names import (
    DIALOG,
    DONE,
    ERROR,
    EXITED,
    LIMITED,
    NEEDS_YOU,
    PAUSED,
    STOPPED,
    UNKNOWN,
    WORKING,
)

URGENCY: dict[str, int] = {
    NEEDS_YOU: 0,
    DIALOG: 0,  # waits for the person to answer Claude Code before it starts
    PAUSED: 0,  # waits for the person to raise its budget
    ERROR: 1,
    EXITED: 2,
    UNKNOWN: 3,
    LIMITED: 4,
    WORKING: 5,
    DONE: 6,
    "": 7,
    STOPPED: 8,
}
"""The order of the rows: what needs the person first; an agent with no state yet, then one stopped on
request, come last."""


@dataclass(frozen=True)
class AgentRow:
    """One pane of one fleet, as the watch shows it."""

    socket: str
    """The fleet's tmux socket name (``fleet``, ``fleet-NAME``): where the keys act."""
    status: PaneStatus
    host: str = LOCAL
    """The machine the agent runs on (:mod:`claude_shepherd.fleet.hosts`)."""

    @property
    def key(self) -> str:
        return f"{self.host}\x1f{self.socket}\x1f{self.status.pane}"

    @property
    def remote(self) -> bool:
        return self.host != LOCAL

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

    @property
    def identity(self) -> tuple[str, str, str]:
        """The agent whatever pane runs it (``session:window:label`` on its host and socket): a fleet
        started again gives it a new pane (``%N``), and the watch knows it again."""
        return self.host, self.socket, self.status.pane_id or self.status.pane

    @property
    def where(self) -> str:
        """The agent as the person names it (``duo:agents:SDK``, ``box/duo:agents:SDK`` on another host):
        what a confirmation asks about."""
        here = f"{self.fleet}:{self.status.window}:{self.name}"
        return f"{self.host}/{here}" if self.remote else here

    def cells(self, now: float) -> tuple[str, ...]:
        """The :data:`COLUMNS`, as printable text at full length (:func:`fit` cuts them)."""
        s = self.status
        return tuple(printable(cell) for cell in (
            self.host,
            self.fleet,
            self.name,
            shown_state(s) if s.limited_until is not None else self.state or "—",
            f"{s.context_usage * 100:.0f}%" if s.context_usage is not None else "—",
            cost_cell(s),
            display_name(Path(s.session_dir)) if s.session_dir else "—",
            s.skill or "—",
            s.phase or "—",
            uptime(now - s.started_at) if s.started_at else "—",
            str(s.restarts) if s.restarts is not None else "—",
            worktree_cell(s),
        ))  # fmt: skip


def cost_cell(s: PaneStatus) -> str:
    """What the agent spent (measured; — unknown), and against the budget it is nearest to:
    ``$1.20``, ``$4.10/5.00 a day`` (a window's or the fleet's budget counts all their agents)."""
    cost = f"${s.cost_usd:.2f}" if s.cost_usd is not None else "—"
    if s.budget_usd is None:
        return cost
    spent = f"${s.budget_spent:.2f}" if s.budget_spent is not None else "—"
    per = {"day": " a day", "week": " a week"}.get(s.budget_per or "", "")
    return (
        f"{spent}/{s.budget_usd:.2f}{per}"
        if s.budget_scope == "pane"
        else f"{cost} ({spent}/{s.budget_usd:.2f}{per})"
    )


COLUMNS = ("HOST", "FLEET", "AGENT", "STATE", "CTX", "COST", "SESSION", "SKILL", "PHASE", "UP", "RST", "TREE")
LEAST = {"SESSION": 7, "SKILL": 5, "PHASE": 5, "HOST": 5, "FLEET": 5, "AGENT": 8, "TREE": 6}
"""The text columns, and the width each may be cut to before any column is hidden."""
CUT_FIRST = (("TREE", "SESSION", "SKILL", "PHASE"), ("HOST", "FLEET", "AGENT"))
"""The order they are cut in: what the agent is doing before which agent it is."""
WIDEST = 24
"""No column grows wider than this, however long an agent's phase."""
HIDDEN_FIRST = ("TREE", "SKILL", "SESSION", "PHASE", "RST", "UP", "COST", "CTX", "FLEET", "HOST")
"""What goes first when even the cut columns do not fit; AGENT and STATE always stay."""
PADDING = 2
"""What a table adds to each column (a space either side)."""


@dataclass(frozen=True)
class Fit:
    """The columns that fit a width: (index into :data:`COLUMNS`, width) each, and those hidden."""

    shown: tuple[tuple[int, int], ...]
    hidden: tuple[str, ...]

    def cut(self, cells: t.Sequence[str]) -> list[str]:
        return [cut(cells[index], width) for index, width in self.shown]


def fit(rows: t.Sequence[t.Sequence[str]], width: int, *, leave_out: t.Collection[str] = ()) -> Fit:
    """The widest columns of *rows* (their :meth:`AgentRow.cells`) that fit *width* terminal cells.

    Text columns are cut first, the widest first, down to :data:`LEAST`;
    only then are whole columns hidden (:data:`HIDDEN_FIRST`), and :attr:`Fit.hidden` names them so
    the screen can say so. *leave_out* are columns not wanted at all (FLEET with one fleet, HOST with
    every agent on this machine).
    """
    natural = [
        min(WIDEST, max([cell_len(name), *(cell_len(r[i]) for r in rows)])) for i, name in enumerate(COLUMNS)
    ]
    wanted = [i for i, name in enumerate(COLUMNS) if name not in leave_out]
    hideable = [name for name in HIDDEN_FIRST if name not in leave_out]
    for count in range(len(hideable) + 1):
        hidden = hideable[:count]
        shown = [i for i in wanted if COLUMNS[i] not in hidden]
        widths = _shrunk({i: natural[i] for i in shown}, width - PADDING * len(shown))
        if widths is not None:
            return Fit(tuple((i, widths[i]) for i in shown), tuple(hidden))
    kept = [i for i in wanted if COLUMNS[i] not in hideable]  # narrower than AGENT and STATE: the table crops
    return Fit(tuple((i, natural[i]) for i in kept), tuple(hideable))


def _shrunk(widths: dict[int, int], room: int) -> dict[int, int] | None:
    """*widths* cut to fit *room*, or None if they cannot: one cell at a time off the widest text
    column of the first of :data:`CUT_FIRST` that can still give one."""
    widths = dict(widths)
    excess = sum(widths.values()) - room
    for names in CUT_FIRST:
        least = {i: min(widths[i], LEAST[COLUMNS[i]]) for i in widths if COLUMNS[i] in names}
        while excess > 0 and (cuttable := [i for i in least if widths[i] > least[i]]):
            widths[max(cuttable, key=lambda i: widths[i])] -= 1
            excess -= 1
    return widths if excess <= 0 else None


def cut(text: str, width: int) -> str:
    """*text* (already :func:`printable`) cut to *width* terminal cells, its end marked by an ellipsis."""
    if cell_len(text) <= width:
        return text
    return set_cell_size(text, max(0, width - 1)).rstrip() + "…" if width > 0 else ""


def uptime(seconds: float) -> str:
    """``42s``, ``7m``, ``3h05m``, ``2d04h``, ``12d``: as short as the column allows."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86400:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds < 10 * 86400:
        return f"{seconds // 86400}d{seconds % 86400 // 3600:02d}h"
    return f"{seconds // 86400}d"


def ordered(rows: t.Iterable[AgentRow]) -> list[AgentRow]:
    """Most urgent first, then by fleet, in layout order (the sort is stable), so rows do not jump."""
    return sorted(
        rows, key=lambda r: (URGENCY.get(r.state, len(URGENCY)), r.fleet, r.socket, r.host != LOCAL, r.host)
    )


@dataclass(frozen=True)
class Gathered:
    """One look at every fleet: its agents' rows, the fleet sockets (and hosts) that did not answer,
    and the alerts given for agents on other hosts."""

    rows: list[AgentRow]
    silent: list[str]
    alerts: list[str] = field(default_factory=list)

    only: tuple[str, ...] = ()
    """The fleets looked at (names or sockets); none: all."""

    def looked(self, entry: attention.Entry) -> bool:
        """Was *entry*'s fleet seen whole (so what it no longer shows is over)? A fleet of this machine
        was when its socket answered (one that runs no more, too), another host's when the host did;
        with *only*, only the fleets named."""
        if self.only and entry.fleet not in self.only and entry.socket not in self.only:
            return False
        silent = {name.split(" (")[0] for name in self.silent}
        if entry.host == LOCAL:
            return entry.socket not in silent
        return entry.host not in silent and any(
            r.host == entry.host and r.socket == entry.socket for r in self.rows
        )


def ref_of(row: AgentRow) -> attention.AgentRef:
    """The attention queue's name of *row*'s agent."""
    return attention.ref_for(row.host, row.socket, row.status)


def observed(
    rows: t.Sequence[AgentRow],
    looked: t.Callable[[attention.Entry], bool],
    queue: attention.Queue | None = None,
) -> list[attention.Entry]:
    """*rows* taken into the attention queue (:meth:`~claude_shepherd.supervisor.attention.Queue.observe`):
    what waits for a person, ranked, the snoozed among them (each says it is quiet)."""
    pairs = [(ref_of(row), kind) for row in rows for kind in attention.kinds_of(row.status)]
    return (queue or attention.Queue()).observe(pairs, looked)


def queue_lines(entries: t.Sequence[attention.Entry], now: float, most: int = 5) -> list[str]:
    """The attention queue as the watch shows it above the table: what waits first, then how many are
    snoozed."""
    waiting = [e for e in entries if not e.quiet(now)]
    snoozed = len(entries) - len(waiting)
    lines = [
        f"{'!' if e.tier == 0 else '·'} {e.words()} — {e.where}, waiting {uptime(now - e.opened)}"
        for e in waiting[:most]
    ]
    if len(waiting) > most:
        lines.append(f"  and {len(waiting) - most} more")
    if not waiting:
        lines.append("Nothing needs you.")
    if snoozed:
        lines.append(f"  ({snoozed} snoozed)")
    return lines


def gather(only: t.Collection[str] = (), relay: Relay | None = None) -> Gathered:
    """Every agent row of every fleet server that answers, from one process-table snapshot, and of
    every other host a fleet started here spans (:func:`gather_hosts`).

    *only* names the fleets wanted (a fleet's session name or its socket name); none means all.
    """
    fleets = live_fleets()
    silent = sorted(Path(path).name for path in fleets.unanswered)
    rows: list[AgentRow] = []
    if fleets.servers:
        table = pr.snapshot(with_env=False)  # each agent's own environment is read when its row needs it
        for path, server in fleets.servers.items():
            panes = [
                p for p in fleets.panes[path] if not only or p.session in only or server.socket_name in only
            ]
            rows += [
                AgentRow(server.socket_name, status)
                for status in with_dialogs(server, panes, pane_rows(path, panes, table), table)
                if status.label or status.supervisor_alive
            ]  # not an unlabelled shell (or this watch)
    remote = gather_hosts(only, relay)
    return Gathered(ordered(rows + remote.rows), silent + remote.silent, remote.alerts, tuple(only))


HOST_WAIT = 5.0
"""Seconds the watch waits for another host's rows (at most ``$FLEET_HOST_TIMEOUT``): the local rows
wait with them."""


def gather_hosts(only: t.Collection[str] = (), relay: Relay | None = None) -> Gathered:
    """The rows of every other host of the fleets started here that span hosts, all asked at once; a
    host that does not answer shows its agents ``unknown`` and is named among the silent."""
    from claude_shepherd.fleet.hosts.span import remembered
    from claude_shepherd.fleet.hosts.span_status import gather as host_rows
    from claude_shepherd.fleet.hosts.transport import host_timeout

    wanted = [
        (span, part)
        for span in remembered()
        if not only or span.layout.name in only or span.layout.socket_name in only
        for part in span.parts
        if part.name != LOCAL  # this machine's part is among the local fleets
    ]
    if not wanted:
        return Gathered([], [])
    timeout = min(HOST_WAIT, host_timeout())
    with ThreadPoolExecutor(max_workers=min(32, len(wanted))) as pool:
        looks = list(pool.map(lambda pair: host_rows(pair[0], [pair[1]], timeout)[0], wanted))
    rows: list[AgentRow] = []
    silent: list[str] = []
    for (span, _), look in zip(wanted, looks):
        rows += [AgentRow(span.layout.socket_name, status, look.part.name) for status in look.rows]
        if look.problem:
            silent.append(f"{look.part.name} ({look.problem})")
    answered = [
        (span.layout, look.part, look.rows) for (span, _), look in zip(wanted, looks) if not look.problem
    ]
    return Gathered(rows, silent, relay.see(answered) if relay is not None else [])


def fleet_name(fleet: str, socket: str) -> str:
    """A fleet as the person knows it: its name, and its socket unless that is the default ``fleet``."""
    return fleet if socket == "fleet" else f"{fleet} ({socket})"


def fleets_of(rows: t.Iterable[AgentRow]) -> list[tuple[str, str]]:
    """The (fleet, socket) pairs *rows* belong to, sorted."""
    return sorted({(r.fleet, r.socket) for r in rows})


def totals(rows: t.Sequence[AgentRow]) -> list[str]:
    """One line per fleet: how many agents, how many in each state that matters, what they cost; for a
    fleet across hosts, then one indented line per host (a line each, so none wraps at 80 columns)."""
    lines: list[str] = []
    for fleet in fleets_of(rows):
        mine = [r for r in rows if (r.fleet, r.socket) == fleet]
        lines.append(_summary(fleet_name(*fleet), mine))
        hosts = sorted({r.host for r in mine}, key=lambda h: (h != LOCAL, h))
        if len(hosts) > 1:
            lines += [_summary(f"  {host}", [r for r in mine if r.host == host]) for host in hosts]
    lines += usage_lines([r.status for r in rows])  # usage windows per credential; who waits for a reset
    return lines


def _summary(name: str, rows: t.Sequence[AgentRow]) -> str:
    counts = [f"{n} {state}" for state in URGENCY if state and (n := sum(r.state == state for r in rows))]
    costs = [r.status.cost_usd for r in rows if r.status.cost_usd is not None]
    agents = f"{len(rows)} agent{'s' * (len(rows) != 1)}"
    return " · ".join([f"{name}: {agents}", *counts, f"${sum(costs):.2f}"])


# --------------------------------------------------------------------------- what the keys do
#
# Each key asks the row's own fleet (:func:`claude_shepherd.fleet.resolve.of_row`): this machine's, or
# the fleet across hosts whose part on the row's host runs the agent.


def attach_command(row: AgentRow, env: t.Mapping[str, str] | None = None) -> tuple[list[str], bool]:
    """The command that shows *row*'s pane, and whether it takes over the terminal
    (as ``fleet attach`` does: see :mod:`claude_shepherd.fleet.attach`)."""
    return of_row(row).attach_command(row, env)


def attach_env(env: t.Mapping[str, str] | None = None) -> dict[str, str]:
    from claude_shepherd.fleet.attach import attach_env as without_tmux

    return without_tmux(env)


Told = t.Callable[[str], None]
"""Where a key's action says something before it is done (the watch shows it as a toast)."""


def _quiet(_: str) -> None:
    return None


def _never() -> bool:
    return False


def stop_agent(
    row: AgentRow, grace: float, *, told: Told = _quiet, cancelled: t.Callable[[], bool] = _never
) -> str:
    """Stop *row*'s agent as ``fleet stop --pane`` does (its pane stays; its conversation resumable),
    holding its fleet's lock."""
    return of_row(row).stop_agent(row, grace, told=told, cancelled=cancelled)


def restart_agent(
    row: AgentRow, grace: float, *, told: Told = _quiet, cancelled: t.Callable[[], bool] = _never
) -> str:
    """Stop *row*'s agent gracefully, then start it again: it resumes its conversation."""
    return of_row(row).restart_agent(row, grace, told=told, cancelled=cancelled)


def log_lines(row: AgentRow, count: int = 500) -> list[str]:
    """The pane's recent output, claude-run's own lines included (``fleet logs``)."""
    return of_row(row).log_lines(row, count)
