"""A watch key's action on one agent (stop, restart; the web page's buttons too) under its fleet's lock,
waited for in short turns so that a watch that quits meanwhile acts on nothing."""

from __future__ import annotations

import contextlib
import itertools
import time
import typing as t

from claude_shepherd.fleet.handle import PAST, Agent
from claude_shepherd.fleet.lock import FleetBusyError, default_timeout, fleet_lock, holder_of
from claude_shepherd.fleet.output import Say
from claude_shepherd.supervisor.printable import printable

LOCK_TURN = 0.1
"""Seconds between two tries at a fleet's lock: how soon a wait notices the watch quit."""


def _quiet(_: str) -> None:
    return None


def _never() -> bool:
    return False


@contextlib.contextmanager
def fleet_held(
    row: Agent,
    verb: str,
    *,
    told: Say = _quiet,
    cancelled: t.Callable[[], bool] = _never,
    timeout: float | None = None,
) -> t.Iterator[None]:
    """Hold *row*'s fleet's lock (see :mod:`claude_shepherd.fleet.lock`) while a watch key's action runs.

    Another verb holding it is waited for — *told* once whom for — in short
    turns, so a watch that quits meanwhile (*cancelled*) acts on nothing;
    past *timeout* (the lock's own default) the action is refused.
    """
    command = f"fleet watch ({verb} {printable(row.where)})"
    started = time.monotonic()
    deadline = started + (default_timeout() if timeout is None else timeout)
    with contextlib.ExitStack() as held:
        for turn in itertools.count():
            try:
                held.enter_context(fleet_lock(row.socket, command, timeout=0))
                break
            except FleetBusyError:
                holder = holder_of(row.socket) or "another fleet command"
                if cancelled():
                    raise FleetBusyError(f"{row.name} was not {PAST[verb]}: the watch quit") from None
                if time.monotonic() >= deadline:
                    raise FleetBusyError(
                        f"{row.name} was not {PAST[verb]}: {holder} has been changing the fleet on socket "
                        f"{row.socket} for over {time.monotonic() - started:.0f}s; try again when it has finished"
                    ) from None
                if turn == 0:
                    told(f"{row.name}: waiting for {holder} to finish with socket {row.socket}…")
                time.sleep(LOCK_TURN)
        yield
