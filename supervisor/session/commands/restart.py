"""``session restart DIR``: request a fresh Claude that continues this session (the watchdog ends this one)."""

from __future__ import annotations

from claude_shepherd.supervisor.errors import EXIT_OK
from claude_shepherd.supervisor.session.invocation import session_dir
from claude_shepherd.supervisor.session.restart_request import request_restart, watchdog


def run(dir: str) -> int:
    """Request a fresh Claude that continues DIR."""
    folder = session_dir(dir)
    request_restart(folder, watchdog())
    return EXIT_OK
