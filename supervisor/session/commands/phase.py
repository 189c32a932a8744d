"""``session phase DIR LABEL``: enter phase LABEL (in order when the skill declared phases); proof lines on stdin."""

from __future__ import annotations

from claude_shepherd.supervisor.errors import EXIT_OK
from claude_shepherd.supervisor.session import transitions
from claude_shepherd.supervisor.session.invocation import owned, say, session_dir
from claude_shepherd.supervisor.session.phases import parse_proof
from claude_shepherd.supervisor.session.stdin import read_optional_stdin


def run(dir: str, label: str, user_approved: str | None = None) -> int:
    """Enter phase LABEL; proof lines on stdin."""
    folder = session_dir(dir)
    proof = parse_proof(read_optional_stdin())
    change = owned(folder, lambda s: transitions.phase(s, label, approved=user_approved, proof=proof))
    if change.appended:
        say(f"Added sub-phase to the plan: {change.label}")
    if change.forced:
        say(f"Non-sequential transition approved: {user_approved}")
    say(f"Phase: {change.label}")
    return EXIT_OK
