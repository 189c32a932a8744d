"""The names and defaults of ``.state.json``, defined once.

This module is the schema's vocabulary. It imports nothing, so the hooks (which
run on every tool call and must stay on the standard library) name fields
through it exactly as the typed schema in :mod:`claude_shepherd.supervisor.session.schema` does; a test
pins the two together.
"""

from __future__ import annotations

STATE_FILE = ".state.json"
"""The state file inside a session directory."""

DEHYDRATED_FILE = "DEHYDRATED_CONTEXT.md"
"""The handover written by ``session dehydrate`` and read by ``session continue``."""


class F:
    """camelCase keys of ``.state.json`` exactly as they are on disk."""

    # identity
    PID = "pid"
    PID_START = "pidStart"
    SESSION_ID = "sessionId"
    FLEET_PANE_ID = "fleetPaneId"
    # lifecycle (docs/DESIGN.md §3: three orthogonal fields)
    LIFECYCLE = "lifecycle"
    OVERFLOWED = "overflowed"
    OVERFLOW_CONVERSATION = "overflowConversation"
    KILL_REQUESTED = "killRequested"
    RESTART_PROMPT = "restartPrompt"
    LOADING = "loading"
    BOOTSTRAP_CONVERSATION = "bootstrapConversation"
    # work
    SKILL = "skill"
    CURRENT_PHASE = "currentPhase"
    PHASES = "phases"
    PHASE_HISTORY = "phaseHistory"
    COMPLETED_SKILLS = "completedSkills"
    TARGET_FILE = "targetFile"
    LOG_TEMPLATE = "logTemplate"
    SESSION_DESCRIPTION = "sessionDescription"
    SEARCH_KEYWORDS = "searchKeywords"
    KEYWORDS = "keywords"
    # context
    CONTEXT_USAGE = "contextUsage"
    CONTEXT_USAGE_AT = "contextUsageAt"
    CONTEXT_WINDOW_SIZE = "contextWindowSize"
    DEHYDRATE_TOOL_CALLS = "dehydrateToolCalls"
    # heartbeat (logging discipline)
    TOOL_CALLS_SINCE_LAST_LOG = "toolCallsSinceLastLog"
    TOOL_CALLS_BY_TRANSCRIPT = "toolCallsByTranscript"
    WARN_AFTER = "toolUseWithoutLogsWarnAfter"
    BLOCK_AFTER = "toolUseWithoutLogsBlockAfter"
    # timestamps
    STARTED_AT = "startedAt"
    LAST_HEARTBEAT = "lastHeartbeat"


ALL_FIELDS: frozenset[str] = frozenset(value for name, value in vars(F).items() if name.isupper())
"""Every key the schema knows; anything else on disk is kept untouched."""


class Lifecycle:
    """Values of ``lifecycle`` (docs/DESIGN.md §3.1)."""

    ACTIVE = "active"
    COMPLETED = "completed"
    DEHYDRATING = "dehydrating"
    RESTARTING = "restarting"
    RESUMING = "resuming"


LIFECYCLES: tuple[str, ...] = (
    Lifecycle.ACTIVE,
    Lifecycle.COMPLETED,
    Lifecycle.DEHYDRATING,
    Lifecycle.RESTARTING,
    Lifecycle.RESUMING,
)

LIVE_LIFECYCLES: frozenset[str] = frozenset({Lifecycle.ACTIVE, Lifecycle.DEHYDRATING, Lifecycle.RESUMING})
"""Lifecycles in which the session gate lets every tool through."""

DEFAULT_WARN_AFTER = 3
DEFAULT_BLOCK_AFTER = 10
MAX_BLOCK_AFTER = 50
"""The heartbeat can be relaxed up to this many calls between log entries, never switched off."""
LOADING_BLOCK_AFTER = 60
"""Tool calls the bootstrap passthrough allows before work must start with ``session phase``."""
DEFAULT_OVERFLOW_THRESHOLD = 0.76
DEFAULT_DEHYDRATE_CALL_BUDGET = 25
DEFAULT_PHASE = "Phase 1: Setup"

RESERVED_FILES = frozenset({STATE_FILE, DEHYDRATED_FILE})
"""Our own files in a session folder: no log may be named like one of them."""
