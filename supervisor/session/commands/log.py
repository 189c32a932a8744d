"""``session log DIR``: append stdin to the session's log as a timestamped entry (and reset the heartbeat)."""

from __future__ import annotations

import os
from pathlib import Path

from claude_shepherd.supervisor.errors import EXIT_OK, ShepherdError
from claude_shepherd.supervisor.session.invocation import owned, say, session_dir
from claude_shepherd.supervisor.session.paths import log_file_name
from claude_shepherd.supervisor.session.safe_fs import UnsafeFileError, open_append
from claude_shepherd.supervisor.session.stdin import read_optional_stdin
from claude_shepherd.supervisor.session.store import open_session_dir
from claude_shepherd.supervisor.session.transitions import timestamp
from claude_shepherd.supervisor.session.work_transitions import record_log_entry

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds; session runs at every agent step
    from claude_shepherd.supervisor.session.state import State


def append_entry(folder: Path, state: State, entry: bytes) -> Path:
    """Append *entry* to the session's own log (never through a link), then reset the heartbeat; its path."""
    name = log_file_name(state)
    fd = open_session_dir(folder)
    try:
        log_fd = open_append(name, dir_fd=fd)
    except UnsafeFileError as exc:
        raise ShepherdError(f"{folder / name}: {exc}") from None
    finally:
        os.close(fd)
    try:
        os.write(log_fd, entry)
    finally:
        os.close(log_fd)
    record_log_entry(state)  # only after the entry really landed in this session's own log
    return folder / name


def run(dir: str) -> int:
    """Append stdin to DIR's log as a timestamped entry."""
    folder = session_dir(dir)
    text = read_optional_stdin()
    if not text.strip():
        raise ShepherdError(f"nothing to log; pipe the entry in: session log {dir} <<'EOF' ... EOF")
    entry = f"\n## {timestamp()}\n{text.rstrip()}\n".encode()
    path = owned(folder, lambda state: append_entry(folder, state, entry))
    say(f"Logged to {path}")
    return EXIT_OK
