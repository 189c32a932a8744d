"""``session phase DIR LABEL``: enter phase LABEL (in order when the skill declared phases); proof lines on stdin."""

from __future__ import annotations

from claude_shepherd.supervisor.errors import EXIT_OK
from claude_shepherd.supervisor.session import work_transitions
from claude_shepherd.supervisor.session.invocation import owned, say, session_dir
from claude_shepherd.supervisor.session.phases import PhaseError, parse_proof
from claude_shepherd.supervisor.session.stdin import read_optional_stdin

LATE_INPUT_WAIT = 2.0
"""Refused for want of proof with nothing read: how long to wait for a writer slow to start (a loaded
machine can let the first wait pass before the other end of the pipe writes)."""


def run(dir: str, label: str, user_approved: str | None = None) -> int:
    """Enter phase LABEL; proof lines on stdin."""
    folder = session_dir(dir)
    text = read_optional_stdin()

    def enter(text: str) -> work_transitions.PhaseChange:
        proof = parse_proof(text)
        return owned(folder, lambda s: work_transitions.phase(s, label, approved=user_approved, proof=proof))

    try:
        change = enter(text)
    except PhaseError:
        late = "" if text else read_optional_stdin(first_wait=LATE_INPUT_WAIT)
        if not late:
            raise
        change = enter(late)
    if change.appended:
        say(f"Added sub-phase to the plan: {change.label}")
    if change.forced:
        say(f"Non-sequential transition approved: {user_approved}")
    say(f"Phase: {change.label}")
    return EXIT_OK
