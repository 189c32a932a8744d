"""What each agent spent: the spend ledger budgets are checked against, as it is read.

One small file per agent — the fleet pane identity ``session:window:label``, or outside a fleet the
claude-run's own (:func:`pane_records.spot`) — under ``<root>/.shepherd/spend/`` (out of the file tools'
reach, like the rest of ``.shepherd``). It holds the lifetime total, what was added each local day (so
"per day" and "per week" budgets work), per conversation what Claude said and what was priced since
(:func:`entry_of`), and ``"source"``: ``"measured"`` while every figure is Claude's,
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
from claude_shepherd.supervisor.session.numbers import MAX_EPOCH, json_number

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t
    from pathlib import Path

    class Reading(t.TypedDict, total=False):
        """How far one transcript was read (``o``) and its last replies priced (``m``: id, usd)."""

        o: int
        m: list[tuple[str, float]]

    class Conversation(Reading, total=False):
        """A conversation's record in the ledger (:func:`entry_of` says each field)."""

        r: t.Required[float]
        c: t.Required[float]
        at: float
        u: float
        p: list[tuple[float, float]]
        s: dict[str, Reading]

    class Ledger(t.TypedDict):
        """One agent's ledger, checked: what each key of the file holds once read."""

        agent: str
        source: str
        total: float
        days: dict[str, float]
        conversations: dict[str, Conversation]


SPEND_DIRNAME = "spend"
LEDGER_LIMIT = 64 * 1024
MEASURED = "measured"
"""Every figure of the ledger is Claude's own (its status line's, or the ``cost-state`` of a Claude that ended)."""
ESTIMATED = "estimated"
"""Some figure is ours: replies priced from the transcript that no figure of Claude's covers yet."""
UNKNOWN = "unknown"
EPSILON = 1e-6
"""Dollars below which two figures are the same (sums of floats)."""
KEEP_PENDING = 8
"""Priced replies kept apart per conversation until a figure of Claude's covers them (beyond, the
oldest are kept as one)."""
KEEP_MESSAGES = 4
"""Message ids remembered per conversation: one reply is several transcript lines, priced once."""
KEEP_SUBAGENTS = 32
"""Sub-agent transcripts whose reading is remembered per conversation (the one changed longest ago is
forgotten first), in the :data:`SUBAGENT_CONVERSATIONS` newest conversations only: the ledger stays
small. The hooks price no more than this many, the newest: a reading forgotten while its transcript is
still priced would be read again from its start."""
SUBAGENT_CONVERSATIONS = 2
PERIODS = ("life", "day", "week")
BUDGET_SUFFIX = ".budget.json"
"""The budget gate's record beside each ledger (:mod:`.budget_records`): :func:`ledgers` reads none."""
MAX_DOLLARS = 1e9
"""The most any figure of the ledger says. A reading above it (the client's estimate from the API's token
counts, which a broken or hostile endpoint could inflate) counts as this much: a figure the ledger could
not read back would make the agent's spend unknown, and an unknown spend pauses nobody."""


def dollars(value: object) -> float | None:
    """A stored amount, or None when it is not a finite, non-negative number (the file is ours, but be sure)."""
    return json_number(value, MAX_DOLLARS)


def _epoch(value: object) -> float:
    """A moment of the ledger (epoch seconds), or 0.0 when it holds none."""
    return json_number(value, MAX_EPOCH) or 0.0


def entry_of(value: object) -> Conversation | None:
    """A conversation's record as the ledger keeps it, checked (the file is within an agent's reach);
    a bare number is a reading of an older ledger. None when it holds nothing usable.

    ``r``: Claude's last figure for the conversation (or what it cost before this agent took it up);
    ``at``: when that figure was read; ``p``: ``[when, usd]`` of the replies priced from the transcript
    since (an estimate); ``c``: what the ledger counted for it, never less than ``r`` + ``p``'s sum;
    ``u``: growth of the last reading no priced reply accounts for (replies it covered but not priced
    yet); ``o``: how far the transcript was read; ``m``: ``[id, usd]`` of the last replies priced;
    ``s``: per sub-agent of the conversation, its own transcript's ``o`` and ``m`` (its replies are
    priced into this conversation: Claude's figure for it counts them too)."""
    if not isinstance(value, dict):
        number = dollars(value)
        return None if number is None else {"r": number, "c": number}
    reading = dollars(value.get("r"))
    if reading is None:
        return None
    entry: Conversation = {"r": reading, "c": max(dollars(value.get("c")) or 0.0, reading)}
    if _epoch(value.get("at")):
        entry["at"] = _epoch(value.get("at"))
    credit = dollars(value.get("u"))
    if credit:
        entry["u"] = credit
    pending = value.get("p")
    if isinstance(pending, list):
        pairs = (
            (_epoch(p[0]), dollars(p[1])) for p in pending if isinstance(p, (list, tuple)) and len(p) == 2
        )
        entry["p"] = [(when, usd) for when, usd in pairs if usd is not None][-KEEP_PENDING:]
    reading_part = reading_of(value)
    if "o" in reading_part:
        entry["o"] = reading_part["o"]
    if "m" in reading_part:
        entry["m"] = reading_part["m"]
    parts = parts_of(value.get("s"))
    if parts:
        entry["s"] = parts
    return entry


