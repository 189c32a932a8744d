"""Wait for an event, never for a fixed time: the one ``wait_until`` of the tests."""

from __future__ import annotations

import time
import typing as t


def wait_until(predicate: t.Callable[[], t.Any], timeout: float = 30, what: str = "condition") -> t.Any:
    """The first true value *predicate* returns, polled until *timeout* seconds have passed.

    It is polled once more after the deadline, so a loaded machine that slept through the
    deadline still sees an event that did happen; the polls start 5 ms apart and slow to 100 ms.
    """
    deadline = time.monotonic() + timeout
    pause = 0.005
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(pause)
        pause = min(pause * 2, 0.1)
