"""Claude Code hooks: session gate, prompt gate, overflow gate, heartbeat, status line."""
