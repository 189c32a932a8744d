"""``claude-hook session-start``: bind Claude's conversation id to our session.

SessionStart fires at startup, resume, ``/clear`` (which changes the id) and
compaction, and — unlike the status line — also in ``claude -p``. The id is
what ``claude-run`` later resumes, so it is never written while a restart is
pending, after an overflow or while dehydrating (docs/DESIGN.md R1). A session
its owner's supervisor claimed for a resume becomes active again now that the
resumed Claude runs. In a fleet pane it also marks which Claude got this far
(:func:`mark_up`): past Claude Code's startup dialogs. Prints nothing.
Standard library only.
"""

from __future__ import annotations

from claude_shepherd.hooks.locate import claimant, locate
from claude_shepherd.hooks.protocol import note, parse_input
from claude_shepherd.supervisor.session import pane_records
from claude_shepherd.supervisor.session.owner_transitions import (
    bind_conversation,
    may_bind_session_id,
    resumed,
)
from claude_shepherd.supervisor.session.store import update_state

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

    from claude_shepherd.hooks.locate import Caller
    from claude_shepherd.supervisor.session.state import State

MAX_ID_LENGTH = 200


def conversation_id(value: object) -> str | None:
    """Claude's ``session_id``, if it looks like an id (printable, no blanks, bounded)."""
    if not isinstance(value, str) or not value or len(value) > MAX_ID_LENGTH:
        return None
    if not value.isprintable() or any(c.isspace() for c in value):
        return None
    return value


def bind(state: State, session_id: str, owner: tuple[int, str | None] | None = None) -> None:
    """Bind the conversation (R1 guard under the lock); the owner's resumed Claude makes the session active."""
    if may_bind_session_id(state):
        bind_conversation(state, session_id=session_id)
    if owner is not None:
        resumed(state, pid=owner[0], token=owner[1])


def mark_up(caller: Caller, env: t.Mapping[str, str]) -> None:
    """Say on the fleet pane which Claude reached its session (:data:`CLAUDE_OPTION`): past Claude Code's
    startup dialogs, which ``fleet`` otherwise looks for on the pane's screen. That Claude is the one
    above this hook whose parent is the pane's claude-run."""
    from claude_shepherd.supervisor.session.identity import fleet_socket, lineage, parent_pid
    from claude_shepherd.supervisor.session.programs import run_tmux
    from claude_shepherd.supervisor.tmux_names import CLAUDE_OPTION

    socket, pane = fleet_socket(env), env.get("TMUX_PANE", "")
    if socket is None or not pane.startswith("%") or claimant(env, caller.pid, caller.token) is None:
        return
    claude = next((pid for pid in lineage() if parent_pid(pid) == caller.pid), None)
    if claude is not None:
        run_tmux(socket, ["set-option", "-p", "-t", pane, CLAUDE_OPTION, str(claude)], env)


def run(raw: bytes, env: t.Mapping[str, str]) -> str:
    inp = parse_input(raw)
    session_id = conversation_id(inp.data.get("session_id"))
    if session_id is None:
        return ""
    try:
        caller = locate(inp.cwd, env)
        if caller.pane is not None:
            mark_up(caller, env)
        # The pane's (outside a fleet: claude-run's) conversation, session or not: what its next start
        # or a crash resumes.
        where = pane_records.spot(caller.pane, claimant(env, caller.pid, caller.token))
        if where is not None:
            pane_records.note(caller.root, where[0], session_id, folder=where[1])
            if caller.pane is not None:  # a paused agent started again goes on when its budget renews
                from claude_shepherd.hooks import budget_renewal

                budget_renewal.started_paused(caller, env, where[0])
        found = caller.found
        if found is not None:  # the R1 guard is checked under the lock, in bind()
            owner = (caller.pid, caller.token)
            update_state(found.session_dir, lambda state: bind(state, session_id, owner))
    except Exception as exc:
        note(f"claude-hook session-start: conversation id not bound ({type(exc).__name__}: {exc})")
    return ""
