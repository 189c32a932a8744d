"""The restart watchdog: ends Claude and everything Claude started, on request.

``session restart`` sends SIGUSR1 to ``$WATCHDOG_PID``. The watchdog then
terminates Claude *and every descendant of Claude*: the Bash tool, hooks and
MCP servers run in their own sessions (``setsid``), so a process-group kill
misses them — the original only signalled run.sh's direct children and left the
rest running as orphans (R7). Here the tree is snapshotted with psutil, every
member gets SIGTERM then SIGCONT (a stopped process must see the TERM), the
watchdog waits a grace period while following new descendants, and SIGKILLs
what is left (:mod:`claude_shepherd.supervisor.proctree`). It signals nothing outside that tree: the target must be a child
of the supervisor, and psutil checks each PID's identity before signalling.

It is its own process, forked from claude-run without a new interpreter (a
fleet runs one per pane; a fresh interpreter cost each agent 7 MiB), named
``claude-watchdog`` (which is how ``session restart`` recognises it), in its own
process group, so Ctrl-C in the terminal never reaches it. It never outlives its supervisor: on Linux the kernel sends it
SIGTERM when the supervisor dies (``PR_SET_PDEATHSIG``), and everywhere it
notices EOF of its control pipe or a change of its parent PID.

A supervisor that dies without stopping it (SIGKILL, the OOM killer) leaves
Claude running, reparented to init, with no one to end it. So when the
watchdog sees its supervisor gone it ends Claude's tree (if it was armed and
Claude is still the same process), and with it every process of this user
whose environment carries ``CLAUDE_SUPERVISOR_PID=<supervisor>`` and that
started after the supervisor did (a setsid'd, double-forked tool child is no
longer in Claude's tree; the start time keeps a recycled supervisor PID from
matching older processes). Then it exits.

Protocol with the supervisor (:class:`WatchdogHandle`): the watchdog is forked
with SIGUSR1 and SIGTERM *blocked*, so a restart request that arrives before it
is ready waits instead of killing it; the supervisor writes Claude's PID as one
line on the watchdog's stdin right after spawning Claude, and a ``stop`` line
before it closes the pipe to stop it. EOF without ``stop`` means the supervisor
is dying (its files close before the kernel reparents us). A stop during a kill
lets the kill finish first.

This module is imported by the supervisor. psutil is imported only in the
watchdog process, and only when it has a tree to kill: a fleet starts one
watchdog per pane at once, and most never kill anything. Until then Claude is
known by its PID and start token (:mod:`claude_shepherd.supervisor.session.identity`, read from
``/proc``), checked again before the kill.
"""

from __future__ import annotations

import errno
import gc
import os
import select
import signal
import sys
import time

from claude_shepherd.supervisor import proctree
from claude_shepherd.supervisor.env import KILL_GRACE_DEFAULT, SUPERVISOR_PID_ENV
from claude_shepherd.supervisor.session.identity import WATCHDOG_NAME, parent_pid, process_stat, start_token

TYPE_CHECKING = False
if TYPE_CHECKING:  # a watchdog runs beside every agent: it stays as lean as the hot core (docs/HOT_CORE.md)
    import typing as t

DEFAULT_GRACE = KILL_GRACE_DEFAULT
PARENT_POLL = 1.0
"""Fallback parent check where there is no parent-death signal (not Linux)."""
DYING_POLL = 0.05
"""After EOF without ``stop`` or SIGTERM: how often to look whether the dying supervisor is gone yet."""
STOP_LINE = b"stop"
"""The control line of a deliberate stop; EOF without it means the supervisor died."""

PR_SET_PDEATHSIG = 1
PR_SET_NAME = 15
CONTROL_SIGNALS = (signal.SIGUSR1, signal.SIGTERM)


# --------------------------------------------------------------------------- supervisor side


