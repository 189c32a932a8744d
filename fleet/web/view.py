"""What ``fleet web`` shows: every fleet's rows, looked at through the one fleet handle, and the queue.

:func:`look` asks each running fleet of this machine, and each fleet across hosts started here, for
its ``fleet status`` report (:meth:`~claude_shepherd.fleet.handle.Fleet.status`), all at once; the
rows are the watch's :class:`~claude_shepherd.fleet.watch.AgentRow` (a row and where it runs), so the
states, costs and budgets are the ones ``fleet status`` prints, never derived again here. The look is
taken into the attention queue (:meth:`~claude_shepherd.supervisor.attention.Queue.observe`), and
:func:`document` turns both into the JSON the page draws. Every text in it is as agents and hosts
wrote it: the page puts it in ``textContent`` only (:mod:`.page`), never in markup.
"""

from __future__ import annotations

import time
import typing as t
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from claude_shepherd.fleet.hosts import LOCAL
from claude_shepherd.fleet.output import Printer
from claude_shepherd.fleet.status_table import shown_state, usage_lines
from claude_shepherd.fleet.watch import AgentRow, cost_cell, observed, ordered
from claude_shepherd.supervisor import attention
from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.printable import printable
from claude_shepherd.supervisor.session.paths import display_name
from claude_shepherd.supervisor.tmux_names import LIMITED, NEEDS_YOU, NOT_RUNNING, PAUSED, UNKNOWN

if t.TYPE_CHECKING:
    from claude_shepherd.fleet.handle import StatusReport


@dataclass(frozen=True)
class Look:
    """One look at every fleet: its agents' rows, what did not answer, and which (host, socket) pairs
    answered (the queue resolves only their entries)."""

    rows: list[AgentRow]
    silent: list[str] = field(default_factory=list)
    answered: frozenset[tuple[str, str]] = frozenset()
    seen_at: float = 0.0

    def looked(self, entry: attention.Entry) -> bool:
        """Was *entry*'s fleet looked at whole (a fleet of this machine that runs no more was: nothing
        of it waits)? One on a host that did not answer was not."""
        where = (entry.host, entry.socket)
        return where in self.answered or (entry.host == LOCAL and where not in self.unanswered)

    @property
    def unanswered(self) -> frozenset[tuple[str, str]]:
        return frozenset((LOCAL, name.split(" ")[0]) for name in self.silent)


def look() -> Look:
    """Every agent of every fleet this user runs here and on the hosts of fleets started here."""
    from claude_shepherd.fleet.hosts.span import remembered
    from claude_shepherd.fleet.live import live_fleets

    fleets = live_fleets()
    silent = sorted(Path(path).name for path in fleets.unanswered)
    spans = remembered()
    spanned = {(s.layout.socket_name, s.layout.name) for s in spans}
    local = sorted(
        {
            (server.socket_name, pane.session)
            for path, server in fleets.servers.items()
            for pane in fleets.panes[path]
        }
        - spanned
    )
    asked = [(name, socket) for socket, name in local] + [
        (s.layout.name, s.layout.socket_name) for s in spans
    ]
    if not asked:
        return Look([], silent, frozenset(), time.time())
    with ThreadPoolExecutor(max_workers=min(8, len(asked))) as pool:
        reports = list(pool.map(lambda pair: _status(*pair), asked))
    rows: list[AgentRow] = []
    answered: set[tuple[str, str]] = set()
    for (name, socket), report in zip(asked, reports):
        if isinstance(report, str):
            silent.append(f"{name} ({report})")
            continue
        hosts = report.host_column() or [LOCAL] * len(report.rows)
        problems = {h.part.name for h in report.hosts or () if h.problem}
        silent += [f"{h.part.name} ({h.problem})" for h in report.hosts or () if h.problem]
        answered |= {(host, socket) for host in set(hosts) - problems}
        rows += [
            AgentRow(socket, row, host)
            for row, host in zip(report.rows, hosts)
            if (row.label or row.supervisor_alive) and row.state != NOT_RUNNING
        ]
    return Look(ordered(rows), silent, frozenset(answered), time.time())


def _status(name: str, socket: str) -> StatusReport | str:
    """Fleet *name*'s report on *socket*, as ``fleet status NAME --socket SOCKET`` makes it; or why not."""
    from claude_shepherd.fleet.resolve import resolve

    try:
        return resolve(Printer().use_json(True), name, socket, verb="status").status()
    except ShepherdError as exc:
        return printable(str(exc))


def taken_in(seen: Look, queue: attention.Queue) -> list[attention.Entry]:
    """*seen* taken into the attention queue, as the watch takes its rows: what waits, ranked."""
    return observed(seen.rows, seen.looked, queue)


