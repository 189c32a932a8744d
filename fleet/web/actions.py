"""What a person may do from ``fleet web``: restart an agent, raise a budget, snooze an entry.

Each is a verb the fleet already has, by the same code path: a restart is the watch's ``r``
(:meth:`~claude_shepherd.fleet.handle.Fleet.restart_agent`: the agent's own pane, its fleet's lock, a
graceful stop, its conversation resumed), a raise is ``fleet budget --add`` (which lets paused agents
go on), a snooze is the attention queue's. None types into a pane.

Generation-safe: an action names the agent as the page showed it (its host, fleet socket, pane and
``session:window:label``); the fleet is looked at again first, and the action is refused when that
pane is gone or now holds another agent (an agent can relabel its pane; a fleet started again gives
its panes new ids). Every input is checked for type and size before it is used.
"""

from __future__ import annotations

import math
import typing as t
from dataclasses import dataclass

from claude_shepherd.fleet.output import Printer
from claude_shepherd.fleet.watch import AgentRow
from claude_shepherd.supervisor import attention
from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.printable import printable
from claude_shepherd.supervisor.tmux_names import is_fleet_socket

MAX_FIELD = 300
"""Characters of one text field of a request at most (identities are far shorter)."""
GRACE = 10.0
"""Seconds a restarted agent's Claude has to end before it is killed (as ``fleet restart``'s default)."""


class Refused(ShepherdError):
    """The request cannot be done as asked; the message says why and what to do. *status* is HTTP's."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Seen:
    """An agent as the page showed it: what every action names."""

    host: str
    socket: str
    pane: str
    identity: str

    @property
    def fleet(self) -> str:
        return self.identity.partition(":")[0]


def _text(body: t.Mapping[str, object], name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value or len(value) > MAX_FIELD:
        raise Refused(f"{name} must be text of 1 to {MAX_FIELD} characters; reload the page")
    return value


def seen_of(body: object) -> Seen:
    """The agent a request names, checked."""
    if not isinstance(body, dict):
        raise Refused("the request must be a JSON object; reload the page")
    seen = Seen(_text(body, "host"), _text(body, "socket"), _text(body, "pane"), _text(body, "identity"))
    if not is_fleet_socket(seen.socket):
        raise Refused(f"{printable(seen.socket)!r} is no fleet socket; reload the page")
    if seen.identity.count(":") < 2:
        raise Refused("identity is session:window:label; reload the page")
    return seen


def current(seen: Seen) -> AgentRow:
    """*seen*'s agent as its fleet shows it now; refused if its pane is gone or holds another agent."""
    from claude_shepherd.fleet.web.view import _status

    report = _status(seen.fleet, seen.socket)
    if isinstance(report, str):
        raise Refused(f"fleet {printable(seen.fleet)!r} did not answer: {report}", 409)
    hosts = report.host_column() or ["local"] * len(report.rows)
    rows = [AgentRow(seen.socket, row, host) for row, host in zip(report.rows, hosts) if host == seen.host]
    here = [row for row in rows if row.status.pane == seen.pane]
    if not here:
        raise Refused(f"{printable(seen.identity)}: its pane {printable(seen.pane)} is gone; look again", 409)
    row = here[0]
    if row.identity[2] != seen.identity:
        raise Refused(
            f"pane {printable(seen.pane)} now holds {printable(row.identity[2])}, not "
            f"{printable(seen.identity)}: nothing was done; look again",
            409,
        )
    if sum(r.identity[2] == seen.identity for r in rows) > 1:
        raise Refused(
            f"two panes carry {printable(seen.identity)}: nothing was done; `fleet doctor` says why", 409
        )
    return row


def restart(body: object, grace: float = GRACE) -> str:
    """Stop the agent gracefully and start it again, resuming its conversation (the watch's ``r``)."""
    from claude_shepherd.fleet.resolve import of_row

    row = current(seen_of(body))
    return printable(of_row(row).restart_agent(row, grace, told=_quiet, cancelled=_never))


def raise_budget(body: object) -> str:
    """``fleet budget FLEET [--window W] [--pane LABEL] --add USD`` of the budget nearest to holding the
    agent (its pane's, window's or fleet's): paused agents within budget then go on."""
    from claude_shepherd.fleet.resolve import resolve
    from claude_shepherd.supervisor.session.budgets import amount_problem

    usd = body.get("add_usd") if isinstance(body, dict) else None
    if isinstance(usd, bool) or not isinstance(usd, (int, float)) or not math.isfinite(usd):
        raise Refused("add_usd must be a number of dollars like 5 or 2.50")
    usd = round(float(usd), 2)
    problem = amount_problem(usd)
    if problem is not None:
        raise Refused(f"${usd:g} {problem}; give a whole number of cents like 5 or 2.50")
    row = current(seen_of(body))
    s = row.status
    scope = s.budget_scope if s.budget_usd is not None else None
    if scope not in ("pane", "window", "fleet"):
        what = "no budget holds it" if scope is None else "its own claude-run --budget-usd holds it"
        raise Refused(f"{row.name}: {what}; nothing for the fleet to raise", 409)
    pane = (s.label if row.host == "local" else f"{row.host}/{s.label}") if scope == "pane" else None
    window = s.window if scope in ("pane", "window") else None
    out = Printer().use_json(True)  # what the verb says is kept, not printed on the server's terminal
    report = resolve(out, row.fleet, row.socket, verb="budget").budget(window, pane, None, usd, None)
    failure = report.failure()
    if failure is not None:
        raise Refused(printable(str(failure)), 409)
    return printable(" ".join(_outcome(report.lines()))[:2000])


OUTCOME = ("Budget of ", "Resumed ", "Still paused")
"""What a raise said that matters on a phone: what changed, who went on, who is still held (not the
table of every budget, which the page shows per agent)."""


def _outcome(lines: t.Iterable[str]) -> list[str]:
    said = [line.strip() for line in lines if line.strip()]
    kept = [line for line in said if any(word in line for word in OUTCOME)]
    return kept or said[:1]


def snooze(body: object, queue: attention.Queue) -> str:
    """Quiet a queue entry for an hour, or until it changes: everywhere (the watch, the notify command)."""
    if not isinstance(body, dict):
        raise Refused("the request must be a JSON object; reload the page")
    key = _text(body, "key")
    opened = body.get("opened")
    if isinstance(opened, bool) or not isinstance(opened, (int, float)) or not math.isfinite(opened):
        raise Refused("opened must be the entry's opening time as the page got it; reload the page")
    until = body.get("until")
    if until not in ("hour", "change"):
        raise Refused('until must be "hour" or "change"')
    try:
        entry = queue.snooze(key, hour=until == "hour", opened=float(opened))
    except attention.GoneError as exc:
        raise Refused(str(exc), 409) from None
    how = "for an hour" if until == "hour" else "until it changes"
    return printable(f"Snoozed {entry.words()} ({entry.where}) {how}.")


def _quiet(_: str) -> None:
    return None


def _never() -> bool:
    return False
