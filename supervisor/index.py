"""A cache of which session belongs to which fleet pane and which supervisor.

``session find`` runs on every hook call; reading every ``.state.json`` would
make each tool call cost O(number of sessions) reads (the bash original took
17 s per tool call with 1,001 sessions). The index keeps, per session, the
identity fields of its state file together with that file's signature
(inode, size, mtime) in ``<root>/.shepherd/index.json``.

It is a cache, never the truth:

* every lookup ``stat``\\ s each state file (cheap) and re-reads only the ones
  whose signature changed — whoever changed them: our store, a bash-era
  script, a hand edit — or that changed too recently for the signature to be
  trusted (mtime granularity);
* every hit is checked against the session's own state file by the caller;
* a state file that is not a regular file, or too big, is skipped: one bad
  file costs only itself, and nothing under the root is read through a link
  or in a way that could block (:mod:`supervisor.safe_fs`).

The cache file is saved only when what it says changed materially, so a
busy fleet does not rewrite it on every tool call. Standard library only.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

from supervisor.fields import STATE_FILE, F
from supervisor.identity import valid_pid
from supervisor.records import Record
from supervisor.safe_fs import MAX_STATE_BYTES, UnsafeFileError, open_dir, read_bytes
from supervisor.store import file_lock, write_atomic_at

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

INDEX_DIRNAME = ".shepherd"
INDEX_FILE = "index.json"
LOCK_FILE = "index.lock"
INDEX_VERSION = 2
SETTLE_NS = 2_000_000_000
"""A state file changed this recently is re-read even if its signature looks unchanged:
two writes within one clock tick can leave the same size and mtime (and a reused inode)."""
SAVE_AFTER_CHANGES = 16


class Index(Record):
    __slots__ = ("panes", "pids")
    panes: dict[str, list[str]]
    pids: dict[str, list[str]]


def index_path(root: Path) -> Path:
    return root / INDEX_DIRNAME / INDEX_FILE


Entry = list  # [inode, size, mtime_ns, pane or None, pid]


def _identity(state: t.Any) -> tuple[str | None, int]:
    """The pane and pid a parsed state file is indexed by (nothing for a bad one)."""
    if not isinstance(state, dict):
        return None, 0
    pane = state.get(F.FLEET_PANE_ID)
    pid = state.get(F.PID)
    return (pane if isinstance(pane, str) and pane else None), (pid if valid_pid(pid) else 0)


def _read_identity(root_fd: int, name: str) -> tuple[str | None, int]:
    try:
        session_fd = open_dir(name, dir_fd=root_fd)
    except (OSError, UnsafeFileError):
        return None, 0
    try:
        raw = read_bytes(STATE_FILE, limit=MAX_STATE_BYTES, dir_fd=session_fd)
        return _identity(json.loads(raw))
    except (OSError, UnsafeFileError, ValueError, RecursionError):
        return None, 0
    finally:
        os.close(session_fd)


def _signature(root_fd: int, name: str) -> tuple[int, int, int] | None:
    """(inode, size, mtime) of ``NAME/.state.json`` if it is a regular file we would read."""
    try:
        st = os.stat(f"{name}/{STATE_FILE}", dir_fd=root_fd, follow_symlinks=False)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_STATE_BYTES:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _stored(root: Path) -> dict[str, Entry]:
    try:
        fd = open_dir(root / INDEX_DIRNAME)
    except (OSError, UnsafeFileError):
        return {}
    try:
        data = json.loads(read_bytes(INDEX_FILE, limit=64 * MAX_STATE_BYTES, dir_fd=fd))
    except (OSError, UnsafeFileError, ValueError, RecursionError):
        return {}
    finally:
        os.close(fd)
    if not isinstance(data, dict) or data.get("version") != INDEX_VERSION:
        return {}
    entries = data.get("entries")
    return entries if isinstance(entries, dict) else {}


def _refresh(root: Path, cached: dict[str, Entry], *, trust: bool) -> tuple[dict[str, Entry], int]:
    """Current entries for every session folder; and how many changed materially."""
    try:
        root_fd = open_dir(root)
    except (OSError, UnsafeFileError):
        return {}, 0
    fresh: dict[str, Entry] = {}
    changed = 0
    now = time.time_ns()
    try:
        with os.scandir(root_fd) as it:
            names = [e.name for e in it if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)]
        for name in names:
            sig = _signature(root_fd, name)
            if sig is None:
                changed += name in cached
                continue
            old = cached.get(name)
            if trust and isinstance(old, list) and len(old) == 5 and old[:3] == list(sig) and now - sig[2] > SETTLE_NS:
                fresh[name] = old
                continue
            pane, pid = _read_identity(root_fd, name)
            entry = [*sig, pane, pid]
            if not (isinstance(old, list) and len(old) == 5 and old[3:] == entry[3:] and now - sig[2] > SETTLE_NS):
                changed += 1
            fresh[name] = entry
    finally:
        os.close(root_fd)
    changed += sum(1 for name in cached if name not in fresh)
    return fresh, changed


def _save(root: Path, entries: dict[str, Entry]) -> None:
    """Store *entries* (best effort: a cache that cannot be written is only slower)."""
    try:
        (root / INDEX_DIRNAME).mkdir(exist_ok=True)
        fd = open_dir(root / INDEX_DIRNAME)
    except (OSError, UnsafeFileError):
        return
    try:
        with file_lock(LOCK_FILE, dir_fd=fd, timeout=1.0):
            payload = {"version": INDEX_VERSION, "entries": entries}
            write_atomic_at(fd, INDEX_FILE, json.dumps(payload, separators=(",", ":")) + "\n")
    except (OSError, UnsafeFileError, Exception):  # noqa: BLE001 - a lock timeout included
        pass
    finally:
        os.close(fd)


def _view(entries: dict[str, Entry]) -> Index:
    index = Index({}, {})
    for name in sorted(entries):
        _, _, _, pane, pid = entries[name]
        if isinstance(pane, str) and pane:
            index.panes.setdefault(pane, []).append(name)
        if valid_pid(pid):
            index.pids.setdefault(str(pid), []).append(name)
    return index


def load(root: Path) -> Index:
    """The current index: stored entries, re-checked against every state file's signature."""
    if not root.is_dir():
        return Index({}, {})
    cached = _stored(root)
    entries, changed = _refresh(root, cached, trust=True)
    if changed and (changed >= SAVE_AFTER_CHANGES or _view(entries) != _view(cached)):
        _save(root, entries)
    return _view(entries)


def scan(root: Path) -> Index:
    """Read every session's state file, trusting nothing stored (the slow path)."""
    entries, _ = _refresh(root, {}, trust=False)
    return _view(entries)


def stored(root: Path) -> Index | None:
    """What the index file says now, without checking it (for ``fleet doctor``); None if unreadable."""
    if not index_path(root).is_file():
        return None
    return _view(_stored(root))


def rebuild(root: Path) -> Index:
    """Scan the state files and store a fresh index."""
    if not root.is_dir():
        return Index({}, {})
    entries, _ = _refresh(root, {}, trust=False)
    _save(root, entries)
    return _view(entries)


def by_pane(root: Path, pane: str) -> list[str]:
    return list(load(root).panes.get(pane, []))


def by_pid(root: Path, pid: int) -> list[str]:
    return list(load(root).pids.get(str(pid), []))
