"""claude-run as a child subreaper: the orphans of Claude's tree become its children.

A ``setsid cmd &`` or a double-forked daemon started from a Bash tool loses its
parent at once and is reparented to the nearest *subreaper* ancestor — init,
unless claude-run is one. As init's child it was outside Claude's tree, so the
watchdog's tree kill never reached it and it survived every restart and stop.
With ``PR_SET_CHILD_SUBREAPER`` (Linux) such orphans become claude-run's
children, and it reaps them as they exit.
"""

from __future__ import annotations

from supervisor.watchdog import prctl

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Have orphaned descendants reparented to us instead of init; False where unsupported."""
    return prctl(PR_SET_CHILD_SUBREAPER, 1)
