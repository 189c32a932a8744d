"""``session dehydrate DIR``: save the handover on stdin to DEHYDRATED_CONTEXT.md, then restart."""

from __future__ import annotations

from claude_shepherd.supervisor.errors import EXIT_OK, ShepherdError
from claude_shepherd.supervisor.session.handover import write_handover
from claude_shepherd.supervisor.session.invocation import owned, say, session_dir
from claude_shepherd.supervisor.session.restart_request import request_restart, watchdog
from claude_shepherd.supervisor.session.restart_transitions import begin_dehydrate
from claude_shepherd.supervisor.session.stdin import read_optional_stdin

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds; session runs at every agent step
    from claude_shepherd.supervisor.session.state import State


def _keep(state: State) -> None:
    """Change nothing: the write only proves ownership."""


def run(dir: str, no_restart: bool = False) -> int:
    """Save the markdown handover from stdin, then restart (unless *no_restart*)."""
    folder = session_dir(dir)
    text = read_optional_stdin()
    if not text.strip():
        raise ShepherdError(f"the handover is empty; pipe it in: session dehydrate {dir} <<'EOF' ... EOF")
    dog = None if no_restart else watchdog()
    # Ownership first: a refused command writes nothing, the handover included.
    owned(folder, _keep if no_restart else begin_dehydrate)
    target = write_handover(folder, text)
    say(f"Dehydrated context saved: {target} ({len(text.splitlines())} lines)")
    if not no_restart:
        request_restart(folder, dog)
    return EXIT_OK
