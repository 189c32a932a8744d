"""What each agent spent: the spend ledger budgets are checked against, as it is read.

One small file per agent — the fleet pane identity ``session:window:label``, or outside a fleet the
claude-run's own (:func:`pane_records.spot`) — under ``<root>/.shepherd/spend/`` (out of the file tools'
reach, like the rest of ``.shepherd``). It holds the lifetime total, what was added each local day (so
"per day" and "per week" budgets work), per conversation what Claude said and what was priced since
(:func:`.spend_readings.entry_of`), and ``"source"``: ``"measured"`` while every figure is Claude's,
``"estimated"`` while some priced reply is not yet in one. An agent without a ledger has spent an
*unknown* amount, never a guessed 0.

How a figure counts is :mod:`.spend_readings`'s; the status line, the hooks (of an agent held to a
budget) and claude-run write the ledger through :mod:`.spend_writes`. Beside it lies what the budget gate
did (:mod:`.budget_records`).
Standard library only (the status line and the hooks read and write it).
"""

from __future__ import annotations

import os
import time

from claude_shepherd.supervisor.session import index_records
from claude_shepherd.supervisor.session.index_records import file_name as _file_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t
    from pathlib import Path

SPEND_DIRNAME = "spend"
LEDGER_LIMIT = 64 * 1024
MEASURED = "measured"
"""Every figure of the ledger is Claude's own (its status line's, or the ``cost-state`` of a Claude that ended)."""
ESTIMATED = "estimated"
"""Some figure is ours: replies priced from the transcript that no figure of Claude's covers yet."""
UNKNOWN = "unknown"
EPSILON = 1e-6
"""Dollars below which two figures are the same (sums of floats)."""
PERIODS = ("life", "day", "week")
BUDGET_SUFFIX = ".budget.json"
"""The budget gate's record beside each ledger (:mod:`.budget_records`): :func:`ledgers` reads none."""
MAX_DOLLARS = 1e9
"""The most any figure of the ledger says. A reading above it (the client's estimate from the API's token
counts, which a broken or hostile endpoint could inflate) counts as this much: a figure the ledger could
not read back would make the agent's spend unknown, and an unknown spend pauses nobody."""


def dollars(value: t.Any) -> float | None:
    """A stored amount, or None when it is not a finite, non-negative number (the file is ours, but be sure)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_DOLLARS:
        return None
    return float(value)


def day_of(when: float) -> str:
    """The local day of epoch *when*, as the ledger names it (``2026-11-25``)."""
    return time.strftime("%Y-%m-%d", time.localtime(when))


def week_days(now: float) -> set[str]:
    """The local days of the week (Monday first) up to and including *now*'s day: counted by the
    calendar, since a day that changes the clock (daylight saving) is 23 or 25 hours long."""
    today = time.localtime(now)
    noons = (time.mktime((today.tm_year, today.tm_mon, today.tm_mday - back, 12, 0, 0, 0, 0, -1))
             for back in range(today.tm_wday + 1))  # fmt: skip
    return {day_of(noon) for noon in noons}


def read(root: Path, agent: str) -> dict[str, t.Any] | None:
    """*agent*'s ledger, or None when nothing was measured (or it is unreadable)."""
    return index_records.read(root, SPEND_DIRNAME, _file_name(agent), LEDGER_LIMIT, ("agent", agent))


def ledgers(root: Path, prefix: str) -> list[dict[str, t.Any]]:
    """The ledgers of every agent whose identity starts with *prefix* (a fleet's: ``NAME:``)."""
    fd = index_records.opened(root, SPEND_DIRNAME)
    if fd is None:
        return []
    out: list[dict[str, t.Any]] = []
    # Only files named for such an agent are read: the folder also keeps a ledger for every claude-run
    # outside a fleet that ever ran here, and the hooks call this on every tool call.
    named = _file_name(prefix).rsplit("-", 1)[0].rstrip("_")
    try:
        for name in os.listdir(fd):
            if not name.startswith(named) or not name.endswith(".json") or name.endswith(BUDGET_SUFFIX):
                continue
            data = index_records.load(fd, name, LEDGER_LIMIT)
            agent = data.get("agent") if data is not None else None
            if (
                data is not None
                and isinstance(agent, str)
                and agent.startswith(prefix)
                and name == _file_name(agent)
            ):
                out.append(data)
    finally:
        os.close(fd)
    return out


def spent(ledger: t.Mapping[str, t.Any] | None, per: str = "life", now: float | None = None) -> float | None:
    """What the ledger says was spent over *per* (``life``, ``day``: today, ``week``: this week, local
    time); None when nothing was measured."""
    if not ledger:
        return None
    if per == "life":
        return dollars(ledger.get("total"))
    now = time.time() if now is None else now
    days = ledger.get("days")
    if not isinstance(days, dict):
        return None
    wanted = {day_of(now)} if per == "day" else week_days(now)
    return round(sum(dollars(v) or 0.0 for k, v in days.items() if k in wanted), 6)
