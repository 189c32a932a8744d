"""Small JSON records kept under a sessions root's ``.shepherd/``: reading, writing and naming them.

Pane records, spend ledgers, budgets and usage windows each keep one small file per key in a folder of
``<root>/.shepherd/`` (out of the file tools' reach). Every agent can write into the sessions root, so
each folder is opened without following a link, each file is read through :mod:`.safe_fs` (a regular
file, at most a given size), and each write replaces the file atomically inside the opened folder.
Writing creates the folder, and the root's ``.gitignore`` that keeps ``.shepherd/`` out of git.

A record that cannot be read — missing, unsafe, too big, not JSON, not an object — is None: callers
treat it as no record. Standard library only: the hooks and the status line read and write these.
"""

from __future__ import annotations

import binascii
import json
import os
import re

from claude_shepherd.supervisor.session import root_gitignore
from claude_shepherd.supervisor.session.index import INDEX_DIRNAME
from claude_shepherd.supervisor.session.safe_fs import UnsafeFileError, open_dir, read_bytes
from claude_shepherd.supervisor.session.store import write_atomic_at

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t
    from pathlib import Path

_UNREADABLE = (OSError, UnsafeFileError, ValueError, RecursionError)


def file_name(key: str, *, tidy: bool = False) -> str:
    """A file name for *key* (a pane identity, a path: anything): a readable part and a checksum.

    *tidy* also trims ``_`` and ``.`` from the readable part's ends (never a hidden file name).
    """
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", key)
    if tidy:
        readable = readable.strip("_.")[:80] or "x"
    # surrogatepass: a key read from a file an agent wrote may hold a lone surrogate, and still names one file
    return f"{readable[:80]}-{binascii.crc32(key.encode('utf-8', 'surrogatepass')):08x}.json"


def folder_path(root: Path | str, folder: str) -> str:
    """``<root>/.shepherd/<folder>`` (*folder* may hold a ``/``)."""
    return os.path.join(root, INDEX_DIRNAME, folder)


def open_folder(root: Path | str, folder: str, *, create: bool = False) -> int:
    """A descriptor of *root*'s *folder*, never through a link; *create* makes it (and the root's
    ``.gitignore``) first. Raises OSError or :class:`UnsafeFileError` when it cannot."""
    path = folder_path(root, folder)
    if create:  # the folder first: a root it makes gets its .gitignore from this very write
        os.makedirs(path, exist_ok=True)
        root_gitignore.ensure(os.path.join(root, root_gitignore.GITIGNORE))
    return open_dir(path)


def opened(root: Path | str, folder: str, *, create: bool = False) -> int | None:
    """:func:`open_folder`, or None when the folder is missing or unsafe (or cannot be made)."""
    try:
        return open_folder(root, folder, create=create)
    except (OSError, ValueError, UnsafeFileError):  # ValueError: a root with a NUL or a lone surrogate
        return None


def load(fd: int, name: str, limit: int, where: tuple[str, str] | None = None) -> dict[str, t.Any] | None:
    """The record *name* in the open folder *fd* (at most *limit* bytes), or None when it is unreadable
    or not an object — or, with *where* ``(field, key)``, holds another key in *field*."""
    try:
        data = json.loads(read_bytes(name, limit=limit, dir_fd=fd))
    except _UNREADABLE:
        return None
    if not isinstance(data, dict) or (where is not None and data.get(where[0]) != where[1]):
        return None
    return data


def read(
    root: Path | str, folder: str, name: str, limit: int, where: tuple[str, str] | None = None
) -> dict[str, t.Any] | None:
    """:func:`load` of *root*'s *folder*: None also when the folder is missing or unsafe."""
    fd = opened(root, folder)
    if fd is None:
        return None
    try:
        return load(fd, name, limit, where)
    finally:
        os.close(fd)


def text(record: str | t.Mapping[str, object]) -> str:
    """What is written for *record*: text as it is, a mapping as one line of JSON."""
    return record if isinstance(record, str) else json.dumps(record) + "\n"


def put(root: Path | str, folder: str, name: str, record: str | t.Mapping[str, object]) -> None:
    """Write *record* (see :func:`text`) as *name* in *root*'s *folder*, made when missing.

    Raises OSError or :class:`UnsafeFileError` when it cannot.
    """
    fd = open_folder(root, folder, create=True)
    try:
        write_atomic_at(fd, name, text(record))
    finally:
        os.close(fd)


def write(root: Path | str, folder: str, name: str, record: str | t.Mapping[str, object]) -> bool:
    """:func:`put`, best effort: False when it could not be written."""
    try:
        put(root, folder, name, record)
    except (OSError, UnsafeFileError):
        return False
    return True


def write_at(fd: int, name: str, record: str | t.Mapping[str, object]) -> bool:
    """Write *record* as *name* in the open folder *fd*, best effort: False when it could not."""
    try:
        write_atomic_at(fd, name, text(record))
    except OSError:
        return False
    return True


def forget(root: Path | str, folder: str, name: str) -> None:
    """Remove the record *name* of *root*'s *folder*; nothing when there is none."""
    fd = opened(root, folder)
    if fd is None:
        return
    try:
        os.unlink(name, dir_fd=fd)
    except OSError:
        pass
    finally:
        os.close(fd)
