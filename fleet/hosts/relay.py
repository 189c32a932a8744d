"""Alerts of agents on other hosts, given on this machine: where the person runs ``fleet watch``.

A remote agent's hooks alert on its own host (that tmux's clients, bell), where
nobody may be looking. The watch sees every remote row once per refresh; when
an agent's state *changes into* one its fleet alerts on, the relay runs the
fleet's notify command here — the same command, values and timeout as a local
pane's (:mod:`claude_shepherd.hooks.alerts`), at most once per
:data:`~claude_shepherd.hooks.pane_notify.ALERT_COOLDOWN` per agent and state —
and says one line for the watch to show and ring.
"""

from __future__ import annotations

import math
import os
import threading
import time
import typing as t
from pathlib import Path

from claude_shepherd.fleet.builder import notify_command
from claude_shepherd.fleet.layout import Layout
from claude_shepherd.fleet.status import PaneStatus
from claude_shepherd.hooks import alerts
from claude_shepherd.hooks.pane_notify import ALERT_COOLDOWN
from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.tmux_names import EXITED


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
        self.seen: dict[tuple[str, str, str], str] = {}
        self.sent: dict[tuple[tuple[str, str, str], str], float] = {}

    def see(self, layout: Layout, host: str, rows: t.Iterable[PaneStatus]) -> list[str]:
        """Take in *host*'s rows of *layout*'s fleet; the alerts given, one line each."""
        said: list[str] = []
        if not layout.notify_tmux:
            return said  # notify: false silences the fleet everywhere
        try:
            command = notify_command(layout)
        except ShepherdError:
            command = None
        for row in rows:
            key = (host, layout.socket_name, row.pane_id or row.pane)
            state = EXITED if row.state.startswith(EXITED) else row.state
            before = self.seen.get(key)
            self.seen[key] = state
            if before is None or before == state or state not in layout.notify_on:
                continue  # the first look is no transition: the watch shows what is, it does not page
            now = self.clock()
            if now - self.sent.get((key, state), -math.inf) < ALERT_COOLDOWN:
                continue
            self.sent[(key, state)] = now
            label = row.label or row.pane
            if command:
                values = {
                    "fleet": layout.name,
                    "label": label,
                    "state": state,
                    "session": Path(row.session_dir).name if row.session_dir else "",
                }
                self.run(alerts.substitute(command, values))
            said.append(alerts.words(state, f"{host}/{label}"))
        return said


def _run_detached(argv: list[str]) -> None:
    """The notify command in a thread of its own, ended at ``$FLEET_NOTIFY_TIMEOUT``: the watch goes on."""
    limit = alerts.timeout(os.environ)
    threading.Thread(target=alerts.run_command, args=(argv, limit), daemon=True).start()
