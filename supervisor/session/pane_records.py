"""The conversation each fleet pane is in, whether or not its agent activated a session.

A pane whose agent never activated a session has nothing in any
``.state.json`` to resume from, so after ``fleet stop`` (or a crash, or a
reboot) its conversation was lost, although Claude printed
``claude --resume <id>``. The SessionStart hook and the status line record the
pane's current conversation here — ``<root>/.shepherd/panes/`` (protected from
the file tools like the rest of ``.shepherd``), one small file per pane
identity — and ``claude-run`` resumes it at the pane's next start. A
conversation the status line saw at the overflow threshold is marked, so it
starts fresh instead (with the reason printed). A crash reads the same record.

Outside a fleet there is no pane: the record is the claude-run's, named by its
PID and start token (``.shepherd/runs/``), so that a crashed Claude is resumed
in its conversation too; claude-run removes it when it ends.

What the pane spent is not here: see :mod:`claude_shepherd.supervisor.session.spend`.

Standard library only (the hooks write it); written only when what it says
changes, never through a link.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import zlib
from pathlib import Path

from claude_shepherd.supervisor.session import root_gitignore
from claude_shepherd.supervisor.session.index import INDEX_DIRNAME
from claude_shepherd.supervisor.session.safe_fs import UnsafeFileError, open_dir, read_bytes
from claude_shepherd.supervisor.session.store import write_atomic_at

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t

PANES_DIRNAME = "panes"
RUNS_DIRNAME = "runs"
RECORD_LIMIT = 4096


def spot(pane: str | None, supervisor: tuple[int, str | None] | None) -> tuple[str, str] | None:
    """Where the conversation is recorded, ``(key, folder)``: the fleet pane's record, else — for a
    claude-run that said who it is — the claude-run's; None when neither applies."""
    if pane:
        return pane, PANES_DIRNAME
    if supervisor is not None and supervisor[1]:  # a PID alone may be a reused one
        return f"claude-run {supervisor[0]} {supervisor[1]}", RUNS_DIRNAME
    return None


def _file_name(pane: str) -> str:
    """A file name for a pane identity (labels may hold anything): readable part plus a checksum."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", pane)[:80]
    return f"{readable}-{zlib.crc32(pane.encode()):08x}.json"


def read(root: Path, pane: str, folder: str = PANES_DIRNAME) -> dict[str, t.Any] | None:
    """The pane's record (or another *folder*'s), or None when there is none (or it is unreadable)."""
    try:
        fd = open_dir(root / INDEX_DIRNAME / folder)
    except (OSError, UnsafeFileError):
        return None
    try:
        data = json.loads(read_bytes(_file_name(pane), limit=RECORD_LIMIT, dir_fd=fd))
    except (OSError, UnsafeFileError, ValueError, RecursionError):
        return None
    finally:
        os.close(fd)
    return data if isinstance(data, dict) and data.get("pane") == pane else None


def forget(root: Path, pane: str, folder: str = PANES_DIRNAME) -> None:
    """Remove a record (claude-run's own, when it ends); nothing when there is none."""
    try:
        fd = open_dir(root / INDEX_DIRNAME / folder)
    except (OSError, UnsafeFileError):
        return
    try:
        os.unlink(_file_name(pane), dir_fd=fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def forget_runs(root: Path, dead: t.Callable[[int, str], bool]) -> None:
    """Remove the records of the claude-runs *dead* says are gone (``dead(pid, start token)``)."""
    try:
        fd = open_dir(root / INDEX_DIRNAME / RUNS_DIRNAME)
    except (OSError, UnsafeFileError):
        return
    try:
        for name in os.listdir(fd):
            try:
                data = json.loads(read_bytes(name, limit=RECORD_LIMIT, dir_fd=fd))
                _, pid, token = data["pane"].split(" ", 2)
                gone = dead(int(pid), token)
            except (
                OSError,
                UnsafeFileError,
                ValueError,
                RecursionError,
                TypeError,
                KeyError,
                AttributeError,
            ):
                continue
            if gone:
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=fd)
    finally:
        os.close(fd)


def conversation(record: t.Mapping[str, t.Any] | None) -> str | None:
    value = record.get("conversation") if record else None
    return value if isinstance(value, str) and value else None


def note(
    root: Path,
    pane: str,
    conversation_id: str,
    *,
    folder: str = PANES_DIRNAME,
    overflowed: bool = False,
) -> dict[str, t.Any]:
    """Record that *pane* is in conversation *conversation_id* (and whether it reached the threshold).

    Returns the record as it now stands. Best effort: a hook never fails over it.
    """
    before = read(root, pane, folder)
    was_overflowed = bool(
        before and before.get("conversation") == conversation_id and before.get("overflowed")
    )
    record = {"pane": pane, "conversation": conversation_id, "overflowed": overflowed or was_overflowed}
    if before == record:
        return record
    try:
        directory = root / INDEX_DIRNAME / folder
        root_gitignore.ensure(str(root / root_gitignore.GITIGNORE))
        directory.mkdir(parents=True, exist_ok=True)
        fd = open_dir(directory)
    except (OSError, UnsafeFileError):
        return record
    try:
        write_atomic_at(fd, _file_name(pane), json.dumps(record) + "\n")
    except OSError:
        pass
    finally:
        os.close(fd)
    return record
