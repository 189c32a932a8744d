"""What each agent spent: the spend ledger budgets are checked against.

Claude's status line reports ``cost.total_cost_usd``, the client's estimate of
what the *conversation* cost, not the process: ``--resume`` and ``--continue``
start from the conversation's earlier total, and a fork starts from its
parent's. Summing readings would count a resumed conversation twice, so the
ledger keeps, per agent, the last reading of each conversation it was in, and
adds only the growth of a reading. A conversation the ledger has not seen
starts from what its transcript says it had already cost (the last
``cost-state`` line Claude writes on exit), else from zero.

Claude's figure can be late: the status line is redrawn at its own pace (quick
tool calls outrun it) and never runs in ``claude -p``. So the hooks also price
the replies the transcript gained since they last read it (:mod:`.replies`, at
Claude's list prices, :mod:`.prices`), and those count at once. A later figure
of Claude's that covers them counts only what they did not (its growth beyond
them, such as a title request); a figure below what was counted lowers
nothing, and an estimate never lowers a figure Claude reported.

One small file per agent — the fleet pane identity ``session:window:label``,
or outside a fleet the claude-run's own (:func:`pane_records.spot`) — under
``<root>/.shepherd/spend/`` (out of the file tools' reach, like the rest of
``.shepherd``). It holds the lifetime total, what was added each local day (so
"per day" and "per week" budgets work), per conversation what Claude said and
what was priced since (:func:`_entry`), and ``"source"``: ``"measured"`` while
every figure is Claude's, ``"estimated"`` while some priced reply is not yet in
one. An agent without a ledger has spent an *unknown* amount, never a guessed
0. The status line, the hooks (of an agent held to a budget) and claude-run (a
``-p`` Claude's ``cost-state`` when it ends) write it, under its lock, only
when it changed.

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

from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.session import index_records
from claude_shepherd.supervisor.session.index_records import file_name as _file_name
from claude_shepherd.supervisor.session.store import LOCK_SUFFIX, file_lock

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t
    from pathlib import Path

    from claude_shepherd.supervisor.session.replies import Reply

SPEND_DIRNAME = "spend"
LEDGER_LIMIT = 64 * 1024
KEEP_CONVERSATIONS = 32
"""Conversations remembered per agent (the oldest is forgotten first: only a resume of it would miscount)."""
KEEP_DAYS = 15
"""Days of increments kept: enough for a week's budget."""
TRANSCRIPT_TAIL = 256 * 1024
"""How much of a transcript's end is searched for its last ``cost-state`` line."""
MEASURED = "measured"
"""Every figure of the ledger is Claude's own (its status line's, or the ``cost-state`` of a Claude that ended)."""
ESTIMATED = "estimated"
"""Some figure is ours: replies priced from the transcript that no figure of Claude's covers yet."""
UNKNOWN = "unknown"
SETTLE_SECONDS = 10.0
"""A reply written this long before a reading of Claude's figure is in it (the figure was computed
before the process that read it started, which takes well under this)."""
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
EPSILON = 1e-6
"""Dollars below which two figures are the same (sums of floats)."""
LOCK_TIMEOUT = 2.0
"""Seconds a hook or the status line waits for another's ledger update (each takes milliseconds)."""
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
    states = _cost_states(path)
    return states[0][0] if states else 0.0


def ended_cost(path: str | None) -> tuple[float, float] | None:
    """What the conversation cost by the Claude that last ended — its ``cost-state`` line, unless a
    reply follows it (a Claude killed before writing one leaves an older one above its replies) —
    and what it had cost before that Claude took it up (the ``cost-state`` above, else 0); else None."""
    states = _cost_states(path)
    if not states or states[0][1]:
        return None
    return states[0][0], states[1][0] if len(states) > 1 else 0.0


def _cost_states(path: str | None) -> list[tuple[float, bool]]:
    """The last two ``cost-state`` figures in the transcript's tail, newest first, each with whether a
    reply follows it."""
    if not path or not os.path.isabs(path):
        return []
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return []
    try:
        size = os.fstat(fd).st_size
        os.lseek(fd, max(0, size - TRANSCRIPT_TAIL), os.SEEK_SET)
        tail = os.read(fd, TRANSCRIPT_TAIL)
    except OSError:
        return []
    finally:
        os.close(fd)
    found: list[tuple[float, bool]] = []
    replied = False
    for line in reversed(tail.split(b"\n")):
        if b'"cost-state"' not in line:
            replied = replied or b'"type":"assistant"' in line
            continue
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict) and data.get("type") == "cost-state":
            found.append((_dollars(data.get("totalCostUSD")) or 0.0, replied))
            if len(found) == 2:
                break
    return found


