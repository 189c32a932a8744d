"""A cache of which session belongs to which fleet pane and which supervisor.

``session find`` runs on every hook call; scanning every ``.state.json`` would
make each tool call cost O(number of sessions) (the bash original took 17 s per
tool call with 1,001 sessions). The index maps pane id → session names and
pid → session names in one small file, ``<root>/.shepherd/index.json``.

It is a cache, never the truth:

* every hit is checked against the session's own state file by the caller;
* it is rebuilt from the state files when it is missing, unreadable, or when
  the sessions root itself changed (a session folder added, removed or
  renamed — seen as a change of the root's inode, mtime or link count);
* our own store refreshes it whenever a write changes an identity field.

PIDs of processes that no longer exist are dropped at rebuild, so the file stays
small however many old sessions there are. Standard library only.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from supervisor.fields import STATE_FILE, F
from supervisor.records import Record
from supervisor.store import file_lock, write_atomic

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

INDEX_DIRNAME = ".shepherd"
INDEX_FILE = "index.json"
INDEX_VERSION = 1


class Index(Record):
    __slots__ = ("panes", "pids")
    panes: dict[str, list[str]]
    pids: dict[str, list[str]]


def index_path(root: Path) -> Path:
    return root / INDEX_DIRNAME / INDEX_FILE


DIRTY_FILE = "dirty"
"""Touched when a write could not update the index; its mtime is part of the stamp."""


def _root_stamp(root: Path) -> list[int] | None:
    """What the index was built against: the root folder, and the dirty marker."""
    try:
        st = os.stat(root)
    except OSError:
        return None
    try:
        dirty = os.stat(root / INDEX_DIRNAME / DIRTY_FILE).st_mtime_ns
    except OSError:
        dirty = 0
    return [st.st_ino, st.st_mtime_ns, st.st_nlink, dirty]


def invalidate(root: Path) -> None:
    """Make the next lookup rebuild the index (a write could not record itself in it).

    Touching a marker instead of deleting the index is safe against a rebuild
    running at the same moment: whatever it saves carries the old marker time.
    """
    marker = root / INDEX_DIRNAME / DIRTY_FILE
    try:
        marker.touch()
        now = time.time_ns()
        os.utime(marker, ns=(now, now))
    except OSError:
        try:
            index_path(root).unlink()
        except OSError:
            pass


def _load(root: Path, stamp: list[int] | None) -> Index | None:
    """The stored index if it was built for the root as *stamp* describes it, else None."""
    try:
        data = json.loads(index_path(root).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if (
        not isinstance(data, dict)
        or data.get("version") != INDEX_VERSION
        or stamp is None
        or data.get("root") != stamp
        or not isinstance(data.get("panes"), dict)
        or not isinstance(data.get("pids"), dict)
    ):
        return None
    return Index(data["panes"], data["pids"])


def _save(root: Path, index: Index, stamp: list[int] | None) -> None:
    payload = {"version": INDEX_VERSION, "root": stamp, "panes": index.panes, "pids": index.pids}
    write_atomic(index_path(root), json.dumps(payload, separators=(",", ":")) + "\n")


def _add(index: Index, name: str, state: t.Mapping[str, t.Any]) -> None:
    pane = state.get(F.FLEET_PANE_ID)
    if isinstance(pane, str) and pane:
        index.panes.setdefault(pane, []).append(name)
    pid = state.get(F.PID)
    if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0:
        index.pids.setdefault(str(pid), []).append(name)


def _remove(index: Index, name: str) -> None:
    for mapping in (index.panes, index.pids):
        for key in [k for k, names in mapping.items() if name in names]:
            names = [n for n in mapping[key] if n != name]
            if names:
                mapping[key] = names
            else:
                del mapping[key]


def scan(root: Path) -> Index:
    """Read every session's state file (the slow path the index exists to avoid)."""
    from supervisor.identity import pid_exists

    index = Index({}, {})
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return index
    for entry in entries:
        if entry.name.startswith(".") or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            state = json.loads(Path(entry.path, STATE_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(state, dict):
            _add(index, entry.name, state)
    for pid in [p for p in index.pids if not pid_exists(int(p))]:
        del index.pids[pid]
    return index


def _ensure_dir(root: Path) -> bool:
    """Create ``.shepherd/`` (changing the root's stamp once); False if impossible."""
    try:
        (root / INDEX_DIRNAME).mkdir(exist_ok=True)
    except OSError:
        return False
    return True


def load(root: Path) -> Index:
    """The current index, rebuilt and saved first if it is stale or missing."""
    index = _load(root, _root_stamp(root))
    if index is not None:
        return index
    return rebuild(root)


def rebuild(root: Path) -> Index:
    """Scan the state files and store a fresh index (best effort if read-only)."""
    if not root.is_dir() or not _ensure_dir(root):
        return scan(root)
    with file_lock(root / INDEX_DIRNAME / "index.lock"):
        stamp = _root_stamp(root)
        index = scan(root)
        try:
            _save(root, index, stamp)
        except OSError:
            pass
    return index


def note(root: Path, name: str, state: t.Mapping[str, t.Any]) -> None:
    """Record that session *name* now has *state*'s identity fields."""
    if not _ensure_dir(root):
        return
    with file_lock(root / INDEX_DIRNAME / "index.lock"):
        stamp = _root_stamp(root)
        index = _load(root, stamp)
        if index is None:
            # Stale or missing: a full scan now sees this write too.
            index = scan(root)
        else:
            _remove(index, name)
            _add(index, name, state)
        try:
            _save(root, index, stamp)
        except OSError:
            invalidate(root)  # the old file must not pass for current


def by_pane(root: Path, pane: str) -> list[str]:
    return list(load(root).panes.get(pane, []))


def by_pid(root: Path, pid: int) -> list[str]:
    return list(load(root).pids.get(str(pid), []))
