"""Wait for an event, never for a fixed time: the one ``wait_until`` of the tests."""

from __future__ import annotations

import time
import typing as t

PATIENCE = 60.0
"""No wait gives up sooner: the event, not the deadline, ends a wait, so a long deadline costs a passing
test nothing, while a short one fails a correct program on a loaded machine (CI runs two suites at once)."""


def wait_until(predicate: t.Callable[[], t.Any], timeout: float = 30, what: str = "condition") -> t.Any:
    """The first true value *predicate* returns, polled until max(*timeout*, PATIENCE) seconds have passed.

    It is polled once more after the deadline, so a machine that slept through the deadline still
    sees an event that did happen; the polls start 5 ms apart and slow to 100 ms.
    """
    limit = max(timeout, PATIENCE)
    deadline = time.monotonic() + limit
    pause = 0.005
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {limit:g}s waiting for {what}")
        time.sleep(pause)
        pause = min(pause * 2, 0.1)
