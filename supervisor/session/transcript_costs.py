"""What a transcript says its conversation had cost: the ``cost-state`` line Claude writes as it ends.

A conversation taken up again starts its spend there, not at zero (its earlier cost is in Claude's next
figure: :mod:`.spend_readings`), and claude-run measures a ``claude -p`` that ended by its line.
Standard library only (the status line reads it for a conversation new to the ledger).
"""

from __future__ import annotations

import json
import os

from claude_shepherd.supervisor.session.spend import dollars

TRANSCRIPT_TAIL = 256 * 1024
"""How much of a transcript's end is searched for its last ``cost-state`` line."""


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
            found.append((dollars(data.get("totalCostUSD")) or 0.0, replied))
            if len(found) == 2:
                break
    return found
