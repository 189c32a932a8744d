"""``session deactivate DIR``: mark the session completed; a 1-3 line description on stdin."""

from __future__ import annotations

from claude_shepherd.supervisor.errors import EXIT_OK
from claude_shepherd.supervisor.session.invocation import owned, say, session_dir
from claude_shepherd.supervisor.session.related import related_sessions
from claude_shepherd.supervisor.session.stdin import read_optional_stdin
from claude_shepherd.supervisor.session.work_transitions import deactivate


def run(dir: str, keywords: str | None = None) -> int:
    """Mark the session completed, then list the sessions related to it."""
    folder = session_dir(dir)
    description = read_optional_stdin()
    words = [k.strip() for k in keywords.split(",") if k.strip()] if keywords is not None else None
    owned(folder, lambda s: deactivate(s, description=description, keywords=words))
    say(f"Session deactivated: {folder} (lifecycle=completed)")
    related = related_sessions(folder, words or [], description)
    say()
    say("## Related Sessions")
    for line in related or ["(none)"]:
        say(line)
    return EXIT_OK
