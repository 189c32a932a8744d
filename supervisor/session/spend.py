"""What each agent spent, measured: the spend ledger budgets are checked against.

Claude's status line reports ``cost.total_cost_usd``, the client's estimate of
what the *conversation* cost, not the process: ``--resume`` and ``--continue``
start from the conversation's earlier total, and a fork starts from its
parent's. Summing readings would count a resumed conversation twice, so the
ledger keeps, per agent, the last reading of each conversation it was in, and
adds only the growth of a reading. A conversation the ledger has not seen
starts from what its transcript says it had already cost (the last
``cost-state`` line Claude writes on exit), else from zero.

One small file per agent — the fleet pane identity ``session:window:label``,
or outside a fleet the claude-run's own (:func:`pane_records.spot`) — under
``<root>/.shepherd/spend/`` (out of the file tools' reach, like the rest of
``.shepherd``). It holds the lifetime total, what was added each local day (so
"per day" and "per week" budgets work), and ``"source": "measured"``: an agent
without a ledger has spent an *unknown* amount, never a guessed 0. Only the
status line writes it, only when a reading changed it.

Beside it, ``<agent>.budget.json`` says what the budget gate did: the 80 %
alerts already raised, and whether the agent is paused (the hooks write it;
``fleet budget`` clears it when it resumes the agent).

Standard library only (the status line and the hooks read and write it).
"""

from __future__ import annotations

import contextlib
import json
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
KEEP_CONVERSATIONS = 32
"""Conversations remembered per agent (the oldest is forgotten first: only a resume of it would miscount)."""
KEEP_DAYS = 15
"""Days of increments kept: enough for a week's budget."""
TRANSCRIPT_TAIL = 256 * 1024
"""How much of a transcript's end is searched for its last ``cost-state`` line."""
MEASURED = "measured"
UNKNOWN = "unknown"
PERIODS = ("life", "day", "week")
BUDGET_SUFFIX = ".budget.json"
MAX_DOLLARS = 1e9
"""The most any figure of the ledger says. A reading above it (the client's estimate from the API's token
counts, which a broken or hostile endpoint could inflate) counts as this much: a figure the ledger could
not read back would make the agent's spend unknown, and an unknown spend pauses nobody."""


def _dollars(value: t.Any) -> float | None:
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


# --------------------------------------------------------------------------- reading


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
        return _dollars(ledger.get("total"))
    now = time.time() if now is None else now
    days = ledger.get("days")
    if not isinstance(days, dict):
        return None
    wanted = {day_of(now)} if per == "day" else week_days(now)
    return round(sum(_dollars(v) or 0.0 for k, v in days.items() if k in wanted), 6)


# --------------------------------------------------------------------------- measuring


def transcript_cost(path: str | None) -> float:
    """The conversation's cost when this process took it up: the last ``cost-state`` line of its
    transcript (written when an earlier process of it ended), else 0 (a new conversation)."""
    if not path or not os.path.isabs(path):
        return 0.0
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return 0.0
    try:
        size = os.fstat(fd).st_size
        os.lseek(fd, max(0, size - TRANSCRIPT_TAIL), os.SEEK_SET)
        tail = os.read(fd, TRANSCRIPT_TAIL)
    except OSError:
        return 0.0
    finally:
        os.close(fd)
    for line in reversed(tail.split(b"\n")):
        if b'"cost-state"' not in line:
            continue
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict) and data.get("type") == "cost-state":
            return _dollars(data.get("totalCostUSD")) or 0.0
    return 0.0


def add_reading(
    before: t.Mapping[str, t.Any] | None,
    agent: str,
    conversation: str,
    reading: float,
    now: float,
    baseline: t.Callable[[], float] = lambda: 0.0,
) -> dict[str, t.Any]:
    """The ledger after *conversation*'s status line read *reading* at *now*.

    Only growth counts: a reading above the conversation's last one adds the difference to the
    lifetime total and to *now*'s day. A conversation not seen before starts from *baseline()*
    (what it had cost before this agent took it up); a reading that went down (a conversation
    started over) becomes the new base and adds nothing.
    """
    before = before or {}
    reading = min(reading, MAX_DOLLARS)
    conversations = before.get("conversations")
    conversations = dict(conversations) if isinstance(conversations, dict) else {}
    days = before.get("days")
    days = {k: v for k, v in days.items() if _dollars(v) is not None} if isinstance(days, dict) else {}
    total = _dollars(before.get("total")) or 0.0
    last = _dollars(conversations.pop(conversation, None))
    if last is None:
        last = min(baseline(), reading)
    grown = reading - last if reading > last else 0.0
    if grown > 0:
        total = min(total + grown, MAX_DOLLARS)
        today = day_of(now)
        days[today] = min(round((_dollars(days.get(today)) or 0.0) + grown, 6), MAX_DOLLARS)
    conversations[conversation] = reading  # last: the most recent
    while len(conversations) > KEEP_CONVERSATIONS:
        conversations.pop(next(iter(conversations)))
    for day in sorted(days)[:-KEEP_DAYS]:
        days.pop(day)
    return {
        "agent": agent,
        "source": MEASURED,
        "total": round(total, 6),
        "days": days,
        "conversations": conversations,
    }


def measure(
    root: Path,
    agent: str,
    conversation: str,
    reading: float,
    *,
    transcript: str | None = None,
    now: float | None = None,
) -> dict[str, t.Any]:
    """Add the status line's *reading* of *conversation* to *agent*'s ledger; returns the ledger.

    Written only when it changed; best effort (the status line never fails over it).
    """
    now = time.time() if now is None else now
    fd = index_records.opened(root, SPEND_DIRNAME, create=True)
    name = _file_name(agent)
    before = index_records.load(fd, name, LEDGER_LIMIT, ("agent", agent)) if fd is not None else None
    after = add_reading(before, agent, conversation, reading, now, lambda: transcript_cost(transcript))
    if fd is None:
        return after
    try:
        if after != before:
            index_records.write_at(fd, name, after)
    finally:
        os.close(fd)
    return after


# --------------------------------------------------------------------------- the gate's record


def _budget_name(agent: str) -> str:
    return _file_name(agent).removesuffix(".json") + BUDGET_SUFFIX


def gate_record(root: Path, agent: str) -> dict[str, t.Any]:
    """What the budget gate recorded for *agent*: ``alerted`` (keys of budgets that alerted at 80 %)
    and ``paused`` (the budget that paused it, or absent); empty when nothing."""
    return index_records.read(root, SPEND_DIRNAME, _budget_name(agent), LEDGER_LIMIT, ("agent", agent)) or {}


def write_gate_record(root: Path, agent: str, record: t.Mapping[str, t.Any]) -> bool:
    """Replace *agent*'s gate record (removed when it says nothing); False when it could not be written."""
    name = _budget_name(agent)
    if record.get("alerted") or record.get("paused"):
        return index_records.write(root, SPEND_DIRNAME, name, {**record, "agent": agent})
    fd = index_records.opened(root, SPEND_DIRNAME, create=True)
    if fd is None:
        return False
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=fd)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True
