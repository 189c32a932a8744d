"""Run one Claude at a time in the terminal's foreground, with its watchdog.

Claude is a full-screen TUI and must own the terminal. We use the ``system()``
model: Claude stays in the supervisor's process group (so it is in the
terminal's foreground exactly when the supervisor is, and never stops on
SIGTTIN), and while it runs the supervisor ignores SIGINT and SIGQUIT, so
Ctrl-C and Ctrl-\\ reach Claude alone in effect. Claude is started with
``posix_spawn`` resetting those signals (and SIGPIPE, which Python ignores) to
their defaults, so it never inherits our ignoring them.

SIGTERM and SIGHUP to the supervisor are forwarded to Claude (followed by
SIGCONT), and the supervisor will not relaunch; if Claude is still running a
grace period later, the watchdog is asked to end Claude's whole tree (and should
that fail too, Claude itself gets SIGKILL). The
watchdog (:mod:`claude_shepherd.supervisor.claude_run.watchdog`) is started before each Claude, armed with
its PID, and stopped after it has been reaped.

The terminal's settings are saved before each launch and restored after it: a
TUI that crashes leaves the terminal raw, and the next one (or the shell after
``Goodbye.``) must not inherit that.

claude-run is a child subreaper (:mod:`claude_shepherd.supervisor.claude_run.subreaper`), so besides
Claude and the watchdog it has adopted orphans as children: it reaps with
``waitpid(-1)`` — the watchdog's status goes to its handle, an orphan is just
forgotten — and after Claude has exited it ends every child still left but the
watchdog before it stops the watchdog, which thus stays on guard meanwhile.
"""

from __future__ import annotations

import os
import select
import signal
import termios
import time

from claude_shepherd.supervisor.claude_run.stderr_tail import StderrTail
from claude_shepherd.supervisor.claude_run.subreaper import (
    HOOK_FINISH,
    end_processes,
    is_our_hook,
    leftovers,
    our_typists,
)
from claude_shepherd.supervisor.claude_run.watchdog import WatchdogHandle
from claude_shepherd.supervisor.env import WATCHDOG_PID_ENV
from claude_shepherd.supervisor.proctree import REAP_AFTER_KILL
from claude_shepherd.supervisor.session.records import Record

TYPE_CHECKING = False
if TYPE_CHECKING:  # claude-run runs beside every agent: no typing at run time (docs/HOT_CORE.md)
    import typing as t

CHILD_DEFAULT_SIGNALS = (
    signal.SIGINT,
    signal.SIGQUIT,
    signal.SIGPIPE,
    signal.SIGXFSZ,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGUSR1,
    signal.SIGALRM,
    signal.SIGTSTP,
    signal.SIGTTIN,
    signal.SIGTTOU,
)
"""Signals Claude starts with at their default action, whatever we did with them."""

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
LEFTOVER_ROUNDS = 3
"""Sweeps of leftover children per Claude exit: a process dying during one may orphan more."""


def exit_code(status: int) -> int:
    """``waitstatus_to_exitcode`` in shell terms: death by signal N is 128+N."""
    return 128 - status if status < 0 else status


class Outcome(Record):
    __slots__ = ("status", "started", "ended", "stopped_by", "said")
    status: int
    """Claude's exit status, shell style (143 after SIGTERM)."""
    started: float
    ended: float
    stopped_by: int | None
    """The signal that told the supervisor to stop (SIGTERM/SIGHUP), if any."""
    said: str
    """The end of what Claude wrote to its standard error (supervisor.claude_run.stderr_tail)."""

    def __init__(
        self, status: int, started: float, ended: float, stopped_by: int | None, said: str = ""
    ) -> None:
        self.status = status
        self.started = started
        self.ended = ended
        self.stopped_by = stopped_by
        self.said = said

    @property
    def uptime(self) -> float:
        return self.ended - self.started


def _save_terminal() -> list[t.Any] | None:
    try:
        return termios.tcgetattr(0) if os.isatty(0) else None
    except (termios.error, OSError):
        return None