# --------------------------------------------------------------------------- the page's document


def document(seen: Look, entries: t.Sequence[attention.Entry], now: float | None = None) -> dict[str, object]:
    """The JSON the page draws: the queue (what waits first, the snoozed apart), every agent, each
    fleet's usage windows, and what did not answer."""
    now = time.time() if now is None else now
    rows = seen.rows
    return {
        "seen_at": seen.seen_at,
        "queue": [_entry(e, now) for e in entries if not e.quiet(now)],
        "snoozed": [_entry(e, now) for e in entries if e.quiet(now)],
        "agents": [agent(row, now) for row in rows],
        "fleets": _fleets(rows),
        "usage": [printable(line.strip()) for line in usage_lines([r.status for r in rows])],
        "silent": [printable(s) for s in seen.silent],
    }


def agent(row: AgentRow, now: float) -> dict[str, object]:
    """One agent's card: who it is (and its identity as seen, which every action names), how it is, and
    what it waits for."""
    s = row.status
    return {
        "key": row.key,
        "host": row.host,
        "socket": row.socket,
        "pane": s.pane,
        "identity": row.identity[2],
        "where": printable(row.where),
        "label": printable(row.name),
        "fleet": printable(row.fleet),
        "window": printable(s.window),
        "state": printable(shown_state(s, now) if s.limited_until is not None else (row.state or "—")),
        "kind": _state_kind(row),
        "phase": printable(s.phase or ""),
        "skill": printable(s.skill or ""),
        "session": printable(display_name(Path(s.session_dir))) if s.session_dir else "",
        "context": f"{s.context_usage * 100:.0f}%" if s.context_usage is not None else "—",
        "spend": printable(cost_cell(s)),
        "budget_scope": s.budget_scope if s.budget_usd is not None else None,
        "paused": s.paused,
        "waits_for": waits_for(row, now),
        "restartable": row.host == LOCAL or s.state != UNKNOWN,
        "raisable": s.budget_usd is not None,
    }


def _state_kind(row: AgentRow) -> str:
    """The state's colour on the page (one of a few names the page's CSS knows)."""
    state = row.state
    if row.status.paused:
        return "paused"
    known = ("needs-you", "error", "exited", "working", "done", "limited", "stopped", "paused", "unknown")
    return state if state in known else "none"


def waits_for(row: AgentRow, now: float) -> str:
    """What the agent waits for, in words: a person, a bigger budget, a usage window; or ""."""
    from claude_shepherd.supervisor.session.usage_windows import clock

    s = row.status
    kinds = attention.kinds_of(s)
    if NEEDS_YOU in kinds:
        return "you: a question or a permission in its pane"
    if PAUSED in kinds:
        spent = f"${s.budget_spent:.2f} spent of " if s.budget_spent is not None else ""
        limit = f"${s.budget_usd:.2f}" if s.budget_usd is not None else "its budget"
        return f"a bigger budget: {spent}{limit} ({s.budget_scope or 'budget'})"
    if LIMITED in kinds and s.limited_until is not None:
        window = s.limited_window or "usage"
        if now < s.limited_until:
            return f"the {window} window: reopens {clock(s.limited_until)}"
        return f"its turn after the {window} window reopened"
    return ""


def _entry(entry: attention.Entry, now: float) -> dict[str, object]:
    return {
        "key": entry.key,
        "id": entry.id,
        "kind": entry.kind,
        "tier": entry.tier,
        "tier_name": attention.TIER_NAMES[entry.tier] if entry.tier < len(attention.TIER_NAMES) else "",
        "words": printable(entry.words()),
        "where": printable(entry.where),
        "host": entry.host,
        "socket": entry.socket,
        "agent": entry.agent,
        "count": entry.count,
        "opened": entry.opened,
        "age": max(0.0, now - entry.opened),
        "snoozed_until": entry.snoozed_until,
        "snoozed_change": entry.snoozed_change,
    }


def _fleets(rows: t.Sequence[AgentRow]) -> list[dict[str, object]]:
    out = []
    for fleet, socket in sorted({(r.fleet, r.socket) for r in rows}):
        mine = [r for r in rows if (r.fleet, r.socket) == (fleet, socket)]
        costs = [r.status.cost_usd for r in mine if r.status.cost_usd is not None]
        out.append({
            "name": printable(fleet),
            "socket": socket,
            "hosts": sorted({r.host for r in mine}, key=lambda h: (h != LOCAL, h)),
            "agents": len(mine),
            "spent": f"${sum(costs):.2f}" if costs else "—",
        })  # fmt: skip
    return out
