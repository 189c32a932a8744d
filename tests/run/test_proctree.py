"""supervisor.proctree on stand-in processes: the terminate, wait, kill schedule runs on an injected clock."""

from __future__ import annotations

import signal

from claude_shepherd.supervisor import proctree


class FakeProc:
    """A process that ends on the signals it obeys, with children that appear when asked."""

    def __init__(self, pid: int, obeys: tuple[int, ...] = (signal.SIGTERM, signal.SIGKILL)) -> None:
        self.pid = pid
        self.obeys = obeys
        self.running = True
        self.signals: list[int] = []
        self.kids: list[FakeProc] = []

    def send_signal(self, sig: int) -> None:
        self.signals.append(sig)
        if sig in self.obeys:
            self.running = False

    def is_running(self) -> bool:
        return self.running

    def status(self) -> str:
        return "running"

    def children(self, recursive: bool = False) -> list[FakeProc]:
        return [k for kid in self.kids for k in (kid, *kid.children(True))] if self.running else []


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_a_tree_that_obeys_sigterm_is_ended_without_sigkill_or_waiting() -> None:
    root, child = FakeProc(10), FakeProc(11)
    root.kids = [child]
    clock = Clock()
    count, left = proctree.end([root], 5.0, follow=True, clock=clock, sleep=clock.sleep)  # type: ignore[list-item]
    assert (count, left) == (2, [])
    assert root.signals == [signal.SIGTERM, signal.SIGCONT] and child.signals == [
        signal.SIGTERM,
        signal.SIGCONT,
    ]
    assert clock.now == 0.0


def test_what_ignores_sigterm_is_killed_after_the_grace_on_the_clock() -> None:
    stubborn = FakeProc(20, obeys=(signal.SIGKILL,))
    clock = Clock()
    count, left = proctree.end([stubborn], 3.0, clock=clock, sleep=clock.sleep)  # type: ignore[list-item]
    assert (count, left) == (1, [])
    assert stubborn.signals == [signal.SIGTERM, signal.SIGCONT, signal.SIGKILL]
    assert 3.0 <= clock.now < 3.1


def test_an_unkillable_process_is_reported_after_the_kill_wait() -> None:
    rock = FakeProc(30, obeys=())
    clock = Clock()
    _, left = proctree.end([rock], 1.0, kill_wait=2.0, clock=clock, sleep=clock.sleep)  # type: ignore[list-item]
    assert left == [rock]  # type: ignore[comparison-overlap]
    assert 3.0 <= clock.now < 3.1