def reading_of(value: t.Mapping[str, object]) -> Reading:
    """How far a transcript was read (``o``) and the last replies priced from it (``m``), checked."""
    out: Reading = {}
    offset = value.get("o")
    if isinstance(offset, int) and not isinstance(offset, bool) and offset >= 0:
        out["o"] = offset
    seen = value.get("m")
    if isinstance(seen, list):
        pairs = (
            (m[0], dollars(m[1]))
            for m in seen
            if isinstance(m, (list, tuple)) and len(m) == 2 and isinstance(m[0], str)
        )
        out["m"] = [(key, usd) for key, usd in pairs if usd is not None][-KEEP_MESSAGES:]
    return out


def parts_of(value: object) -> dict[str, Reading]:
    """The sub-agents' readings of a conversation (``s``), checked: the newest :data:`KEEP_SUBAGENTS`."""
    if not isinstance(value, dict):
        return {}
    kept = {k: reading_of(v) for k, v in value.items() if isinstance(k, str) and isinstance(v, dict)}
    return dict(list(kept.items())[-KEEP_SUBAGENTS:])


def ledger_of(value: object, agent: str) -> Ledger:
    """*value* (a ledger file's, or None) as *agent*'s ledger, checked and copied: what cannot be read
    is left out (a file within an agent's reach may hold anything)."""
    data = value if isinstance(value, dict) else {}
    kept = data.get("conversations")
    conversations: dict[str, Conversation] = {}
    if isinstance(kept, dict):
        for key, raw in kept.items():
            entry = entry_of(raw)
            if isinstance(key, str) and entry is not None:
                conversations[key] = entry
    days = data.get("days")
    source = data.get("source")
    return {
        "agent": agent,
        "source": ESTIMATED if source == ESTIMATED else MEASURED,
        "total": dollars(data.get("total")) or 0.0,
        "days": {
            k: v
            for k, v in ((k, dollars(v)) for k, v in days.items())
            if isinstance(k, str) and v is not None
        }
        if isinstance(days, dict)
        else {},
        "conversations": conversations,
    }


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


def read(root: Path, agent: str) -> Ledger | None:
    """*agent*'s ledger, or None when nothing was measured (or it is unreadable)."""
    data = index_records.read(root, SPEND_DIRNAME, _file_name(agent), LEDGER_LIMIT, ("agent", agent))
    return _measured(data, agent)


def _measured(data: t.Mapping[str, object] | None, agent: str) -> Ledger | None:
    """*data* checked, when its total was measured (a ledger whose total cannot be read spent an
    unknown amount, never a guessed 0)."""
    return None if data is None or dollars(data.get("total")) is None else ledger_of(data, agent)


def ledgers(root: Path, prefix: str) -> list[Ledger]:
    """The ledgers of every agent whose identity starts with *prefix* (a fleet's: ``NAME:``)."""
    fd = index_records.opened(root, SPEND_DIRNAME)
    if fd is None:
        return []
    out: list[Ledger] = []
    # Only files named for such an agent are read: the folder also keeps a ledger for every claude-run
    # outside a fleet that ever ran here, and the hooks call this on every tool call.
    named = _file_name(prefix).rsplit("-", 1)[0].rstrip("_")
    try:
        for name in os.listdir(fd):
            if not name.startswith(named) or not name.endswith(".json") or name.endswith(BUDGET_SUFFIX):
                continue
            data = index_records.load(fd, name, LEDGER_LIMIT)
            agent = data.get("agent") if data is not None else None
            if isinstance(agent, str) and agent.startswith(prefix) and name == _file_name(agent):
                ledger = _measured(data, agent)
                if ledger is not None:
                    out.append(ledger)
    finally:
        os.close(fd)
    return out


def spent(ledger: Ledger | None, per: str = "life", now: float | None = None) -> float | None:
    """What the ledger says was spent over *per* (``life``, ``day``: today, ``week``: this week, local
    time); None when nothing was measured."""
    if not ledger:
        return None
    if per == "life":
        return ledger["total"]
    now = time.time() if now is None else now
    wanted = {day_of(now)} if per == "day" else week_days(now)
    return round(sum(v for k, v in ledger["days"].items() if k in wanted), 6)
