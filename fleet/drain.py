"""``fleet drain``: a planned reboot. Each agent reaches a safe point, then the fleet stops and is kept
meant to run, so the next ``fleet start --all`` brings it back.

A safe point is the end of the agent's turn: its pane's state (``@pane_notify``,
which the hooks publish) is no longer ``working``. With ``--dehydrate`` each
agent is first asked, by the one typing routine
(:func:`claude_shepherd.hooks.pane_typing.type_prompt`), to save its handover
with ``session dehydrate --no-restart``, and its turn doing so is waited for. An agent still
working at the deadline is stopped anyway, as ``fleet stop`` stops it: its
conversation resumes at the next start, from its last saved point, and its line
says so.
"""

from __future__ import annotations

import time
import typing as t
from dataclasses import dataclass

from claude_shepherd.fleet.output import Say
from claude_shepherd.supervisor.tmux_names import WORKING

if t.TYPE_CHECKING:
    from claude_shepherd.fleet.local import LocalFleet
    from claude_shepherd.fleet.tmux import FleetServer, PaneInfo

POLL = 0.5
TYPE_WAIT = 30.0
"""Seconds, at most, for a Claude to take the handover prompt before the turn it starts is waited for."""
DEHYDRATE_PROMPT = (
    "The fleet is being drained for a planned reboot. Save your handover now: run `session dehydrate "
    "--no-restart DIR` for your session (it records where you are and what comes next), then stop and wait: "
    "this conversation resumes after the reboot."
)
"""``--no-restart``: a restart now would start a fresh Claude on the continue prompt in the middle of the
drain; the conversation itself resumes at the next start, the handover kept beside it."""


@dataclass(frozen=True)
class Reached:
    """One agent of a drain: whether it reached a safe point before the deadline."""

    name: str
    safe: bool
    how: str

    def line(self) -> str:
        return f"  {self.name}  {self.how}"


def drain(fleet: LocalFleet, deadline: float, dehydrate: bool, say: Say) -> list[Reached]:
    """Bring each agent of *fleet* to a safe point (within *deadline* seconds), stop the fleet, and keep it
    meant to run. The stop's report is shown by the caller."""
    from claude_shepherd.fleet.tmux import list_panes

    where = fleet.where
    server = where.server()
    sessions = where.running_sessions(server)
    agents = [p for p in list_panes(server) if p.session in sessions and p.agent and not p.dead]
    ends = time.monotonic() + deadline
    say(f"Draining {', '.join(repr(s) for s in sessions)} (socket {where.socket}): {len(agents)} agent(s), "
        f"{deadline:g}s at most{', each saving its handover first' if dehydrate else ''}")  # fmt: skip
    typed: dict[str, bool] = {}
    if dehydrate:
        typed = {p.pane_id: _ask_handover(where.socket, p, ends) for p in agents}
    reached = _wait_safe(server, agents, typed, ends)
    for one in reached:
        say(one.line())
    return reached


def _identity(pane: PaneInfo) -> str:
    return f"{pane.session}:{pane.window}:{pane.label}"


def _ask_handover(socket: str, pane: PaneInfo, ends: float) -> bool:
    """Type the handover prompt into *pane* once its Claude reads the keys (True: typed)."""
    from claude_shepherd.hooks.pane_typing import type_prompt
    from claude_shepherd.supervisor.session.identity import start_token

    token = start_token(pane.pid)
    if token is None or not pane.label:
        return False
    until = min(ends, time.monotonic() + TYPE_WAIT)
    return type_prompt(socket, pane.pane_id, _identity(pane), DEHYDRATE_PROMPT, (pane.pid, token),
                       lambda: time.monotonic() < until)  # fmt: skip


def _wait_safe(
    server: FleetServer, agents: list[PaneInfo], typed: dict[str, bool], ends: float
) -> list[Reached]:
    """Wait until no agent is working (a typed prompt: until its turn has begun and ended), or the end."""
    from claude_shepherd.fleet.tmux import list_panes

    began = {pane_id for pane_id, ok in typed.items() if not ok}  # nothing typed: no turn to wait for
    state: dict[str, str] = {}
    while True:
        now = {p.pane_id: ("stopped" if p.dead else p.notify) for p in list_panes(server)}
        for pane in agents:
            state[pane.pane_id] = now.get(pane.pane_id, "gone")
            if state[pane.pane_id] == WORKING:
                began.add(pane.pane_id)
        busy = [
            p
            for p in agents
            if state[p.pane_id] == WORKING or (typed.get(p.pane_id) and p.pane_id not in began)
        ]
        if not busy or time.monotonic() >= ends:
            break
        time.sleep(POLL)
    out = []
    for pane in agents:
        name = f"{pane.window}:{pane.label or pane.pane_id}"
        if pane in busy:
            out.append(Reached(name, False, "NOT at a safe point by the deadline (still working): stopped anyway; "
                                            "its conversation resumes at the next start from its last saved point"))  # fmt: skip
        elif typed.get(pane.pane_id):
            out.append(Reached(name, True, "saved its handover (its turn ended)"))
        elif pane.pane_id in typed:
            out.append(Reached(name, True, f"{state[pane.pane_id] or 'idle'}: the handover prompt could not be typed "
                                           "(its Claude did not take keys); its turn had ended"))  # fmt: skip
        else:
            out.append(Reached(name, True, f"at a safe point ({state[pane.pane_id] or 'idle'})"))
    return out