def _epoch(value: t.Any) -> float:
    return (
        float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0.0
    )


def _entry(value: t.Any) -> dict[str, t.Any] | None:
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
        number = _dollars(value)
        return None if number is None else {"r": number, "c": number}
    reading = _dollars(value.get("r"))
    if reading is None:
        return None
    counted = max(_dollars(value.get("c")) or 0.0, reading)
    entry: dict[str, t.Any] = {"r": reading, "c": counted}
    if _epoch(value.get("at")):
        entry["at"] = _epoch(value.get("at"))
    if _dollars(value.get("u")):
        entry["u"] = _dollars(value.get("u"))
    pending = value.get("p")
    if isinstance(pending, list):
        pairs = [p for p in pending if isinstance(p, list) and len(p) == 2]
        kept = [[_epoch(w), _dollars(u)] for w, u in pairs]
        entry["p"] = [p for p in kept if p[1] is not None][-KEEP_PENDING:]
    entry.update(_reading_of(value))
    parts = value.get("s")
    if isinstance(parts, dict):
        kept_parts = {
            k: _reading_of(v) for k, v in parts.items() if isinstance(k, str) and isinstance(v, dict)
        }
        entry["s"] = dict(list(kept_parts.items())[-KEEP_SUBAGENTS:])
    return entry


def _reading_of(value: t.Mapping[str, t.Any]) -> dict[str, t.Any]:
    """How far a transcript was read (``o``) and the last replies priced from it (``m``), checked."""
    out: dict[str, t.Any] = {}
    offset = value.get("o")
    if isinstance(offset, int) and not isinstance(offset, bool) and offset >= 0:
        out["o"] = offset
    seen = value.get("m")
    if isinstance(seen, list):
        out["m"] = [m for m in seen if isinstance(m, list) and len(m) == 2 and isinstance(m[0], str)
                    and _dollars(m[1]) is not None][-KEEP_MESSAGES:]  # fmt: skip
    return out


def _ledger(before: t.Mapping[str, t.Any] | None) -> tuple[float, dict[str, t.Any], dict[str, t.Any]]:
    """The lifetime total, the days and the conversations of *before*, copied and checked."""
    before = before or {}
    kept = before.get("conversations")
    conversations = {}
    if isinstance(kept, dict):
        conversations = {k: e for k, e in ((k, _entry(v)) for k, v in kept.items()) if e is not None}
    days = before.get("days")
    days = {k: v for k, v in days.items() if _dollars(v) is not None} if isinstance(days, dict) else {}
    return _dollars(before.get("total")) or 0.0, days, conversations


def _counted(
    agent: str,
    total: float,
    days: dict[str, t.Any],
    conversations: dict[str, t.Any],
    conversation: str,
    entry: dict[str, t.Any],
    now: float,
) -> dict[str, t.Any]:
    """The ledger once *conversation*'s *entry* changed: what it is now known to have cost (Claude's
    figure and the replies priced after it) counts where it passed what was counted before."""
    known = min(entry["r"] + sum(p[1] for p in entry.get("p", ())), MAX_DOLLARS)
    if known > entry["c"] + EPSILON:
        grown = known - entry["c"]
        total = min(total + grown, MAX_DOLLARS)
        today = day_of(now)
        days[today] = min(round((_dollars(days.get(today)) or 0.0) + grown, 6), MAX_DOLLARS)
        entry["c"] = known
    conversations.pop(conversation, None)
    conversations[conversation] = entry  # last: the most recent
    while len(conversations) > KEEP_CONVERSATIONS:
        conversations.pop(next(iter(conversations)))
    for older in list(conversations)[:-SUBAGENT_CONVERSATIONS]:
        conversations[older].pop("s", None)
    for day in sorted(days)[:-KEEP_DAYS]:
        days.pop(day)
    estimated = any(e["c"] > e["r"] + EPSILON for e in conversations.values())
    return {
        "agent": agent,
        "source": ESTIMATED if estimated else MEASURED,
        "total": round(total, 6),
        "days": days,
        "conversations": conversations,
    }


