"""``session list``: one line per session of the root: name, lifecycle, skill, phase, owner (read only; for people)."""

from __future__ import annotations

import os

from claude_shepherd.supervisor.errors import EXIT_OK, ShepherdError
from claude_shepherd.supervisor.printable import printable
from claude_shepherd.supervisor.session.fields import F
from claude_shepherd.supervisor.session.invocation import root, say
from claude_shepherd.supervisor.session.listing import cell, owner_text
from claude_shepherd.supervisor.session.store import read_state

OWNER_COLUMN = 4
"""The last column, left unpadded."""


def run() -> int:
    """Print the sessions of the root as a table."""
    where = root()
    try:
        names = sorted(
            e.name
            for e in os.scandir(where)
            if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)
        )
    except OSError:
        names = []
    if not names:
        say(printable(f"No sessions in {where}."))
        return EXIT_OK
    rows = [("SESSION", "LIFECYCLE", "SKILL", "PHASE", "OWNER")]
    for name in names:
        try:
            state = read_state(where / name)
        except ShepherdError as exc:
            rows.append((cell(name), "unreadable", cell(str(exc), 60), "", ""))
            continue
        rows.append((cell(name), cell(state.get(F.LIFECYCLE)), cell(state.get(F.SKILL)),
                     cell(state.get(F.CURRENT_PHASE)), owner_text(state)))  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(OWNER_COLUMN)]
    say(printable(f"Sessions in {where}:"))
    for row in rows:
        say("  ".join(c.ljust(widths[i]) if i < OWNER_COLUMN else c for i, c in enumerate(row)).rstrip())
    return EXIT_OK
