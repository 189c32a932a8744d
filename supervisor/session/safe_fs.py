"""Open files under the sessions root without following links or blocking.

Every agent can write into the shared sessions root, so anything found there
may be a trap: a symlink into the shell snapshot or another session, a FIFO
that blocks the reader forever (and a hook that hangs fails *open*), a file
of 75 MB, or a hard link to a file elsewhere. These helpers open the final
component with ``O_NOFOLLOW | O_NONBLOCK``, then check the *opened*
descriptor — a regular file, of bounded size, with one link for writes — so a
swap between a check and the open cannot slip through. Directories are opened
the same way and used as ``dir_fd`` anchors.

Standard library only (the hooks use it on every tool call).
"""

from __future__ import annotations

import errno
import os
import stat

from claude_shepherd.supervisor.errors import ShepherdError

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    from pathlib import Path

MAX_STATE_BYTES = 1024 * 1024
"""A state file is a few kilobytes; anything near this size is an attack or a mistake."""

_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class UnsafeFileError(ShepherdError):
    """A file under the sessions root that we refuse to open: a link, a FIFO, a device, too big."""


def _refuse(path: object, what: str) -> UnsafeFileError:
    return UnsafeFileError(f"{path} is {what}; only regular files are used under the sessions root")


def _check_regular(fd: int, path: object, *, limit: int | None, single_link: bool) -> os.stat_result:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(path, "not a regular file (a FIFO, socket, device or folder)")
    if limit is not None and st.st_size > limit:
        raise _refuse(path, f"{st.st_size} bytes, more than the {limit} allowed")
    if single_link and st.st_nlink != 1:
        raise _refuse(path, "hard-linked to another file")
    return st


def _open(path: str | Path, flags: int, mode: int = 0o644, dir_fd: int | None = None) -> int:
    try:
        return os.open(path, flags, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _refuse(path, "a symlink") from None
        if exc.errno == errno.ENXIO:  # a FIFO with no reader, opened for writing
            raise _refuse(path, "not a regular file (a FIFO)") from None
        raise


def open_dir(path: str | Path, dir_fd: int | None = None) -> int:
    """A descriptor of the directory *path* itself, refusing a symlink to one."""
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError as exc:
        # Linux says ENOTDIR for a symlink opened with O_DIRECTORY | O_NOFOLLOW.
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(_joined(path, dir_fd)):
            raise _refuse(path, "a symlink") from None
        raise


def open_terminal(path: str | Path) -> int:
    """A descriptor to write to the terminal *path*: a character device of this user's, never through a
    symlink, never blocking, never becoming our controlling terminal.

    Raises OSError when it cannot be opened and :class:`UnsafeFileError` when it is anything else.
    """
    fd = _open(path, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISCHR(st.st_mode) or st.st_uid != os.getuid():
            raise UnsafeFileError(f"{path} is not a terminal of this user's")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _joined(path: str | Path, dir_fd: int | None) -> str:
    if dir_fd is None or os.path.isabs(path):
        return str(path)
    return os.path.join(f"/proc/self/fd/{dir_fd}", path)


def read_bytes(path: str | Path, *, limit: int = MAX_STATE_BYTES, dir_fd: int | None = None) -> bytes:
    """The whole content of the regular file *path*, at most *limit* bytes.

    Raises FileNotFoundError when it does not exist and :class:`UnsafeFileError`
    when it is anything but a regular file of bounded size.
    """
    fd = _open(path, _READ, dir_fd=dir_fd)
    try:
        _check_regular(fd, path, limit=limit, single_link=False)
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            total += len(chunk)
            if total > limit:  # it grew after the fstat
                raise _refuse(path, f"more than the {limit} bytes allowed")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _open_regular(path: str | Path, flags: int, dir_fd: int | None, *, single_link: bool) -> int:
    """Open (creating) *path* without following a link, and keep the descriptor only for a regular file."""
    fd = _open(path, flags | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        _check_regular(fd, path, limit=None, single_link=single_link)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_append(path: str | Path, dir_fd: int | None = None) -> int:
    """A descriptor to append to the regular, singly linked file *path* (created if missing)."""
    return _open_regular(path, os.O_WRONLY | os.O_APPEND, dir_fd, single_link=True)


def open_lock(path: str | Path, dir_fd: int | None = None) -> int:
    """A descriptor of the lock file *path* (created if missing), a regular file."""
    return _open_regular(path, os.O_RDWR, dir_fd, single_link=False)