def add_reading(
    before: t.Mapping[str, t.Any] | None,
    agent: str,
    conversation: str,
    reading: float,
    now: float,
    baseline: t.Callable[[], float] = lambda: 0.0,
    *,
    complete: bool = False,
) -> dict[str, t.Any]:
    """The ledger after *conversation*'s cost read *reading* (Claude's own figure) at *now*.

    Only growth counts: a reading above the conversation's last one adds what neither it nor the
    replies priced since (an estimate, :func:`add_replies`) counted. A conversation not seen before
    starts from *baseline()* (what it had cost before this agent took it up); a reading that went
    down (a conversation started over) becomes the new base and adds nothing.

    Which priced replies the reading covers: those written :data:`SETTLE_SECONDS` before it surely
    (Claude computed it before this process started), the ones just before it when the reading grew
    by their price, none after it; *complete* (the figure of a Claude that ended): every one before.
    """
    total, days, conversations = _ledger(before)
    reading = min(reading, MAX_DOLLARS)
    entry = conversations.pop(conversation, None)
    again = entry is not None and abs(reading - entry["r"]) <= EPSILON and not complete
    if entry is None:
        base = min(baseline(), reading)
        entry = {"r": base, "c": base, "at": now}
    if again:
        pass  # the same figure again (every render draws it): no reply since is in it, nothing changes
    elif reading < entry["r"] - EPSILON:  # started over: the new base
        entry = {**entry, "r": reading, "c": reading, "at": now, "u": 0.0, "p": []}
    else:
        available = reading - entry["r"] + entry.get("u", 0.0)
        pending: list[list[float]] = []
        for when, usd in entry.get("p", ()):
            if when <= now - SETTLE_SECONDS or (complete and when <= now):
                available = max(0.0, available - usd)  # surely in the figure
                continue
            if not pending and when <= now:  # in the figure as far as it grew (a dear estimate: in part)
                part = min(usd, available)
                usd, available = usd - part, available - part
                if usd <= EPSILON:
                    continue
            pending.append([when, usd])
        entry.update(r=reading, at=now, u=round(available, 9), p=pending)
    return _counted(agent, total, days, conversations, conversation, _tidy(entry), now)


def add_replies(
    before: t.Mapping[str, t.Any] | None,
    agent: str,
    conversation: str,
    replies: t.Iterable[Reply],
    offset: int,
    now: float,
    baseline: t.Callable[[], float] = lambda: 0.0,
    *,
    subagent: str | None = None,
) -> dict[str, t.Any]:
    """The ledger after pricing *replies* of *conversation* (read from its transcript up to *offset*;
    from the transcript of its sub-agent *subagent*, if given).

    A reply counts at once unless Claude's last figure already covers it (:func:`add_reading` says
    which); the next figure that covers it does not count it again. A reply seen again (the lines of
    one message) counts only what it grew by.
    """
    total, days, conversations = _ledger(before)
    entry = conversations.pop(conversation, None)
    if entry is None:
        base = min(baseline(), MAX_DOLLARS)
        entry = {"r": base, "c": base}
    parts: dict[str, t.Any] = dict(entry.get("s", {}))
    reading = entry if subagent is None else parts.pop(subagent, {})
    at, credit = entry.get("at", 0.0), entry.get("u", 0.0)
    pending, seen = list(entry.get("p", ())), list(reading.get("m", ()))
    for reply in replies:
        usd = reply.usd
        before_usd = next((m[1] for m in seen if m[0] == reply.id), None)
        if before_usd is not None:
            usd -= before_usd
            if usd <= EPSILON:
                continue
            seen = [m for m in seen if m[0] != reply.id]
        seen = [*seen, [reply.id, reply.usd]][-KEEP_MESSAGES:]
        if at and reply.when <= at - SETTLE_SECONDS:
            continue  # long in Claude's figure
        if at and reply.when <= at:  # in Claude's figure as far as it grew beyond the replies priced
            part = min(usd, credit)
            usd, credit = usd - part, credit - part
            if usd <= EPSILON:
                continue
        else:
            credit = 0.0  # every reply Claude's figure may hold was read
        pending.append([round(reply.when, 3), usd])
        if len(pending) > KEEP_PENDING:  # the oldest two as one, dated as the newer: never dropped early
            pending[:2] = [[pending[1][0], pending[0][1] + pending[1][1]]]
    entry.update(u=round(credit, 9), p=pending)
    if subagent is None:
        entry.update(m=seen, o=offset)
    else:
        parts[subagent] = {"o": offset, "m": seen}
        entry["s"] = dict(list(parts.items())[-KEEP_SUBAGENTS:])
    return _counted(agent, total, days, conversations, conversation, _tidy(entry), now)


def _tidy(entry: dict[str, t.Any]) -> dict[str, t.Any]:
    """*entry* without its empty parts, its figures rounded (the file stays small and readable)."""
    out: dict[str, t.Any] = {"r": round(entry["r"], 9), "c": round(entry["c"], 9)}
    for key in ("at", "u", "o"):
        if entry.get(key):
            out[key] = round(entry[key], 3) if key == "at" else entry[key]
    if entry.get("p"):
        out["p"] = [[w, round(u, 9)] for w, u in entry["p"]]
    if entry.get("m"):
        out["m"] = [[i, round(u, 9)] for i, u in entry["m"]]
    if entry.get("s"):
        out["s"] = {k: {"o": v.get("o", 0), "m": [[i, round(u, 9)] for i, u in v.get("m", ())]}
                    for k, v in entry["s"].items()}  # fmt: skip
    return out


