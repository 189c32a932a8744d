"""Every hook answers in time: past its own deadline it gives the fail-closed answer and exits.

Claude Code runs the tool when a hook times out (fail open), and a FIFO or a
huge file planted under the sessions root could stall a hook that long. So
each hook process starts a timer thread (``_thread``: ``threading`` and
``signal`` cost import time on every call, and SIGALRM belongs to the state
lock's wait) that, unless the hook has answered first, prints the event's
fallback answer — for PreToolUse a deny, unless the call was already seen to
be a lone ``session`` command, which every gate lets through anyway — and
ends the process. One lock decides who answers: the timer or the hook.
Standard library only.
"""

from __future__ import annotations

import _thread
import os
import time

from claude_shepherd.supervisor.env import HOOK_DEADLINE_ENV as DEADLINE_ENV
from claude_shepherd.supervisor.session.numbers import parse_decimal

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t

HOOK_DEADLINE = 6.0
"""Seconds; well inside the timeout installed with the hooks (claude_shepherd.supervisor.session.programs.HOOK_TIMEOUT, 10 s)."""
MIN_DEADLINE, MAX_DEADLINE = 0.1, 9.0


class _Answer:
    lock = _thread.allocate_lock()
    fallback = ""


def seconds(env: t.Mapping[str, str]) -> float:
    """The deadline: ``$CLAUDE_HOOK_DEADLINE`` within bounds, else :data:`HOOK_DEADLINE`."""
    value = parse_decimal(env.get(DEADLINE_ENV, ""), maximum=float("inf"))
    return HOOK_DEADLINE if value is None else min(max(value, MIN_DEADLINE), MAX_DEADLINE)


def arm(limit: float, fallback: str, emit: t.Callable[[str], None]) -> None:
    """Start the timer: after *limit* seconds, *emit* the fallback and exit (unless the hook answered)."""
    _Answer.fallback = fallback

    def expire() -> None:
        time.sleep(limit)
        if _Answer.lock.acquire(blocking=False):
            emit(_Answer.fallback)
            os._exit(0)

    _thread.start_new_thread(expire, ())


def fallback(text: str) -> None:
    """What the timer answers from now on (a hook that has classified its input may soften it)."""
    _Answer.fallback = text


def answer(text: str, emit: t.Callable[[str], None]) -> None:
    """The hook's own answer; if the timer already answered, wait for it to end the process."""
    _Answer.lock.acquire()
    emit(text)
