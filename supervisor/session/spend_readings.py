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
    KEEP_MESSAGES,
    KEEP_PENDING,
    KEEP_SUBAGENTS,
    MAX_DOLLARS,
    MEASURED,
    SUBAGENT_CONVERSATIONS,
    day_of,
    ledger_of,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t

    from claude_shepherd.supervisor.session.replies import Reply
    from claude_shepherd.supervisor.session.spend import Conversation, Ledger, Reading

KEEP_CONVERSATIONS = 32
"""Conversations remembered per agent (the oldest is forgotten first: only a resume of it would miscount)."""
KEEP_DAYS = 15
"""Days of increments kept: enough for a week's budget."""
SETTLE_SECONDS = 10.0
"""A reply written this long before a reading of Claude's figure is in it (the figure was computed
before the process that read it started, which takes well under this)."""


def _counted(
    agent: str,
    total: float,
    days: dict[str, float],
    conversations: dict[str, Conversation],
    conversation: str,
    entry: Conversation,
    now: float,
) -> Ledger:
    """The ledger once *conversation*'s *entry* changed: what it is now known to have cost (Claude's
    figure and the replies priced after it) counts where it passed what was counted before."""
    known = min(entry["r"] + sum(p[1] for p in entry.get("p", ())), MAX_DOLLARS)
    if known > entry["c"] + EPSILON:
        grown = known - entry["c"]
        total = min(total + grown, MAX_DOLLARS)
        today = day_of(now)
        days[today] = min(round(days.get(today, 0.0) + grown, 6), MAX_DOLLARS)
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
    before: Ledger | None,
    agent: str,
    conversation: str,
    reading: float,
    now: float,
    baseline: t.Callable[[], float] = lambda: 0.0,
    *,
    complete: bool = False,
) -> Ledger:
    """The ledger after *conversation*'s cost read *reading* (Claude's own figure) at *now*.

    Only growth counts: a reading above the conversation's last one adds what neither it nor the
    replies priced since (an estimate, :func:`add_replies`) counted. A conversation not seen before
    starts from *baseline()* (what it had cost before this agent took it up); a reading that went
    down (a conversation started over) becomes the new base and adds nothing.

    Which priced replies the reading covers: those written :data:`SETTLE_SECONDS` before it surely
    (Claude computed it before this process started), the ones just before it when the reading grew
    by their price, none after it; *complete* (the figure of a Claude that ended): every one before.
    """
    ledger = ledger_of(before, agent)
    total, days, conversations = ledger["total"], ledger["days"], ledger["conversations"]
    reading = min(reading, MAX_DOLLARS)
    entry = conversations.pop(conversation, None)
    again = entry is not None and abs(reading - entry["r"]) <= EPSILON and not complete
    if entry is None:
        base = min(baseline(), reading)
        entry = {"r": base, "c": base, "at": now}
    if again:
        pass  # the same figure again (every render draws it): no reply since is in it, nothing changes
    elif reading < entry["r"] - EPSILON:  # started over: the new base
        entry.update({"r": reading, "c": reading, "at": now, "u": 0.0, "p": []})
    else:
        available = reading - entry["r"] + entry.get("u", 0.0)
        pending: list[tuple[float, float]] = []
        for when, usd in entry.get("p", ()):
            if when <= now - SETTLE_SECONDS or (complete and when <= now):
                available = max(0.0, available - usd)  # surely in the figure
                continue
            if not pending and when <= now:  # in the figure as far as it grew (a dear estimate: in part)
                part = min(usd, available)
                usd, available = usd - part, available - part
                if usd <= EPSILON:
                    continue
            pending.append((when, usd))
        entry.update({"r": reading, "at": now, "u": round(available, 9), "p": pending})
    return _counted(agent, total, days, conversations, conversation, _tidy(entry), now)


def add_replies(
    before: Ledger | None,
    agent: str,
    conversation: str,
    replies: t.Iterable[Reply],
    offset: int,
    now: float,
    baseline: t.Callable[[], float] = lambda: 0.0,
    *,
    subagent: str | None = None,
) -> Ledger:
    """The ledger after pricing *replies* of *conversation* (read from its transcript up to *offset*;
    from the transcript of its sub-agent *subagent*, if given).

    A reply counts at once unless Claude's last figure already covers it (:func:`add_reading` says
    which); the next figure that covers it does not count it again. A reply seen again (the lines of
    one message) counts only what it grew by.
    """
    ledger = ledger_of(before, agent)
    total, days, conversations = ledger["total"], ledger["days"], ledger["conversations"]
    entry = conversations.pop(conversation, None)
    if entry is None:
        base = min(baseline(), MAX_DOLLARS)
        entry = {"r": base, "c": base}
    parts = dict(entry.get("s", {}))
    reading: Reading = entry if subagent is None else parts.pop(subagent, {})
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
        seen = [*seen, (reply.id, reply.usd)][-KEEP_MESSAGES:]
        if at and reply.when <= at - SETTLE_SECONDS:
            continue  # long in Claude's figure
        if at and reply.when <= at:  # in Claude's figure as far as it grew beyond the replies priced
            part = min(usd, credit)
            usd, credit = usd - part, credit - part
            if usd <= EPSILON:
                continue
        else:
            credit = 0.0  # every reply Claude's figure may hold was read
        pending.append((round(reply.when, 3), usd))
        if len(pending) > KEEP_PENDING:  # the oldest two as one, dated as the newer: never dropped early
            pending[:2] = [(pending[1][0], pending[0][1] + pending[1][1])]
    entry.update({"u": round(credit, 9), "p": pending})
    if subagent is None:
        entry.update({"m": seen, "o": offset})
    else:
        parts[subagent] = {"o": offset, "m": seen}
        entry["s"] = dict(list(parts.items())[-KEEP_SUBAGENTS:])
    return _counted(agent, total, days, conversations, conversation, _tidy(entry), now)


def _tidy(entry: Conversation) -> Conversation:
    """*entry* without its empty parts, its figures rounded (the file stays small and readable)."""
    out: Conversation = {"r": round(entry["r"], 9), "c": round(entry["c"], 9)}
    if entry.get("at"):
        out["at"] = round(entry["at"], 3)
    if entry.get("u"):
        out["u"] = entry["u"]
    if entry.get("o"):
        out["o"] = entry["o"]
    if entry.get("p"):
        out["p"] = [(w, round(u, 9)) for w, u in entry["p"]]
    if entry.get("m"):
        out["m"] = [(i, round(u, 9)) for i, u in entry["m"]]
    if entry.get("s"):
        out["s"] = {k: {"o": v.get("o", 0), "m": [(i, round(u, 9)) for i, u in v.get("m", ())]}
                    for k, v in entry["s"].items()}  # fmt: skip
    return out