def _update(
    root: Path, agent: str, change: t.Callable[[dict[str, t.Any] | None], dict[str, t.Any] | None]
) -> dict[str, t.Any] | None:
    """Apply *change* to *agent*'s ledger under its lock (the status line and the hooks write it at
    once); the ledger after, None when *change* said there is nothing to do. Best effort: a ledger
    that cannot be locked or written is left as it is."""
    fd = index_records.opened(root, SPEND_DIRNAME, create=True)
    if fd is None:
        return change(None)
    name = _file_name(agent)
    try:
        with file_lock(name + LOCK_SUFFIX, LOCK_TIMEOUT, dir_fd=fd):
            before = index_records.load(fd, name, LEDGER_LIMIT, ("agent", agent))
            after = change(before)
            if after is not None and after != before:
                index_records.write_at(fd, name, after)
            return after
    except (OSError, ShepherdError):
        return change(index_records.load(fd, name, LEDGER_LIMIT, ("agent", agent)))
    finally:
        os.close(fd)


def measure(
    root: Path,
    agent: str,
    conversation: str,
    reading: float,
    *,
    transcript: str | None = None,
    now: float | None = None,
    complete: bool = False,
    before: float | None = None,
) -> dict[str, t.Any]:
    """Add Claude's *reading* of *conversation*'s cost (its status line's, or the ``cost-state`` of a
    Claude that ended: *complete*) to *agent*'s ledger; returns the ledger. A conversation not in it
    starts from *before*, else from its *transcript*'s ``cost-state``. Written only when it changed;
    best effort (the status line never fails over it)."""
    when = time.time() if now is None else now

    def baseline() -> float:
        return transcript_cost(transcript) if before is None else before

    def change(before: dict[str, t.Any] | None) -> dict[str, t.Any]:
        return add_reading(before, agent, conversation, reading, when, baseline, complete=complete)

    ledger = _update(root, agent, change)
    assert ledger is not None  # change() always answers
    return ledger


def price_replies(
    root: Path,
    agent: str,
    conversation: str,
    transcript: str,
    *,
    now: float | None = None,
    subagent: str | None = None,
    main_transcript: str | None = None,
) -> dict[str, t.Any] | None:
    """Price the replies *transcript* gained since *agent*'s ledger last read it (from where the
    conversation became this agent's, the first time); the ledger after, None when nothing was new.
    With *subagent*, *transcript* is that sub-agent's own, read from its start, and *main_transcript*
    the conversation's (where what it cost before stands).

    In ``claude -p`` no status line runs: this is what measures. Interactively it counts the replies
    the status line has not drawn yet (requests faster than it is redrawn, a sub-agent's requests
    while the main agent waits for it)."""
    from claude_shepherd.supervisor.session import replies

    when = time.time() if now is None else now

    def baseline() -> float:
        return transcript_cost(transcript if subagent is None else main_transcript)

    def change(before: dict[str, t.Any] | None) -> dict[str, t.Any] | None:
        kept = before.get("conversations") if before else None
        entry = _entry(kept.get(conversation)) if isinstance(kept, dict) else None
        reading = entry if entry is None or subagent is None else entry.get("s", {}).get(subagent)
        if reading is not None and "o" in reading:
            start = reading["o"]
        elif subagent is not None:  # a sub-agent's transcript is all its own
            start = 0
        elif entry is None or entry.get("at"):  # never read: after what it cost before it was taken up
            start = replies.start_of(transcript)
        else:  # a ledger from before replies were priced: from now on
            start = replies.size_of(transcript) or 0
        found = replies.read_since(transcript, start, when, sidechain=subagent is not None)
        if found is None or (not found[0] and reading is not None and found[1] == reading.get("o")):
            return None
        return add_replies(before, agent, conversation, found[0], found[1], when, baseline, subagent=subagent)

    return _update(root, agent, change)


def offset_of(root: Path, agent: str, conversation: str, subagent: str | None = None) -> int | None:
    """How far *agent*'s ledger read *conversation*'s transcript (its sub-agent *subagent*'s), or None."""
    ledger = read(root, agent)
    kept = ledger.get("conversations") if ledger else None
    entry = _entry(kept.get(conversation)) if isinstance(kept, dict) else None
    if entry is not None and subagent is not None:
        entry = entry.get("s", {}).get(subagent)
    return entry.get("o") if entry else None


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
