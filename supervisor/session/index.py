"""A cache of which session belongs to which fleet pane and which supervisor.

``session find`` runs on every hook call; reading every ``.state.json`` would
make each tool call cost O(number of sessions) reads (the bash original took
17 s per tool call with 1,001 sessions). The index keeps, per session, the
identity fields of its state file together with that file's signature
(inode, size, mtime): the signatures in ``<root>/.shepherd/signatures.json``,
the pane → names and pid → names maps a lookup reads in ``index.json``.

It is a cache, never the truth:

* every hit is checked against the session's own state file by the caller;
* when a lookup finds nothing, or a hit no longer matches its file, the index
  is *refreshed*: every state file is ``stat``\\ ed (cheap) and only the ones
  whose signature changed are re-read — whoever changed them: our store, a
  bash-era script, a hand edit — along with any changed too recently for the
  signature to be trusted (mtime granularity);
* a state file that is not a regular file, or too big, is skipped: one bad
  file costs only itself, and nothing under the root is read through a link
  or in a way that could block (:mod:`claude_shepherd.supervisor.session.safe_fs`).

The cache file is saved only when what it says changed materially, so a
busy fleet does not rewrite it on every tool call. Standard library only.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

from claude_shepherd.supervisor.session import root_gitignore
from claude_shepherd.supervisor.session.fields import STATE_FILE, F
from claude_shepherd.supervisor.session.identity import valid_pid
from claude_shepherd.supervisor.session.records import Record
from claude_shepherd.supervisor.session.safe_fs import MAX_STATE_BYTES, UnsafeFileError, open_dir, read_bytes
from claude_shepherd.supervisor.session.store import file_lock, write_atomic_at

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

INDEX_DIRNAME = ".shepherd"
INDEX_FILE = "index.json"
SIGNATURES_FILE = "signatures.json"
LOCK_FILE = "index.lock"
INDEX_VERSION = 2
SETTLE_NS = 2_000_000_000
"""A state file changed this recently is re-read even if its signature looks unchanged:
two writes within one clock tick can leave the same size and mtime (and a reused inode)."""


class Index(Record):
    __slots__ = ("panes", "pids")
    panes: dict[str, list[str]]
    pids: dict[str, list[str]]


def index_path(root: Path) -> Path:
    return root / INDEX_DIRNAME / INDEX_FILE


if TYPE_CHECKING:
    Entry = list[int | str | None]  # [inode, size, mtime_ns, pane or None, pid], as JSON stores it


def _identity(state: object) -> tuple[str | None, int]:
    """The pane and pid a parsed state file is indexed by (nothing for a bad one)."""
    if not isinstance(state, dict):
        return None, 0
    pane = state.get(F.FLEET_PANE_ID)
    pid = state.get(F.PID)
    return (pane if isinstance(pane, str) and pane else None), (
        pid if isinstance(pid, int) and valid_pid(pid) else 0
    )


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


def _read_json(root: Path, name: str) -> t.Any:
    try:
        fd = open_dir(root / INDEX_DIRNAME)
    except (OSError, UnsafeFileError):
        return None
    try:
        data = json.loads(read_bytes(name, limit=64 * MAX_STATE_BYTES, dir_fd=fd))
    except (OSError, UnsafeFileError, ValueError, RecursionError):
        return None
    finally:
        os.close(fd)
    return data if isinstance(data, dict) and data.get("version") == INDEX_VERSION else None


def _stored(root: Path) -> dict[str, Entry]:
    data = _read_json(root, SIGNATURES_FILE)
    entries = data.get("entries") if data else None
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
            if (
                trust
                and isinstance(old, list)
                and len(old) == 5
                and old[:3] == list(sig)
                and now - sig[2] > SETTLE_NS
            ):
                fresh[name] = old
                continue
            pane, pid = _read_identity(root_fd, name)
            entry = [*sig, pane, pid]
            if not (
                isinstance(old, list) and len(old) == 5 and old[3:] == entry[3:] and now - sig[2] > SETTLE_NS
            ):
                changed += 1
            fresh[name] = entry
    finally:
        os.close(root_fd)
    changed += sum(1 for name in cached if name not in fresh)
    return fresh, changed


def _save(root: Path, entries: dict[str, Entry], view: Index, stamp: list[int] | None) -> None:
    """Store *entries* and their *view*, built against the root as *stamp* describes it
    (best effort: a cache that cannot be written is only slower)."""
    try:
        fd = open_dir(root / INDEX_DIRNAME)
    except (OSError, UnsafeFileError):
        return
    try:
        with file_lock(LOCK_FILE, dir_fd=fd, timeout=1.0):
            signatures = {"version": INDEX_VERSION, "entries": entries}
            write_atomic_at(fd, SIGNATURES_FILE, json.dumps(signatures, separators=(",", ":")) + "\n")
            maps = {"version": INDEX_VERSION, "root": stamp, "panes": view.panes, "pids": view.pids}
            write_atomic_at(fd, INDEX_FILE, json.dumps(maps, separators=(",", ":")) + "\n")
    except (OSError, UnsafeFileError, Exception):
        pass
    finally:
        os.close(fd)


def _ensure_index_dir(root: Path) -> None:
    """Create ``.shepherd/`` (and the root's ``.gitignore``, which hides it from git) before taking the
    root's stamp (creating either changes the root)."""
    root_gitignore.ensure(str(root / root_gitignore.GITIGNORE))
    try:
        (root / INDEX_DIRNAME).mkdir(exist_ok=True)
    except OSError:
        pass


def _view(entries: dict[str, Entry]) -> Index:
    index = Index({}, {})
    for name in sorted(entries):
        entry = entries[name]
        if not isinstance(entry, list) or len(entry) != 5:
            continue
        _, _, _, pane, pid = entry
        if isinstance(pane, str) and pane:
            index.panes.setdefault(pane, []).append(name)
        if valid_pid(pid):
            index.pids.setdefault(str(pid), []).append(name)
    return index


def _root_stamp(root: Path) -> list[int] | None:
    """The root folder as it was: a session folder added, removed or renamed changes it."""
    try:
        st = os.stat(root)
    except OSError:
        return None
    return [st.st_ino, st.st_mtime_ns, st.st_nlink]


def cached(root: Path) -> Index | None:
    """The maps as last saved, if the root has no folder added or removed since; else None.

    Unchecked otherwise: the caller confirms every hit, and refreshes on a miss.
    """
    data = _read_json(root, INDEX_FILE)
    if (
        data is None
        or data.get("root") != _root_stamp(root)
        or not isinstance(data.get("panes"), dict)
        or not isinstance(data.get("pids"), dict)
    ):
        return None
    return Index(data["panes"], data["pids"])


def refresh(root: Path) -> Index:
    """The index re-checked against every state file's signature (saved when it changed)."""
    if not root.is_dir():
        return Index({}, {})
    _ensure_index_dir(root)
    stamp = _root_stamp(root)
    entries, changed = _refresh(root, _stored(root), trust=True)
    view = _view(entries)
    if changed or cached(root) != view:
        _save(root, entries, view, stamp)
    return view


def load(root: Path, *, fresh: bool = False) -> Index:
    """The index: as saved (the fast path), or refreshed when *fresh* or when there is none."""
    if not fresh:
        index = cached(root)
        if index is not None:
            return index
    return refresh(root)


def scan(root: Path) -> Index:
    """Read every session's state file, trusting nothing stored (the slow path)."""
    entries, _ = _refresh(root, {}, trust=False)
    return _view(entries)


def stored(root: Path) -> Index | None:
    """What the index file says now, without checking it (for ``fleet doctor``); None if unreadable."""
    return cached(root)


def rebuild(root: Path) -> Index:
    """Scan the state files and store a fresh index."""
    if not root.is_dir():
        return Index({}, {})
    _ensure_index_dir(root)
    stamp = _root_stamp(root)
    entries, _ = _refresh(root, {}, trust=False)
    view = _view(entries)
    _save(root, entries, view, stamp)
    return view


def by_pane(root: Path, pane: str, *, fresh: bool = False) -> list[str]:
    return list(load(root, fresh=fresh).panes.get(pane, []))


def by_pid(root: Path, pid: int, *, fresh: bool = False) -> list[str]:
    return list(load(root, fresh=fresh).pids.get(str(pid), []))
