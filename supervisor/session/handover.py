"""The handover (``DEHYDRATED_CONTEXT.md``): written by ``session dehydrate``, read back by
``session continue``, with the files it lists as required."""

from __future__ import annotations

import os
import re
from pathlib import Path

from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.session.fields import DEHYDRATED_FILE
from claude_shepherd.supervisor.session.safe_fs import UnsafeFileError, read_bytes
from claude_shepherd.supervisor.session.store import open_session_dir, write_atomic_at

HANDOVER_LIMIT = 2 * 1024 * 1024
"""The most of a handover that is read back (bytes)."""

_REQUIRED_HEADING = re.compile(r"^#{1,6}\s.*\brequired\b", re.IGNORECASE)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.*)$")
_QUOTED = re.compile(r"`([^`]+)`")
_PATH_END = re.compile(r"\s+(?:[-—–(]|$)")


def required_files(markdown: str) -> list[str]:
    """Paths listed under a 'Required files' heading of the handover."""
    paths: list[str] = []
    inside = False
    for line in markdown.splitlines():
        if line.lstrip().startswith("#"):
            inside = bool(_REQUIRED_HEADING.match(line.strip()))
            continue
        item = _LIST_ITEM.match(line) if inside else None
        if not item:
            continue
        text = item.group(1).strip()
        quoted = _QUOTED.search(text)
        path = quoted.group(1) if quoted else _PATH_END.split(text, maxsplit=1)[0]
        if path:
            paths.append(path.strip())
    return paths


def read_handover(session_dir: Path) -> str:
    """The handover's text ("" when there is none), never through a link (it could point anywhere)
    nor from a FIFO."""
    fd = open_session_dir(session_dir)
    try:
        return read_bytes(DEHYDRATED_FILE, limit=HANDOVER_LIMIT, dir_fd=fd).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    except UnsafeFileError as exc:
        raise ShepherdError(f"{session_dir / DEHYDRATED_FILE}: {exc}") from None
    finally:
        os.close(fd)


def write_handover(session_dir: Path, text: str) -> Path:
    """Replace the handover with *text* (ending in a newline), atomically; its path."""
    fd = open_session_dir(session_dir)
    try:
        write_atomic_at(fd, DEHYDRATED_FILE, text if text.endswith("\n") else text + "\n")
    finally:
        os.close(fd)
    return session_dir / DEHYDRATED_FILE


def required_file_present(path: str, session_dir: Path) -> bool:
    """Is a listed *path* there: absolute, from the project (the root's parent), or in the session?"""
    where = Path(path).expanduser()
    base = session_dir.parent.parent
    return (where if where.is_absolute() else base / where).exists() or (session_dir / where).exists()