class WatchdogHandle:
    """The supervisor's end of one watchdog: spawn, arm with Claude's PID, stop."""

    def __init__(self, pid: int, control_fd: int) -> None:
        self.pid = pid
        self._control = control_fd
        self.status: int | None = None

    @classmethod
    def start(cls, *, supervisor_pid: int, grace: float) -> WatchdogHandle:
        """Fork the watchdog from this process, its control signals blocked until it is ready."""
        stat = process_stat(supervisor_pid)
        since = stat[2] if stat is not None else None
        read_end, write_end = os.pipe()  # both close-on-exec
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, CONTROL_SIGNALS)
        # The watchdog shares the supervisor's pages until one of them writes to them, and a collection of
        # the cyclic garbage writes to every object it walks: frozen, what exists now is walked by neither
        # (until stop() thaws it), so the watchdog costs little more than what it does itself.
        gc.freeze()
        try:
            pid = os.fork()
            if pid == 0:  # the watchdog: never returns into the supervisor's code
                _become_watchdog(read_end, write_end, supervisor_pid, grace, since)
        except BaseException:
            gc.unfreeze()
            os.close(write_end)
            raise
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
            os.close(read_end)
        return cls(pid, write_end)

    def arm(self, target_pid: int) -> None:
        """Tell the watchdog which process is Claude."""
        try:
            os.write(self._control, f"{target_pid}\n".encode())
        except OSError:
            pass  # it already exited; the supervisor notices when it stops it

    def reaped(self, status: int) -> None:
        """Record an exit status collected elsewhere (a supervisor reaping with ``waitpid(-1)``).

        From then on the handle never signals or waits for the PID: it may name another process.
        """
        self.status = status

    def running(self) -> bool:
        """Is the watchdog still there? (Reaps it if it has exited.)"""
        if self.status is None:
            self.status = _reap(self.pid, os.WNOHANG)
        return self.status is None

    def trigger(self) -> None:
        """Ask for the tree kill (the same signal ``session restart`` sends)."""
        if self.status is not None:
            return
        try:
            os.kill(self.pid, signal.SIGUSR1)
        except ProcessLookupError:
            pass

    def stop(self, timeout: float) -> int | None:
        """Say ``stop``, close the control pipe and reap the watchdog; SIGKILL it after *timeout*."""
        if self._control >= 0:
            try:
                os.write(self._control, STOP_LINE + b"\n")
            except OSError:
                pass  # it already exited
            os.close(self._control)
            self._control = -1
        if self.status is None:
            status = wait_pid(self.pid, timeout)
            if status is None:
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                status = wait_pid(self.pid, None)
            self.status = status
        gc.unfreeze()  # it shares no page any more: what was frozen at the fork (start) is collected again
        return self.status


def wait_pid(pid: int, timeout: float | None) -> int | None:
    """Reap child *pid*; its exit code, or None if it is still running after *timeout*."""
    if timeout is None:
        return _reap(pid, 0)
    status = _reap(pid, os.WNOHANG)
    if status is not None:
        return status
    deadline = time.monotonic() + timeout
    pidfd = -1
    if hasattr(os, "pidfd_open"):
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            pidfd = -1
    try:
        pause = 0.001
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return _reap(pid, os.WNOHANG)
            if pidfd >= 0:
                select.select([pidfd], [], [], remaining)  # readable when the child exits
            else:
                time.sleep(min(pause, remaining))
                pause = min(pause * 2, 0.02)
            status = _reap(pid, os.WNOHANG)
            if status is not None:
                return status
    finally:
        if pidfd >= 0:
            os.close(pidfd)


def _reap(pid: int, flags: int) -> int | None:
    try:
        got, status = os.waitpid(pid, flags)
    except ChildProcessError:
        return 0  # already reaped elsewhere
    if got == 0:
        return None
    return os.waitstatus_to_exitcode(status)


# --------------------------------------------------------------------------- the process table (Linux /proc)


def _pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def _environ_has(pid: int, entry: bytes) -> bool:
    """Does *pid*'s environment contain *entry* (``NAME=value``)? False if unreadable (another user's)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return entry in handle.read().split(b"\0")
    except OSError:
        return False


def live_children(parent: int) -> list[int]:
    """The PIDs of *parent*'s children that are running (not zombies)."""
    found = []
    for pid in _pids():
        stat = process_stat(pid)
        if stat is not None and stat[1] == parent and stat[0] != "Z":
            found.append(pid)
    return found


