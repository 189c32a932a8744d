"""The spend ledger's two writers, each under the ledger's lock, writing only a change.

:func:`measure` adds Claude's own figure (the status line's, or the ``cost-state`` of a Claude that
ended); :func:`price_replies` the replies a transcript gained since the ledger last read it (the hooks of
an agent held to a budget, and in ``claude -p``, where no status line runs). How each counts is
:mod:`.spend_readings`'s. Best effort: a ledger that cannot be locked or written is left as it is.
Standard library only (the status line and the hooks write it).
"""

from __future__ import annotations

import json
import os
import time

from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.session import index_records
from claude_shepherd.supervisor.session.spend import LEDGER_LIMIT, SPEND_DIRNAME, ledger_of, read
from claude_shepherd.supervisor.session.spend_readings import add_reading, add_replies
from claude_shepherd.supervisor.session.store import LOCK_SUFFIX, file_lock
from claude_shepherd.supervisor.session.transcript_costs import transcript_cost

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t
    from pathlib import Path

    from claude_shepherd.supervisor.session.spend import Ledger, Reading

LOCK_TIMEOUT = 2.0
"""Seconds a hook or the status line waits for another's ledger update (each takes milliseconds)."""


def _update(root: Path, agent: str, change: t.Callable[[Ledger | None], Ledger | None]) -> Ledger | None:
    """Apply *change* to *agent*'s ledger under its lock (the status line and the hooks write it at
    once); the ledger after, None when *change* said there is nothing to do. Best effort: a ledger
    that cannot be locked or written is left as it is."""
    fd = index_records.opened(root, SPEND_DIRNAME, create=True)
    if fd is None:
        return change(None)
    name = index_records.file_name(agent)
    try:
        with file_lock(name + LOCK_SUFFIX, LOCK_TIMEOUT, dir_fd=fd):
            before = index_records.load(fd, name, LEDGER_LIMIT, ("agent", agent))
            after = change(None if before is None else ledger_of(before, agent))
            # as JSON reads it back (pairs are lists there): a ledger that did not change is not written
            if after is not None and json.loads(json.dumps(after)) != before:
                index_records.write_at(fd, name, after)
            return after
    except (OSError, ShepherdError):
        return change(read(root, agent))
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
) -> Ledger:
    """Add Claude's *reading* of *conversation*'s cost (its status line's, or the ``cost-state`` of a
    Claude that ended: *complete*) to *agent*'s ledger; returns the ledger. A conversation not in it
    starts from *before*, else from its *transcript*'s ``cost-state``. Written only when it changed;
    best effort (the status line never fails over it)."""
    when = time.time() if now is None else now

    def baseline() -> float:
        return transcript_cost(transcript) if before is None else before

    def change(before: Ledger | None) -> Ledger:
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
) -> Ledger | None:
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

    def change(before: Ledger | None) -> Ledger | None:
        entry = before["conversations"].get(conversation) if before else None
        reading: Reading | None = (
            entry if entry is None or subagent is None else entry.get("s", {}).get(subagent)
        )
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
    entry = ledger["conversations"].get(conversation) if ledger else None
    reading: Reading | None = entry if entry is None or subagent is None else entry.get("s", {}).get(subagent)
    return reading.get("o") if reading else None
