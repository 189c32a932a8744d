"""Read optional input from stdin without ever hanging.

The bash ``session.sh`` read stdin to EOF whenever it was not a TTY, so an
agent calling it with an open pipe and no heredoc hung forever (G3). Here stdin
is read only when it is not a TTY and has data, and the read stops when the
writer goes quiet.
"""

from __future__ import annotations

import os
import select
import sys

FIRST_BYTE_WAIT = 0.2
QUIET_WAIT = 2.0
MAX_BYTES = 4 * 1024 * 1024


def read_optional_stdin(first_wait: float = FIRST_BYTE_WAIT, quiet_wait: float = QUIET_WAIT) -> str:
    """Whatever stdin holds, or ``""`` when it is a TTY, closed or silent."""
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, ValueError, OSError):
        return ""
    try:
        if os.isatty(fd):
            return ""
    except OSError:
        return ""
    chunks: list[bytes] = []
    total = 0
    wait = first_wait
    while total < MAX_BYTES:
        try:
            ready, _, _ = select.select([fd], [], [], wait)
        except (OSError, ValueError):
            break
        if not ready:
            break
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        wait = quiet_wait
    return b"".join(chunks).decode("utf-8", errors="replace")