def marked_processes(supervisor: int, since: int) -> list[tuple[int, str]]:
    """(PID, start token) of every readable process but us whose environment names *supervisor*
    as its ``CLAUDE_SUPERVISOR_PID`` and that started at or after tick *since* (the supervisor's start)."""
    marker = f"{SUPERVISOR_PID_ENV}={supervisor}".encode()
    me = os.getpid()
    found = []
    for pid in _pids():
        stat = process_stat(pid)
        if pid == me or stat is None or stat[2] < since or stat[0] == "Z":
            continue
        token = start_token(pid)
        if token is not None and _environ_has(pid, marker):
            found.append((pid, token))
    return found


# --------------------------------------------------------------------------- watchdog side


def prctl(option: int, value: int) -> bool:
    """Linux ``prctl(option, value)`` through ctypes (imported only here); False if it failed or elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def set_parent_death_signal(sig: int) -> bool:
    """Linux: have the kernel send *sig* when our parent dies. False elsewhere."""
    return prctl(PR_SET_PDEATHSIG, int(sig))


def kill_tree(root: t.Any, grace: float, *, clock: t.Callable[[], float] = time.monotonic) -> list[int]:
    """SIGTERM+SIGCONT *root* and its descendants, wait *grace*, SIGKILL the rest.

    Returns the PIDs that were still alive after the final SIGKILL wait
    (normally none). Descendants that appear during the grace period (Claude's
    exit hooks) are followed and get the SIGKILL too if they outlive it.
    """
    return kill_trees([root], grace, clock=clock)[1]


def kill_trees(
    roots: t.Iterable[t.Any], grace: float, *, clock: t.Callable[[], float] = time.monotonic
) -> tuple[int, list[int]]:
    """:func:`kill_tree` for several trees at once, sharing one grace period (:func:`proctree.end`).

    Returns how many processes were signalled and the PIDs still alive at the end.
    """
    count, left = proctree.end(roots, grace, follow=True, clock=clock)
    return count, [p.pid for p in left]


class _Flags:
    kill = False
    term = False
    """SIGTERM: the parent-death signal (the supervisor is dying), or someone else's; it ends nothing by
    itself: the watchdog ends when its supervisor says ``stop``, or after it ended Claude's tree."""


class _Control:
    """What the supervisor said on the control pipe (our stdin): Claude's PID, ``stop``, EOF."""

    def __init__(self, supervisor: int) -> None:
        self.supervisor = supervisor
        self.target: tuple[int, str] | None = None
        self.stop = False
        self.eof = False
        self._buffer = b""

    def read(self) -> None:
        """Take what the pipe holds now (it is non-blocking)."""
        try:
            chunk = os.read(0, 512)
        except BlockingIOError:
            return
        except OSError as exc:
            if exc.errno != errno.EAGAIN:
                self.eof = True
            return
        if not chunk:
            self.eof = True
            return
        self._buffer += chunk
        while b"\n" in self._buffer:
            line, self._buffer = self._buffer.split(b"\n", 1)
            line = line.strip()
            if line == STOP_LINE:
                self.stop = True
            elif line.isdigit() and self.target is None:
                self.target = _target(int(line), self.supervisor)


def _target(pid: int, supervisor: int) -> tuple[int, str] | None:
    """Claude's PID and start token, only if it really is a child of our supervisor."""
    parent = parent_pid(pid)
    if parent is None:
        return None
    if parent != supervisor:
        _say(f"PID {pid} is not a child of supervisor {supervisor}; refusing to watch it")
        return None
    token = start_token(pid)
    return None if token is None else (pid, token)


def _handle(target: tuple[int, str]) -> t.Any | None:
    """A psutil handle on the target, if it is still the process we were armed with."""
    import psutil

    pid, token = target
    try:
        proc = psutil.Process(pid)
    except psutil.Error:
        return None
    return proc if start_token(pid) == token else None  # read after psutil pinned its own identity


