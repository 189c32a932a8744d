"""Claude's standard error passes through claude-run, which keeps its last lines.

When Claude refuses to start (supervisor.claude_run.refusals) it says why only there, in one line,
and exits 1 like any crash. So each Claude gets a standard error of claude-run's own, copied at once to
claude-run's (the terminal, or whatever it is), of which the last :data:`KEEP` bytes are kept. Claude
must see what it would have seen: where claude-run's standard error is a terminal, Claude's is a
terminal too (a pseudo-terminal of ours, raw, so that every byte reaches the real one unchanged, with
its window size); else a pipe. Nothing is held back: a byte is written on as soon as it is read.
"""

from __future__ import annotations

import fcntl
import os
import select
import termios
import threading
import tty

KEEP = 16384
"""Bytes of Claude's standard error kept (the refusal is its last line)."""
DRAIN = 0.5
"""Seconds, after Claude's exit, to read what its processes still write before the tail is closed."""


class StderrTail:
    """One Claude's standard error: *child_fd* is given to it, the rest runs in a thread of ours."""

    def __init__(self, read_fd: int, child_fd: int) -> None:
        self._read = read_fd
        self.child_fd = child_fd
        self._kept = bytearray()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._copy, name="claude-stderr", daemon=True)

    @classmethod
    def open(cls) -> StderrTail | None:
        """A pseudo-terminal where our standard error is a terminal, else a pipe; None when neither can
        be had (Claude then gets our standard error itself, as before)."""
        try:
            if os.isatty(2):
                read_fd, child_fd = os.openpty()
                tty.setraw(child_fd)  # bytes pass unchanged: the real terminal's settings apply
                try:
                    size = fcntl.ioctl(2, termios.TIOCGWINSZ, b"\0" * 8)
                    fcntl.ioctl(child_fd, termios.TIOCSWINSZ, size)
                except OSError:
                    pass
            else:
                read_fd, child_fd = os.pipe()
        except (OSError, termios.error):
            return None
        tail = cls(read_fd, child_fd)
        tail._thread.start()
        return tail

    def spawned(self) -> None:
        """Claude has its copy: ours goes, so that the end of Claude's is seen."""
        if self.child_fd >= 0:
            os.close(self.child_fd)
            self.child_fd = -1

    def _copy(self) -> None:
        while True:
            try:
                ready, _, _ = select.select([self._read], [], [], 0.1)
            except (OSError, ValueError):
                return
            if not ready:
                if self._done.is_set():
                    return
                continue
            try:
                data = os.read(self._read, 65536)
            except OSError:  # EIO: every writer of the pseudo-terminal closed it
                return
            if not data:
                return
            self._kept += data
            del self._kept[:-KEEP]
            view = memoryview(data)
            while view:
                try:
                    view = view[os.write(2, view) :]
                except InterruptedError:
                    continue
                except OSError:
                    break  # our own standard error is gone: keep reading, so Claude never blocks

    def finish(self) -> str:
        """After Claude's exit: what it wrote last (at most :data:`KEEP` bytes), once read to its end
        or :data:`DRAIN` seconds on (a process of Claude's may hold it open)."""
        self.spawned()
        self._thread.join(DRAIN)
        self._done.set()
        self._thread.join(1.0)
        try:
            os.close(self._read)
        except OSError:
            pass
        return self._kept.decode("utf-8", "replace")
