"""Who may write a session: an agent (under claude-run, under Claude, or in a fleet pane), never a
person at a shell — a session activated from there would be owned by that shell and refuse every
later command of its own."""

from __future__ import annotations

import os

from claude_shepherd.supervisor.env import CLAUDE_PID_ENV, SUPERVISOR_PID_ENV
from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.session.identity import current_pane_id, is_ancestor, lineage
from claude_shepherd.supervisor.session.numbers import parse_pid

CLAUDE_NAME = "claude"
"""Claude Code's process name (``/proc/PID/comm``)."""

WRITING_COMMANDS = frozenset(
    {"activate", "phase", "deactivate", "restart", "dehydrate", "continue", "update", "target", "log"}
)
"""The ``session`` subcommands that write a session: for agents only."""


def claude_above() -> bool:
    """Is a Claude Code process (named ``claude``) one of our ancestors? Read from /proc."""
    for current in lineage(os.getppid()):
        try:
            with open(f"/proc/{current}/comm", "rb") as handle:
                if handle.read().strip() == CLAUDE_NAME.encode():
                    return True
        except OSError:
            return False
    return False


def vouched(var: str) -> bool:
    """Does *var* name a process above us? (Any text may be in it: only short ASCII digits are read.)"""
    raw = os.environ.get(var, "").strip()
    pid = parse_pid(raw)
    return pid is not None and pid != 1 and is_ancestor(pid)  # init is above everyone: it vouches for no one


def is_agent() -> bool:
    """Does an agent call us: under claude-run or Claude (each checked in /proc), or in a fleet pane?"""
    return (
        vouched(SUPERVISOR_PID_ENV)
        or vouched(CLAUDE_PID_ENV)
        or claude_above()
        or current_pane_id() is not None
    )


def refuse_a_person(command: str) -> None:
    """A writing *command* run by a person (no agent above it) is refused, pointing at the read-only ones."""
    if command in WRITING_COMMANDS and not is_agent():
        raise ShepherdError(
            f"`session {command}` is for agents running under claude-run (no claude-run, Claude or fleet pane "
            "runs this command); to look at sessions use `session list` or `session show DIR`"
        )
