"""``session find``: print this agent's session (fleet pane first, then supervisor PID); exit 1 if none."""

from __future__ import annotations

from claude_shepherd.supervisor.errors import EXIT_FAILURE, EXIT_OK
from claude_shepherd.supervisor.session.invocation import lookup_pane, me, root, say
from claude_shepherd.supervisor.session.lookup import find_session


def run(fleet_pane: str | None = None) -> int:
    """Print the session of this agent; exit 1 if none."""
    pid, token = me()
    found = find_session(root(), pane=lookup_pane(fleet_pane), pid=pid, token=token)
    if found is None:
        return EXIT_FAILURE
    say(str(found.session_dir))
    return EXIT_OK
