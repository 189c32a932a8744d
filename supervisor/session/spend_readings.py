"""How Claude's figures and the replies priced from a transcript count in a spend ledger: once each.

Claude's status line reports ``cost.total_cost_usd``, the client's estimate of what the *conversation*
cost, not the process: ``--resume`` and ``--continue`` start from the conversation's earlier total, and a
fork starts from its parent's. Summing readings would count a resumed conversation twice, so the ledger
keeps, per agent, the last reading of each conversation it was in, and adds only the growth of a
reading. A conversation the ledger has not seen starts from what it had already cost
(:mod:`.transcript_costs`), else from zero.

Claude's figure can be late: the status line is redrawn at its own pace (quick tool calls outrun it) and
never runs in ``claude -p``. So the hooks also price the replies the transcript gained since they last
read it (:mod:`.replies`, at Claude's list prices, :mod:`.prices`), and those count at once. A later
figure of Claude's that covers them counts only what they did not (its growth beyond them, such as a
title request); a figure below what was counted lowers nothing, and an estimate never lowers a figure
Claude reported.

Pure functions of a ledger (:mod:`.spend`); :mod:`.spend_writes` applies them under its lock.
Standard library only (the status line and the hooks count with it).
"""

from __future__ import annotations

from claude_shepherd.supervisor.session.spend import (
    EPSILON,
    ESTIMATED,
    MAX_DOLLARS,
    MEASURED,
    day_of,
    dollars,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t

    from claude_shepherd.supervisor.session.replies import Reply

KEEP_CONVERSATIONS = 32
"""Conversations remembered per agent (the oldest is forgotten first: only a resume of it would miscount)."""
KEEP_DAYS = 15
"""Days of increments kept: enough for a week's budget."""
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


def _epoch(value: t.Any) -> float:
    return (
        float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0.0
    )


def entry_of(value: t.Any) -> dict[str, t.Any] | None:
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
    counted = max(dollars(value.get("c")) or 0.0, reading)
    entry: dict[str, t.Any] = {"r": reading, "c": counted}
    if _epoch(value.get("at")):
        entry["at"] = _epoch(value.get("at"))
    if dollars(value.get("u")):
        entry["u"] = dollars(value.get("u"))
    pending = value.get("p")
    if isinstance(pending, list):
        pairs = [p for p in pending if isinstance(p, list) and len(p) == 2]
        kept = [[_epoch(w), dollars(u)] for w, u in pairs]
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
                    and dollars(m[1]) is not None][-KEEP_MESSAGES:]  # fmt: skip
    return out


def _ledger(before: t.Mapping[str, t.Any] | None) -> tuple[float, dict[str, t.Any], dict[str, t.Any]]:
    """The lifetime total, the days and the conversations of *before*, copied and checked."""
    before = before or {}
    kept = before.get("conversations")
    conversations = {}
    if isinstance(kept, dict):
        conversations = {k: e for k, e in ((k, entry_of(v)) for k, v in kept.items()) if e is not None}
    days = before.get("days")
    days = {k: v for k, v in days.items() if dollars(v) is not None} if isinstance(days, dict) else {}
    return dollars(before.get("total")) or 0.0, days, conversations


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
        days[today] = min(round((dollars(days.get(today)) or 0.0) + grown, 6), MAX_DOLLARS)
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
