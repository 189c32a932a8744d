"""``session show DIR``: print a session's state, one field a line (read only; for people)."""

from __future__ import annotations

import json

from claude_shepherd.supervisor.errors import EXIT_OK
from claude_shepherd.supervisor.printable import printable
from claude_shepherd.supervisor.session.invocation import say, session_dir
from claude_shepherd.supervisor.session.listing import owner_text
from claude_shepherd.supervisor.session.store import read_state


def run(dir: str) -> int:
    """Print DIR's state, one field a line."""
    folder = session_dir(dir)
    state = read_state(folder)
    say(printable(f"Session {folder}"))
    say(f"  owner: {owner_text(state)}")
    for field, value in sorted(state.items()):
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        say(printable(f"  {field}: {text}"))
    return EXIT_OK
