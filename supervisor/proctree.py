"""End a process tree: terminate, wait, kill — the one way processes are ended.

Every function takes psutil process handles: psutil pins a handle to the
process it was made for and refuses to signal a reused PID. The callers make
the handles (the restart watchdog from Claude's PID and start token, ``fleet
stop`` and ``fleet doctor`` from their process-table snapshots) and decide
which processes belong to the tree; this module only ends them:

1. :func:`send` SIGTERM, then SIGCONT (a stopped process must see the TERM);
2. :func:`wait_gone` up to a grace period, optionally following descendants
   that appear meanwhile (Claude's exit hooks);
3. SIGKILL what is left, and wait for it to be gone.

The clock and the sleep are parameters (``clock``/``sleep``) so a test can
run the schedule without waiting.

psutil is imported inside the functions, on purpose: the watchdog imports this
module at start-up in every fleet pane, and most watchdogs never end anything.
"""

from __future__ import annotations

import signal
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # a watchdog runs beside every agent: it stays as lean as the hot core (docs/HOT_CORE.md)
    import typing as t

    import psutil

    P = t.TypeVar("P")
    Clock = t.Callable[[], float]
    Sleep = t.Callable[[float], None]

FOLLOW_INTERVAL = 0.02
"""How often (at most) the tree is re-read while waiting (new descendants, exits).
The first re-reads come sooner: most trees are gone within milliseconds of SIGTERM."""
REAP_AFTER_KILL = 2.0
"""How long to wait for SIGKILLed processes to disappear before giving up on them."""
FIRST_PAUSE = 0.001


def alive(proc: psutil.Process) -> bool:
    """Is *proc* still running? A zombie counts as gone: only its parent can reap it."""
    import psutil  # lazy: see the module docstring

    try:
        return bool(proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def descendants(proc: psutil.Process) -> list[psutil.Process]:
    """Every process below *proc* now ([] once it is gone)."""
    import psutil  # lazy: see the module docstring

    try:
        found: list[psutil.Process] = proc.children(recursive=True)
    except psutil.Error:
        return []
    return found


def send(procs: t.Iterable[psutil.Process], sig: int) -> list[psutil.Process]:
    """Signal each of *procs* (SIGTERM and SIGHUP followed by SIGCONT); return those signalled."""
    import psutil  # lazy: see the module docstring

    sent: list[psutil.Process] = []
    for proc in procs:
        try:
            proc.send_signal(sig)  # psutil refuses if the PID now names another process
        except psutil.Error:
            continue
        sent.append(proc)
    if sig in (signal.SIGTERM, signal.SIGHUP):
        for proc in sent:
            try:
                proc.send_signal(signal.SIGCONT)
            except psutil.Error:
                pass
    return sent


def wait_gone(
    procs: t.Iterable[P],
    timeout: float,
    *,
    is_alive: t.Callable[[P], bool] = alive,
    follow: t.Callable[[P], t.Iterable[P]] | None = None,
    members: dict[int, P] | None = None,
    poll: float = FOLLOW_INTERVAL,
    clock: Clock = time.monotonic,
    sleep: Sleep = time.sleep,
) -> list[P]:
    """Wait until each of *procs* is gone or *timeout* passed; return those still alive.

    The first checks come within milliseconds, then at most every *poll* seconds. With *follow*
    (a process's descendants), children that appear meanwhile are waited for too and added to
    *members* (keyed by ``pid``).
    """
    deadline = clock() + max(0.0, timeout)
    pause = FIRST_PAUSE
    remaining = list(procs)
    while True:
        remaining = [p for p in remaining if is_alive(p)]
        if follow is not None and members is not None:
            for proc in list(remaining):
                for child in follow(proc):
                    pid = child.pid  # type: ignore[attr-defined]
                    if pid not in members:
                        members[pid] = child
                        remaining.append(child)
        if not remaining or clock() >= deadline:
            return remaining
        sleep(min(pause, max(0.0, deadline - clock())))
        pause = min(pause * 2, poll)


def end(
    procs: t.Iterable[psutil.Process],
    grace: float,
    *,
    follow: bool = False,
    kill_wait: float = REAP_AFTER_KILL,
    clock: Clock = time.monotonic,
    sleep: Sleep = time.sleep,
) -> tuple[int, list[psutil.Process]]:
    """SIGTERM+SIGCONT *procs*, wait *grace*, SIGKILL the rest and wait *kill_wait* for them to go.

    With *follow*, the descendants of each (now, while waiting, and at the kill) are ended too.
    Returns how many processes were signalled and those still alive at the end (normally none).
    """
    members: dict[int, psutil.Process] = {}
    for root in procs:
        for proc in [root, *(descendants(root) if follow else ())]:
            members.setdefault(proc.pid, proc)
    send(members.values(), signal.SIGTERM)
    left = wait_gone(
        members.values(),
        grace,
        follow=descendants if follow else None,
        members=members,
        clock=clock,
        sleep=sleep,
    )
    if follow:
        for proc in list(left):
            for child in descendants(proc):
                if child.pid not in members:
                    members[child.pid] = child
                    left.append(child)
        left = [p for p in left if alive(p)]
    if left:
        send(left, signal.SIGKILL)
        left = wait_gone(left, kill_wait, poll=FOLLOW_INTERVAL, clock=clock, sleep=sleep)
    return len(members), left
