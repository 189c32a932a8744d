"""claude-run's own lines, kept in a file per fleet pane so they outlive the pane's screen.

A pane's screen is cleared by a respawn and scrolls away; ``fleet logs`` shows
this file first, then the screen. The file holds every line claude-run says
about its lifecycle (starts, resumes, restarts, exits and why), each with a
timestamp, under ``$XDG_STATE_HOME/claude-shepherd/logs/`` (default
``~/.local/state/claude-shepherd/logs/``): one file per fleet socket and pane
identity, private (0700 folder, 0600 file), rotated by size (1 MiB, 3 kept).

The identity comes from tmux and an agent can relabel its pane, so the file
name is made safe: letters, digits and _=+- only (no separator, no dot), bounded length, and a
hash of the whole identity so two identities never share a file. Writing is
best effort: a log that cannot be written never stops the supervisor.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from claude_shepherd.supervisor.session.private_dir import NotPrivateError, private_dir
from claude_shepherd.supervisor.session.roots import registry_dir

TYPE_CHECKING = False
if TYPE_CHECKING:  # claude-run runs beside every agent: no typing at run time (docs/HOT_CORE.md)
    import typing as t

MAX_BYTES = 1 << 20
BACKUPS = 3
NAME_LIMIT = 80
"""Characters of the readable part of a file name (the hash and suffix come on top)."""

_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_=+-")


def log_dir(env: t.Mapping[str, str]) -> Path:
    """``$XDG_STATE_HOME/claude-shepherd/logs`` (an absolute XDG value only, as the spec says), else ``~/.local/state/...``."""
    return Path(registry_dir(env)) / "logs"


def log_name(socket: str, pane: str) -> str:
    """The file name of pane identity *pane* (``session:window:label``) on fleet socket *socket* (its name)."""
    import hashlib  # only in a fleet pane, once

    identity = f"{os.path.basename(socket)}\0{pane}"
    readable = "".join(c if c in _SAFE else "_" for c in f"{os.path.basename(socket)}_{pane}"[:NAME_LIMIT])
    digest = hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{readable}-{digest}.log"


def log_path(socket: str, pane: str, env: t.Mapping[str, str]) -> Path:
    return log_dir(env) / log_name(socket, pane)


def stamp(now: float | None = None) -> str:
    """Local time with its UTC offset: what a person reads next to the screen's clock."""
    return time.strftime("%Y-%m-%d %H:%M:%S%z", time.localtime(now))


class PaneLog:
    """Append-only, size-rotated lines (``name``, ``name.1`` ... ``name.N``) in a private folder."""

    def __init__(self, path: Path, *, max_bytes: int = MAX_BYTES, backups: int = BACKUPS) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.backups = backups
        self.failed: str | None = None
        """Why the last write failed (None while writing works)."""

    def write(self, line: str, now: float | None = None) -> bool:
        """Append ``TIMESTAMP line``; False (and :attr:`failed` says why) when it could not be written."""
        data = f"{stamp(now)} {line}\n".encode("utf-8", "replace")
        try:
            private_dir(self.path.parent, within=self.path.parent.parent)
            fd = self._open()
            try:
                if os.fstat(fd).st_size and os.fstat(fd).st_size + len(data) > self.max_bytes:
                    os.close(fd)
                    fd = -1
                    self._rotate()
                    fd = self._open()
                os.write(fd, data)
            finally:
                if fd >= 0:
                    os.close(fd)
        except OSError as exc:
            self.failed = f"{self.path}: {exc.strerror or exc}"
            return False
        except NotPrivateError as exc:
            self.failed = str(exc)
            return False
        self.failed = None
        return True

    def _open(self) -> int:
        """The file, never through a symlink, never a FIFO or device; created 0600."""
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
        fd = os.open(self.path, flags, 0o600)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(0, "not a regular file")
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _rotate(self) -> None:
        for n in range(self.backups - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{n}")
            if os.path.lexists(older):
                os.replace(older, self.path.with_name(f"{self.path.name}.{n + 1}"))
        if self.backups > 0:
            os.replace(self.path, self.path.with_name(f"{self.path.name}.1"))
        else:
            os.unlink(self.path)


class RunLines:
    """What claude-run says: kept until the pane is known, then appended to its log (outside a fleet: nowhere)."""

    def __init__(self) -> None:
        self.pending: list[str] | None = []
        self.log: PaneLog | None = None

    def bind(self, socket: str | None, pane: str | None, env: t.Mapping[str, str]) -> PaneLog | None:
        """Start writing to the log of *pane* on *socket* (the lines said so far first); None: no log."""
        pending, self.pending = self.pending or [], None
        if socket is None or pane is None:
            return None
        self.log = PaneLog(log_path(socket, pane, env))
        for line in pending:
            self.add(line)
        return self.log

    def add(self, line: str) -> None:
        if self.pending is not None:
            self.pending.append(line)
        elif self.log is not None and self.log.failed is None:
            self.log.write(line)  # a log that failed once is not retried on every line


def read_regular(path: Path) -> bytes | None:
    """*path*'s bytes, never through a symlink, never from a FIFO or device; None when it is not there."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def tail(path: Path, count: int) -> list[str]:
    """The last *count* lines of the log at *path*, reaching into its rotations when needed."""
    lines: list[str] = []
    for n in range(BACKUPS + 1):
        data = read_regular(path if n == 0 else path.with_name(f"{path.name}.{n}"))
        if data is None:
            break
        lines = data.decode("utf-8", "replace").splitlines() + lines
        if len(lines) >= count:
            break
    return lines[-count:]
