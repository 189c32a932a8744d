"""After a usage window reopens, the agents it parked go on one at a time (:func:`take_slot`).

The slots of every credential are one small file, ``resume-slots.json`` in the usage folder
(:mod:`.usage_records`), taken under an ``fcntl`` lock beside it.
Standard library only: the hooks import it.
"""

from __future__ import annotations

import os
import time

from claude_shepherd.supervisor.session import usage_records
from claude_shepherd.supervisor.session.numbers import MAX_EPOCH
from claude_shepherd.supervisor.session.usage_records import MAX_AHEAD, SAME_RESET, number

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t
    from pathlib import Path

SLOTS_FILE = "resume-slots.json"
SLOT_GRACE = 60.0
"""An agent asking again within this long after its slot gets the same slot (its retyped prompt)."""


def _lock_file(root: Path) -> int | None:
    """The slots' lock file, opened (not locked yet); None when the usage folder cannot be made."""
    try:
        os.makedirs(usage_records.directory(root), exist_ok=True)
        return os.open(
            os.path.join(usage_records.directory(root), SLOTS_FILE + ".lock"),
            os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
        )
    except OSError:
        return None


def take_slot(
    root: Path, credential: str, agent: str, reset: float, interval: float, now: float | None = None
) -> float:
    """When *agent*, parked by *credential*'s window that reopens at *reset*, may go on.

    The first agent to ask goes at the reset, each next one *interval* seconds after the one before
    (each resume re-sends a whole context: all at once would spend the fresh window at once). The
    slots are one small file, taken under an ``fcntl`` lock; asking again gives the same slot.
    An agent that asks after its slot would have come goes at once, and the next one *interval* after
    that: the slots space the agents' actual going on (Claude's own jitter puts them 30–90 s after
    the reset, in any order).
    """
    import fcntl

    now = time.time() if now is None else now
    reset = min(reset, now + MAX_AHEAD) if reset == reset else now  # NaN: no reset known
    fd = _lock_file(root)
    if fd is None:
        return reset  # no shared record: go at the reset (Claude's own jitter still spreads it)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        slots = usage_records.read(root, None, SLOTS_FILE) or {}
        mine = slots.get(credential) if isinstance(slots.get(credential), dict) else None
        known = number(mine.get("reset"), MAX_EPOCH) if mine is not None else None
        if mine is None or known is None or abs(known - reset) > SAME_RESET:
            mine = {"reset": reset, "agents": {}}
        agents = mine["agents"] if isinstance(mine.get("agents"), dict) else {}
        taken = number(agents.get(agent), MAX_EPOCH)
        if taken is not None and now <= max(taken, reset) + SLOT_GRACE:
            return max(taken, reset)  # asked again (a retyped prompt), or parked again before its turn
        last = max((v for v in agents.values() if number(v, MAX_EPOCH) is not None), default=None)
        slot = max(reset if last is None else max(last + interval, reset), now)  # never in the past
        agents[agent] = round(slot, 3)
        mine["agents"] = agents
        slots = {k: v for k, v in slots.items() if isinstance(v, dict) and _slots_live(v, now)}
        slots[credential] = mine
        usage_records.write(root, None, SLOTS_FILE, slots)
        return slot
    finally:
        os.close(fd)  # releases the lock


def _slots_live(entry: t.Mapping[str, object], now: float) -> bool:
    agents = entry.get("agents")
    latest = (
        max((v for v in agents.values() if isinstance(v, (int, float))), default=0.0)
        if isinstance(agents, dict)
        else 0.0
    )
    return now - latest < 24 * 3600


def read_slots(root: Path) -> dict[str, object]:
    """The slots file (for ``fleet status``: who goes on when)."""
    return usage_records.read(root, None, SLOTS_FILE) or {}


def forget(root: Path, credential: str) -> None:
    """Drop *credential*'s slots (a person cleared its reading: :func:`.usage_windows.forget_credential`)."""
    import fcntl

    lock = _lock_file(root)
    if lock is None:
        return
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        slots = usage_records.read(root, None, SLOTS_FILE) or {}
        if credential in slots:
            usage_records.write(root, None, SLOTS_FILE, {k: v for k, v in slots.items() if k != credential})
    finally:
        os.close(lock)