def _restore_terminal(attrs: list[t.Any] | None) -> None:
    if attrs is None:
        return
    old = signal.signal(signal.SIGTTOU, signal.SIG_IGN)  # never stop ourselves over this
    try:
        termios.tcsetattr(0, termios.TCSADRAIN, attrs)
    except (termios.error, OSError):
        pass  # the terminal is gone (hang-up)
    finally:
        signal.signal(signal.SIGTTOU, old)


def _reaped_other(pid: int, code: int, watchdog: WatchdogHandle | None) -> None:
    """A child other than Claude was reaped: the watchdog's status is kept, an adopted orphan forgotten."""
    if watchdog is not None and pid == watchdog.pid:
        watchdog.reaped(code)


def _reap_exited(watchdog: WatchdogHandle | None) -> None:
    """Reap every child that has exited, without waiting."""
    while True:
        try:
            got, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if got == 0:
            return
        _reaped_other(got, os.waitstatus_to_exitcode(status), watchdog)


class ForegroundRunner:
    """Spawns Claude, forwards stop signals, reaps it; one instance per supervisor."""

    def __init__(
        self,
        *,
        supervisor_pid: int,
        grace: float,
        clock: t.Callable[[], float] = time.monotonic,
        say: t.Callable[[str], None] = lambda line: None,
    ) -> None:
        self.supervisor_pid = supervisor_pid
        self.grace = grace
        self.clock = clock
        self.say = say
        self.stop_signal: int | None = None
        self._child: int | None = None
        self._watchdog: WatchdogHandle | None = None
        self._escalating = False
        self._escalations = 0
        self._wake_r = -1

    # ------------------------------------------------------------------ signals

    def install(self) -> None:
        """Install the stop handlers and a wake-up pipe (main thread only)."""
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        self._wake_r = wake_r
        for sig in STOP_SIGNALS:
            signal.signal(sig, self._on_stop)
        signal.signal(signal.SIGALRM, self._on_alarm)

    def _on_stop(self, signum: int, frame: object) -> None:
        if self.stop_signal is None:
            self.stop_signal = signum
        if self._child is not None:
            self._forward(signum)

    def _forward(self, signum: int) -> None:
        child = self._child
        if child is None:
            return
        for sig in (signum, signal.SIGCONT):
            try:
                os.kill(child, sig)
            except ProcessLookupError:
                return
        if not self._escalating:
            self._escalating = True
            signal.setitimer(signal.ITIMER_REAL, max(self.grace, 0.001))

    def _on_alarm(self, signum: int, frame: object) -> None:
        child = self._child
        if child is None:
            return
        self._escalations += 1
        if self._escalations == 1 and self._watchdog is not None and self._watchdog.running():
            self._watchdog.trigger()  # Claude ignored the stop: end its whole tree
            signal.setitimer(signal.ITIMER_REAL, self.grace + REAP_AFTER_KILL + 1.0)
        else:
            try:  # the watchdog could not do it: at least Claude itself must go
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass

    # ------------------------------------------------------------------ running

    def run(self, path: str, argv: list[str], env: t.Mapping[str, str]) -> Outcome:
        """Start the watchdog and Claude, wait for Claude's exit, stop the watchdog."""
        old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
        old_quit = signal.signal(signal.SIGQUIT, signal.SIG_IGN)
        terminal = _save_terminal()
        watchdog: WatchdogHandle | None = None
        tail: StderrTail | None = None
        said = ""
        try:
            watchdog = WatchdogHandle.start(supervisor_pid=self.supervisor_pid, grace=self.grace)
            child_env = dict(env)
            child_env[WATCHDOG_PID_ENV] = str(watchdog.pid)
            tail = StderrTail.open()
            actions = [(os.POSIX_SPAWN_DUP2, tail.child_fd, 2)] if tail is not None else []
            started = self.clock()
            try:
                pid = os.posix_spawn(path, argv, child_env, setsigdef=CHILD_DEFAULT_SIGNALS, setsigmask=set(),
                                     file_actions=actions)  # fmt: skip
            finally:
                if tail is not None:
                    tail.spawned()
            self._child, self._watchdog = pid, watchdog
            watchdog.arm(pid)
            if self.stop_signal is not None:
                self._forward(self.stop_signal)  # it arrived while we were spawning
            status = self._reap(pid, watchdog)
            ended = self.clock()
            said = tail.finish() if tail is not None else ""
            tail = None
        finally:
            if tail is not None:
                tail.finish()
            signal.setitimer(signal.ITIMER_REAL, 0)
            self._child = None
            self._watchdog = None
            self._escalating = False
            self._escalations = 0
            self._end_leftovers(watchdog)
            if watchdog is not None:
                watchdog.stop(self.grace + REAP_AFTER_KILL + 1.0)
            _restore_terminal(terminal)
            signal.signal(signal.SIGINT, old_int)
            signal.signal(signal.SIGQUIT, old_quit)
        return Outcome(status, started, ended, self.stop_signal, said)

    @staticmethod
    def _reap(pid: int, watchdog: WatchdogHandle | None) -> int:
        """Wait for Claude's exit, reaping any other child that exits meanwhile."""
        while True:
            try:
                got, status = os.waitpid(-1, 0)  # retried after our handlers (PEP 475)
            except ChildProcessError:
                return 0
            code = os.waitstatus_to_exitcode(status)
            if got == pid:
                return exit_code(code)
            _reaped_other(got, code, watchdog)

    def _end_leftovers(self, watchdog: WatchdogHandle | None) -> None:
        """End and reap every child still left but the watchdog: orphans of Claude's tree we adopted.

        A hook of ours among them (the StopFailure hook runs detached, so that ``claude -p`` exiting
        cannot kill it) is first let finish, unless we are stopping: it records why Claude stopped,
        which decides whether the exit was a crash. A process of the hooks that waits to type into
        this pane (a parked agent's slot, a paused one's budget renewal) is let be, unless we are
        stopping: the next Claude in the pane is the agent it waits for."""
        deadline = self.clock() + HOOK_FINISH

        def kept() -> set[int]:
            keep = {watchdog.pid} if watchdog is not None and watchdog.status is None else set()
            return keep | (our_typists() if self.stop_signal is None else set())

        while self.stop_signal is None and self.clock() < deadline:
            _reap_exited(watchdog)
            if not any(is_our_hook(pid) for pid in leftovers(kept())):
                break
            time.sleep(0.02)
        ended = 0
        for _ in range(LEFTOVER_ROUNDS):
            _reap_exited(watchdog)
            pids = leftovers(kept())
            if not pids:
                break
            ended += end_processes(pids, self.grace)
        _reap_exited(watchdog)
        if ended:
            self.say(f"Ended {ended} leftover process{'' if ended == 1 else 'es'} of Claude's.")

    def end_kept(self) -> None:
        """End what the sweeps let be for the next Claude: the hooks' typists. claude-run exits for good
        (a quit, a give-up), so no Claude of its will read their keys; left running, one would type its
        prompt and Enter into whatever the pane runs next, a shell say."""
        from claude_shepherd.supervisor.session import typists as records

        typists = our_typists()
        if not typists:
            return
        ended = end_processes(typists, self.grace)
        records.forget_gone(os.environ)
        _reap_exited(None)
        if ended:
            self.say(
                f"Ended {ended} process{'' if ended == 1 else 'es'} of the hooks that waited to type into this pane."
            )

    def pause(self, seconds: float) -> bool:
        """Wait *seconds* (the crash back-off); False if a stop signal arrived meanwhile."""
        deadline = self.clock() + seconds
        while self.stop_signal is None:
            remaining = deadline - self.clock()
            if remaining <= 0:
                break
            if self._wake_r < 0:
                time.sleep(remaining)
                continue
            try:
                select.select([self._wake_r], [], [], remaining)
            except InterruptedError:
                pass
            try:
                while os.read(self._wake_r, 512):
                    pass
            except BlockingIOError:
                pass
        return self.stop_signal is None
