"""Every environment variable claude-shepherd reads or sets, named once.

Standard library only and import-free: the hooks read several of these on
every tool call.
"""

from __future__ import annotations

# --- the contract claude-run gives Claude (and so its hooks, status line and Bash tools)
SUPERVISOR_PID_ENV = "CLAUDE_SUPERVISOR_PID"
"""claude-run's PID: the owner identity of the sessions its agent activates."""
SESSION_REQUIRED_ENV = "SESSION_REQUIRED"
"""``1``: the session gate applies."""
SESSIONS_DIR_ENV = "CLAUDE_SESSIONS_DIR"
"""The sessions root (else ``sessions/`` of the project)."""
WORKTREE_ENV = "CLAUDE_RUN_WORKTREE"
"""The git worktree claude-run's Claude runs in (``claude --worktree NAME``); a fleet pane's command exports it."""
WATCHDOG_PID_ENV = "WATCHDOG_PID"
"""The watchdog of the current launch; ``session restart`` signals it."""
TMUX_ENV = "CLAUDE_SHEPHERD_TMUX"
"""The tmux ``fleet start`` ran; the hooks in a fleet pane run only this one (or a system one)."""
BUDGET_USD_ENV = "CLAUDE_SHEPHERD_BUDGET_USD"
"""``claude-run --budget-usd``: USD this agent may spend in its life before the hooks pause it."""

# --- set by Claude Code
CLAUDE_PID_ENV = "CLAUDE_PID"
"""Claude's own PID (the owner when there is no claude-run)."""
CLAUDE_SESSION_ID_ENV = "CLAUDE_CODE_SESSION_ID"
"""The conversation id, in Bash tools: whose overflow and bootstrap an activation belongs to."""
CONFIG_DIR_ENV = "CLAUDE_CONFIG_DIR"
CREDENTIAL_ENV = "CLAUDE_SHEPHERD_CREDENTIAL"
"""The credential claude-run's Claude uses, as supervisor.session.credentials.credential_of names it:
Claude keeps ``$CLAUDE_CODE_OAUTH_TOKEN`` from its hooks, so claude-run names the credential for them."""
"""Claude's configuration folder (else ``~/.claude``)."""
PROJECT_DIR_ENV = "CLAUDE_PROJECT_DIR"
"""The project Claude was started in (hooks and the status line only)."""

# --- knobs (their defaults live with the code they tune: fields.py, crashloop.CrashPolicy, ...)
CLAUDE_BIN_ENV = "CLAUDE_BIN"
THRESHOLD_ENV = "CLAUDE_OVERFLOW_THRESHOLD"
LEGACY_THRESHOLD_ENV = "OVERFLOW_THRESHOLD"  # the bash era's name
DEHYDRATE_BUDGET_ENV = "CLAUDE_DEHYDRATE_CALL_BUDGET"
EXTRA_COMMANDS_ENV = "CLAUDE_HOOK_EXTRA_COMMANDS"
HOOK_DEADLINE_ENV = "CLAUDE_HOOK_DEADLINE"
KILL_GRACE_ENV = "CLAUDE_RUN_KILL_GRACE"
KILL_GRACE_DEFAULT = 3.0
"""Seconds the watchdog waits between SIGTERM and SIGKILL when the environment does not say."""
# claude-run's other knobs (CLAUDE_RUN_CRASH_LIMIT, ...) are declared with their flags in claude_run.cli.TUNABLES.
FLEET_LAYOUT_ENV = "FLEET_LAYOUT"
FLEET_SOCKET_ENV = "FLEET_SOCKET"
FLEET_STOP_GRACE_ENV = "FLEET_STOP_GRACE"
FLEET_TMUX_TIMEOUT_ENV = "FLEET_TMUX_TIMEOUT"
FLEET_LOCK_TIMEOUT_ENV = "FLEET_LOCK_TIMEOUT"
"""Seconds a verb that changes a fleet waits while another one holds the fleet's lock."""
FLEET_START_WAIT_ENV = "FLEET_START_WAIT"
"""Seconds ``fleet start``/``restart`` wait for each agent's supervisor and Claude to be running."""
FLEET_START_SETTLE_ENV = "FLEET_START_SETTLE"
"""Seconds a Claude must have stayed up for ``fleet start`` to call its agent running."""
FLEET_NOTIFY_COMMAND_ENV = "FLEET_NOTIFY_COMMAND"
"""The notify command when the layout names none (``fleet start`` reads it; split like a shell, never run by one)."""
FLEET_NOTIFY_TIMEOUT_ENV = "FLEET_NOTIFY_TIMEOUT"
"""Seconds a notify command may run before it is killed (hooks read it)."""
FLEET_SSH_COMMAND_ENV = "FLEET_SSH_COMMAND"
"""The ``ssh`` program and its options for other hosts (split like a shell, e.g. ``ssh -F ~/.ssh/fleet``)."""
FLEET_SSH_REUSE_ENV = "FLEET_SSH_REUSE"
"""``0``: a new SSH connection for every call instead of one shared connection per host."""
FLEET_HOST_TIMEOUT_ENV = "FLEET_HOST_TIMEOUT"
"""Seconds another host has to answer before it is reported unreachable."""
FLEET_REMOTE_HOME_ENV = "FLEET_REMOTE_HOME"
"""Where ``fleet host add`` installs on other hosts, relative to the login's home (default
``.local/share/claude-shepherd``); ``fleet`` runs ``bin/fleet`` of its venv there."""
