"""``session activate DIR SKILL``: claim DIR for this agent (creating it); a JSON object on stdin is merged in."""

from __future__ import annotations

from claude_shepherd.supervisor.errors import EXIT_OK
from claude_shepherd.supervisor.session.activation import activate_session
from claude_shepherd.supervisor.session.identity import supervisor_pid
from claude_shepherd.supervisor.session.invocation import own_pane, say, session_dir
from claude_shepherd.supervisor.session.stdin import read_optional_stdin

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds; session runs at every agent step
    pass


def stdin_object() -> dict[str, object] | None:
    """The JSON object piped in, or None when nothing is."""
    from claude_shepherd.supervisor.session.store import json_object

    raw = read_optional_stdin()
    if not raw.strip():
        return None
    return json_object(raw, "stdin", hint="; pass a JSON object or nothing")


def run(
    dir: str,
    skill: str,
    fleet_pane: str | None = None,
    target_file: str | None = None,
    user_approved: str | None = None,
) -> int:
    """Claim DIR for this agent (creating it), optionally merging a JSON object from stdin."""
    folder = session_dir(dir)
    extra = stdin_object()
    pane = own_pane(fleet_pane)
    outcome = activate_session(
        folder, skill, pane=pane, target_file=target_file, approved=user_approved, extra=extra
    )
    pid = supervisor_pid()
    if outcome.kind == "takeover" and outcome.previous_owner:
        say(f"Took over from supervisor PID {outcome.previous_owner} (no longer running)")
    if user_approved:
        say(f"Approval recorded: {user_approved}")
    if outcome.kind == "reactivated":
        say(f"Session re-activated: {folder} (skill: {skill}, pid: {pid})")
        return EXIT_OK
    details = [f"skill: {skill}", f"pid: {pid}"]
    if pane:
        details.append(f"fleet: {pane}")
    if target_file:
        details.append(f"target: {target_file}")
    say(f"Session activated: {folder} ({', '.join(details)})")
    return EXIT_OK
