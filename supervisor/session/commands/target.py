"""``session target DIR FILE``: set the file the status line links to."""

from __future__ import annotations

from claude_shepherd.supervisor.errors import EXIT_OK
from claude_shepherd.supervisor.session.fields import F
from claude_shepherd.supervisor.session.invocation import owned, say, session_dir
from claude_shepherd.supervisor.session.work_transitions import set_setting


def run(dir: str, file: str) -> int:
    """Set the file the status line links to."""
    folder = session_dir(dir)
    owned(folder, lambda state: set_setting(state, F.TARGET_FILE, file))
    say(f"Target file: {file}")
    return EXIT_OK
