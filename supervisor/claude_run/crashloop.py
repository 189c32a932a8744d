"""When a Claude that exits on its own is a crash loop, and how long to wait.

Semantics after supervisord (a process that stayed up ``min_uptime`` is
healthy and resets the back-off) with an exponential, capped delay and a
systemd-style burst limit: ``limit`` crashes within ``window`` seconds and the
supervisor gives up with a message instead of spinning. Only crashes count —
a requested restart or a refused ``--resume`` is never one — and the clock is
monotonic (a wall-clock jump must not look like a crash loop).
"""

from __future__ import annotations

import time
from collections import deque

from claude_shepherd.supervisor.session.records import Record

TYPE_CHECKING = False
if TYPE_CHECKING:  # claude-run runs beside every agent: no typing at run time (docs/HOT_CORE.md)
    import typing as t


class CrashPolicy(Record):
    """The crash and restart-loop policy; every default is defined here, once."""

    __slots__ = ("backoff", "backoff_max", "limit", "window", "min_uptime", "restart_limit", "restart_window")
    backoff: float
    """Delay before relaunching after the first quick crash; doubles with each further one."""
    backoff_max: float
    limit: int
    """Give up at this many crashes within :attr:`window` seconds."""
    window: float
    min_uptime: float
    """A Claude that ran at least this long was healthy: its crash relaunches at once."""
    restart_limit: int
    """Stop taking requested restarts at this many within :attr:`restart_window` seconds: a handover
    that overflows again at once would otherwise loop, paying each round."""
    restart_window: float

    def __init__(
        self,
        backoff: float = 0.5,
        backoff_max: float = 30.0,
        limit: int = 5,
        window: float = 60.0,
        min_uptime: float = 10.0,
        restart_limit: int = 5,
        restart_window: float = 600.0,
    ) -> None:
        self.backoff = backoff
        self.backoff_max = backoff_max
        self.limit = limit
        self.window = window
        self.min_uptime = min_uptime
        self.restart_limit = restart_limit
        self.restart_window = restart_window


class Verdict(Record):
    __slots__ = ("give_up", "delay", "recent")
    give_up: bool
    delay: float
    recent: int
    """Crashes within the window, this one included."""

    def __init__(self, give_up: bool, delay: float, recent: int) -> None:
        self.give_up = give_up
        self.delay = delay
        self.recent = recent


class CrashTracker:
    """Counts crashes and answers: relaunch after how long, or give up?"""

    def __init__(self, policy: CrashPolicy, clock: t.Callable[[], float] = time.monotonic) -> None:
        self.policy = policy
        self.clock = clock
        self._crashes: deque[float] = deque()
        self._quick = 0

    def healthy_run(self, uptime: float) -> None:
        """A launch ended without crashing (e.g. a requested restart)."""
        if uptime >= self.policy.min_uptime:
            self._quick = 0

    def crashed(self, uptime: float) -> Verdict:
        now = self.clock()
        self._crashes.append(now)
        while self._crashes and now - self._crashes[0] > self.policy.window:
            self._crashes.popleft()
        recent = len(self._crashes)
        if recent >= self.policy.limit:
            return Verdict(True, 0.0, recent)
        if uptime >= self.policy.min_uptime:
            self._quick = 0
            return Verdict(False, 0.0, recent)
        self._quick += 1
        delay = min(self.policy.backoff * 2 ** (self._quick - 1), self.policy.backoff_max)
        return Verdict(False, delay, recent)


class RestartBudget:
    """Requested restarts within a sliding window (see :attr:`CrashPolicy.restart_limit`)."""

    def __init__(self, policy: CrashPolicy, clock: t.Callable[[], float] = time.monotonic) -> None:
        self.policy = policy
        self.clock = clock
        self._taken: deque[float] = deque()

    def exhausted(self) -> bool:
        now = self.clock()
        while self._taken and now - self._taken[0] > self.policy.restart_window:
            self._taken.popleft()
        return len(self._taken) >= self.policy.restart_limit

    def spend(self) -> None:
        self._taken.append(self.clock())
