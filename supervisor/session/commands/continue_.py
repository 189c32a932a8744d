"""``session continue DIR``: re-activate DIR and print everything needed to pick the work up."""

from __future__ import annotations

from claude_shepherd.supervisor.errors import EXIT_OK, ShepherdError
from claude_shepherd.supervisor.session.activation import activate_session
from claude_shepherd.supervisor.session.fields import DEFAULT_PHASE, DEHYDRATED_FILE, F
from claude_shepherd.supervisor.session.handover import read_handover, required_file_present, required_files
from claude_shepherd.supervisor.session.invocation import own_pane, say, session_dir
from claude_shepherd.supervisor.session.paths import log_file_name
from claude_shepherd.supervisor.session.store import read_state


def run(dir: str, fleet_pane: str | None = None) -> int:
    """Re-activate DIR for this agent; print its skill, phase, log, handover and required files."""
    folder = session_dir(dir)
    state = read_state(folder)
    skill = state.get(F.SKILL)
    if not isinstance(skill, str) or not skill:
        raise ShepherdError(f"{folder} records no skill; use session activate {dir} SKILL")
    activate_session(folder, skill, pane=own_pane(fleet_pane), approved="continuing the session")
    state = read_state(folder)
    phase_label = state.get(F.CURRENT_PHASE) or DEFAULT_PHASE
    say(f"Session continued: {folder}")
    say(f"  Skill: {skill}")
    say(f"  Phase: {phase_label}")
    say(f"  Log: {folder / log_file_name(state)}")
    say()
    say("## Dehydrated context")
    text = read_handover(folder)
    say(text.rstrip("\n") if text else f"(none: no {DEHYDRATED_FILE} in {folder})")
    say()
    say("## Required files")
    listed = required_files(text)
    for path in listed:
        say(f"- {path}" + ("" if required_file_present(path, folder) else "  (missing)"))
    if not listed:
        say("(none listed)")
    say()
    say(f"Resume at phase: {phase_label}")
    return EXIT_OK
