"""Alerts of agents on other hosts, given on this machine: where the person runs ``fleet watch``.

A remote agent's hooks alert on its own host (that tmux's clients, bell), where
nobody may be looking. The watch sees every remote row once per refresh; when
an agent's state *changes into* one its fleet alerts on, or its spend reaches
80 % of a budget (``budget``, where the fleet alerts on ``paused``, as a local
pane's hook does), the relay runs the fleet's notify command here — the same command, values and timeout as a local
pane's (:mod:`claude_shepherd.supervisor.alerts`), ``{host}`` naming the host, at
most once per :data:`~claude_shepherd.supervisor.pane_notify.ALERT_COOLDOWN` per
agent and state — and says one line for the watch to show and ring.

A host is trusted only for its own rows: the panes its part of the layout
names (the fleet's session, the host's windows, their labels). A row of any
other pane pages nobody, so a host cannot page for agents it does not run, nor
as another host's. One refresh starts at most :data:`MAX_ALERTS` alerts; past
that, the rest are one summary alert.
"""

from __future__ import annotations

import math
import os
import threading
import time
import typing as t
from dataclasses import dataclass
from pathlib import Path

from claude_shepherd.fleet.builder import notify_command
from claude_shepherd.fleet.hosts.span import Part
from claude_shepherd.fleet.layout import Layout
from claude_shepherd.fleet.pane_status import PaneStatus
from claude_shepherd.supervisor import alerts
from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.pane_notify import ALERT_COOLDOWN
from claude_shepherd.supervisor.printable import printable
from claude_shepherd.supervisor.session import spend
from claude_shepherd.supervisor.session.budgets import ALERT_AT
from claude_shepherd.supervisor.tmux_names import ALERT_STATES, BUDGET_ALERT, EXITED, PAUSED

MAX_ALERTS = 5
"""Notify commands one refresh starts at most: past it, the first four and one summary of the rest."""

Look = tuple[Layout, Part, t.Sequence[PaneStatus]]
"""One host's rows of one fleet, as one refresh of the watch saw them."""


@dataclass(frozen=True)
class _Alert:
    layout: Layout
    host: str
    label: str
    state: str
    session: str


class Relay:
    """What each remote agent was last seen doing, and when each alert last went out."""

    def __init__(
        self,
        *,
        clock: t.Callable[[], float] = time.monotonic,
        run: t.Callable[[list[str]], object] | None = None,
    ) -> None:
        self.clock = clock
        self.run = run or _run_detached
        self.seen: dict[tuple[str, str, str, str], str] = {}
        self.nearly: dict[tuple[str, str, str, str], tuple[t.Any, ...] | None] = {}
        self.sent: dict[tuple[tuple[str, str, str, str], str], float] = {}

    def see(self, looks: t.Iterable[Look]) -> list[str]:
        """Take in one refresh's rows of every host; the alerts given, one line each."""
        due = [alert for layout, part, rows in looks for alert in self._changed(layout, part, rows)]
        due.sort(key=_urgency)  # the most urgent are paged one by one
        if len(due) <= MAX_ALERTS:
            return [self._give(alert) for alert in due]
        return [*(self._give(alert) for alert in due[: MAX_ALERTS - 1]), self._summary(due[MAX_ALERTS - 1 :])]

    def _changed(self, layout: Layout, part: Part, rows: t.Iterable[PaneStatus]) -> list[_Alert]:
        """*part*'s own agents among *rows* that changed into a state *layout* alerts on, out of their
        cooldown."""
        if not layout.notify_tmux:
            return []  # notify: false silences the fleet everywhere
        own = set(part.labels)
        due: list[_Alert] = []
        for row in rows:
            if row.session != layout.name or not row.label or (row.window, row.label) not in own:
                continue  # not an agent of this host's part: it pages nobody
            key = (part.name, layout.socket_name, row.window, row.label)
            state = EXITED if row.state.startswith(EXITED) else row.state
            before = self.seen.get(key)
            self.seen[key] = state
            nearly, was = _nearly(row, time.time()), self.nearly.get(key)
            self.nearly[key] = nearly
            if before is None:
                continue  # the first look is no transition: the watch shows what is, it does not page
            session = Path(row.session_dir).name if row.session_dir else ""
            if before != state and state in layout.notify_on and self._due(key, state):
                due.append(_Alert(layout, part.name, row.label, state, session))
            if nearly not in (None, was) and PAUSED in layout.notify_on and self._due(key, BUDGET_ALERT):
                due.append(_Alert(layout, part.name, row.label, BUDGET_ALERT, session))  # as a local pane's
        return due

    def _due(self, key: tuple[str, str, str, str], state: str) -> bool:
        """Is *key*'s alert of *state* out of its cooldown (then it is sent now)?"""
        now = self.clock()
        if now - self.sent.get((key, state), -math.inf) < ALERT_COOLDOWN:
            return False
        self.sent[(key, state)] = now
        return True

    def _give(self, alert: _Alert) -> str:
        self._notify(alert.layout, alert.host, alert.label, alert.state, alert.session)
        return alerts.words(alert.state, f"{alert.host}/{alert.label}")

    def _summary(self, rest: list[_Alert]) -> str:
        """One alert for *rest*: how many agents, in which states, on which hosts."""
        hosts = ", ".join(sorted({alert.host for alert in rest}))
        states = {alert.state: sum(a.state == alert.state for a in rest) for alert in rest}
        label = f"{len(rest)} more agents"
        first = next((a for a in rest if _command(a.layout)), rest[0])
        self._notify(first.layout, hosts, label, rest[0].state, "")
        counts = ", ".join(f"{n} {state}" for state, n in states.items())
        return printable(f"{hosts}: {label} changed state ({counts}); each is in the table")

    def _notify(self, layout: Layout, host: str, label: str, state: str, session: str) -> None:
        command = _command(layout)
        if command:
            values = {"fleet": layout.name, "label": label, "state": state, "session": session, "host": host}
            self.run(alerts.substitute(command, values))


def _nearly(row: PaneStatus, now: float) -> tuple[t.Any, ...] | None:
    """The budget *row*'s agent spent 80 % of, in its current day or week (what a local pane's hook
    alerts on once), or None."""
    usd, spent = row.budget_usd, row.budget_spent
    if usd is None or spent is None or not spent >= usd * ALERT_AT:
        return None
    period = {"day": spend.day_of(now), "week": min(spend.week_days(now))}.get(row.budget_per or "", "")
    return (row.budget_scope, usd, row.budget_per, period)


def _urgency(alert: _Alert) -> int:
    return ALERT_STATES.index(alert.state) if alert.state in ALERT_STATES else len(ALERT_STATES)


def _command(layout: Layout) -> tuple[str, ...] | None:
    try:
        return notify_command(layout)
    except ShepherdError:
        return None


def _run_detached(argv: list[str]) -> None:
    """The notify command in a thread of its own, ended at ``$FLEET_NOTIFY_TIMEOUT``: the watch goes on."""
    limit = alerts.timeout(os.environ)
    threading.Thread(target=alerts.run_command, args=(argv, limit), daemon=True).start()
