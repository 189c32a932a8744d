"""Claude Code hooks: session gate, prompt gate, overflow gate, heartbeat, status line."""

from claude_shepherd.supervisor.session.programs import HOOKS_MAIN as MAIN

__all__ = ["MAIN"]
