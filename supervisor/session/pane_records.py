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
import os

from claude_shepherd.supervisor.session import index_records
from claude_shepherd.supervisor.session.safe_fs import UnsafeFileError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t
    from pathlib import Path

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


_file_name = index_records.file_name
"""A file name for a pane identity (labels may hold anything)."""


def read(root: Path, pane: str, folder: str = PANES_DIRNAME) -> dict[str, object] | None:
    """The pane's record (or another *folder*'s), or None when there is none (or it is unreadable)."""
    return index_records.read(root, folder, _file_name(pane), RECORD_LIMIT, ("pane", pane))


def forget(root: Path, pane: str, folder: str = PANES_DIRNAME) -> None:
    """Remove a record (claude-run's own, when it ends); nothing when there is none."""
    index_records.forget(root, folder, _file_name(pane))


def forget_runs(root: Path, dead: t.Callable[[int, str], bool]) -> None:
    """Remove the records of the claude-runs *dead* says are gone (``dead(pid, start token)``)."""
    fd = index_records.opened(root, RUNS_DIRNAME)
    if fd is None:
        return
    try:
        for name in os.listdir(fd):
            data = index_records.load(fd, name, RECORD_LIMIT)
            if data is None:
                continue
            try:
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


def conversation(record: t.Mapping[str, object] | None) -> str | None:
    value = record.get("conversation") if record else None
    return value if isinstance(value, str) and value else None


def note(
    root: Path,
    pane: str,
    conversation_id: str,
    *,
    folder: str = PANES_DIRNAME,
    overflowed: bool = False,
) -> dict[str, object]:
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
    index_records.write(root, folder, _file_name(pane), record)
    return record
