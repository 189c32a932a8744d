"""The usage folder, ``<sessions root>/.shepherd/usage/``, and how a number read back from it is believed.

Its files are written by every agent's status line and hooks, and read by the fleet, a host's included:
a number in them is a moment only if a clock can show it, and a reset only if it lies no further ahead
than :data:`MAX_AHEAD`. Shared by the windows and the agents they parked (:mod:`.usage_windows`), the
resume slots (:mod:`.resume_slots`) and Claude's limit text (:mod:`.limit_messages`).
Standard library only: the status line and the hooks import it.
"""

from __future__ import annotations

import json

from claude_shepherd.supervisor.session import index_records
from claude_shepherd.supervisor.session.numbers import MAX_EPOCH, json_number

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t
    from pathlib import Path

USAGE_DIRNAME = "usage"
RECORD_LIMIT = 16384
MAX_AHEAD = 8 * 86400.0
"""The furthest a reset is believed to lie ahead: the longest window Claude reports is a week. A reading,
a printed reset or a mark further ahead (a gateway's or a broken clock's) is not believed — it would park
an agent, and hold claude-run's relaunch, for good — and counts as a reset not known."""
SAME_RESET = 300.0
"""Resets this close are one: a reset read exactly, one parsed to the minute, "now" at an auto-continue."""


number = json_number
"""*value* as a number from 0 to *most*, else None (a bool, a string, NaN, one out of range)."""


def moment(value: object) -> float | None:
    """*value* as epoch seconds any clock here can show, else None."""
    return number(value, MAX_EPOCH)


def believed_reset(value: object, now: float) -> float | None:
    """A reset as a number of epoch seconds no further than :data:`MAX_AHEAD` from *now*, else None."""
    return number(value, min(MAX_EPOCH, now + MAX_AHEAD))


def file_name(name: str) -> str:
    """A file name for *name* (a credential, an identity): a readable part and a checksum."""
    return index_records.file_name(name, tidy=True)


def folder(name: str | None = None) -> str:
    """The usage folder, or its subfolder *name*, as :mod:`.index_records` names folders."""
    return f"{USAGE_DIRNAME}/{name}" if name else USAGE_DIRNAME


def directory(root: Path, name: str | None = None) -> str:
    """The path of :func:`folder` under *root*."""
    return index_records.folder_path(root, folder(name))


def read(
    root: Path, name: str | None, file: str, where: tuple[str, str] | None = None
) -> dict[str, t.Any] | None:
    """The record *file* of the usage folder (its subfolder *name*), or None."""
    return index_records.read(root, folder(name), file, RECORD_LIMIT, where)


def write(root: Path, name: str | None, file: str, record: t.Mapping[str, object]) -> bool:
    """Replace the record *file* of the usage folder (its subfolder *name*); False when it could not be."""
    return index_records.write(root, folder(name), file, json.dumps(record, sort_keys=True) + "\n")