def _say(message: str) -> None:
    try:
        os.write(2, f"claude-run watchdog: {message}\n".encode())
    except OSError:
        pass


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 512):
            pass
    except BlockingIOError:
        pass


def _supervisor_gone(supervisor: int) -> bool:
    """Has our supervisor died? (The kernel has reparented us.)"""
    return os.getppid() != supervisor


def end_orphans(target: tuple[int, str] | None, supervisor: int, since: int | None, grace: float) -> None:
    """Our supervisor died: end Claude's tree (if *target* is still Claude) and every process marked
    as the supervisor's (started since tick *since*), in a few rounds for any that escaped meanwhile."""
    targets = [target] if target is not None else []
    for _ in range(3):
        if since is not None:
            targets += marked_processes(supervisor, since)
        procs = [proc for proc in map(_handle, targets) if proc is not None]
        if not procs:
            return
        kill_trees(procs, grace)
        targets = []


def watch(supervisor: int, grace: float, since: int | None = None) -> int:
    """The watchdog's life: wait for Claude's PID and SIGUSR1; kill the tree; exit when stopped.

    *since* is the supervisor's start in clock ticks (for the processes it marked; None: unknown).
    """
    flags = _Flags()

    def on_kill(signum: int, frame: object) -> None:
        flags.kill = True

    def on_term(signum: int, frame: object) -> None:
        flags.term = True

    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.signal(signal.SIGUSR1, on_kill)
    signal.signal(signal.SIGTERM, on_term)
    for ignored in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP, signal.SIGTTOU, signal.SIGTTIN):
        signal.signal(ignored, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, CONTROL_SIGNALS)

    os.set_blocking(0, False)
    control = _Control(supervisor)
    while True:
        if _supervisor_gone(supervisor):
            end_orphans(control.target, supervisor, since, grace)
            from claude_shepherd.supervisor.claude_run.fleet_pane import (
                nudge_reaping,
            )  # only now: a lean start

            nudge_reaping(os.environ)  # the supervisor was the pane's process: tmux learns it ended
            return 0
        if flags.kill and control.target is not None:
            flags.kill = False
            proc = _handle(control.target)
            if proc is not None:
                kill_tree(proc, grace)
            continue  # still on guard until stopped: the supervisor may die before it reaps Claude
        if control.stop:
            return 0
        # EOF without ``stop``, or SIGTERM: the supervisor is dying. Its files close before the kernel
        # reparents us, and the parent-death signal comes when the thread that forked us ends, while
        # its other threads (the stderr tail) may still be ending: seconds on a loaded machine. Stay on
        # guard until it is gone; never give up on a clock, or Claude would outlive it unwatched. Only
        # ``stop`` ends the watchdog (its supervisor says it after Claude ended).
        dying = control.eof or flags.term
        readable = [wake_r] if control.eof else [0, wake_r]
        try:
            ready, _, _ = select.select(readable, [], [], DYING_POLL if dying else PARENT_POLL)
        except InterruptedError:
            continue
        if wake_r in ready:
            _drain(wake_r)
        if 0 in ready:
            control.read()


def _become_watchdog(
    read_end: int, write_end: int, supervisor: int, grace: float, since: int | None
) -> t.NoReturn:
    """The forked child: drop the supervisor's plumbing, name itself, watch, and exit (never return)."""
    code = 1
    try:
        os.close(write_end)
        os.dup2(read_end, 0, inheritable=False)
        os.close(read_end)
        os.setpgid(0, 0)
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGALRM, signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(sig, signal.SIG_DFL)
        set_process_name(WATCHDOG_NAME)
        set_parent_death_signal(signal.SIGTERM)  # if the supervisor died before this, watch() sees it gone
        code = watch(supervisor, grace, since)
    except KeyboardInterrupt:
        code = 0
    except BaseException as exc:  # one line, never a traceback in the user's terminal
        _say(f"error: {exc}")
    finally:
        os._exit(code)


def set_process_name(name: str) -> bool:
    """Linux: set this process's name (``/proc/PID/comm``, what ps and top show). False elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False
