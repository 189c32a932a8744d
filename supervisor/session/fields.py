"""The names and defaults of ``.state.json``, defined once.

This module is the schema's vocabulary. It imports nothing, so the hooks (which
run on every tool call and must stay on the standard library) name fields
through it exactly as the typed schema in :mod:`claude_shepherd.supervisor.session.schema` does; a test
pins the two together.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # Final makes each key a literal for mypy (State's keys); nothing is imported at run time
    from typing import Final

STATE_FILE = ".state.json"
"""The state file inside a session directory."""

DEHYDRATED_FILE = "DEHYDRATED_CONTEXT.md"
"""The handover written by ``session dehydrate`` and read by ``session continue``."""


class F:
    """camelCase keys of ``.state.json`` exactly as they are on disk."""

    # identity
    PID: Final = "pid"
    PID_START: Final = "pidStart"
    SESSION_ID: Final = "sessionId"
    FLEET_PANE_ID: Final = "fleetPaneId"
    # lifecycle (docs/DESIGN.md §3: three orthogonal fields)
    LIFECYCLE: Final = "lifecycle"
    OVERFLOWED: Final = "overflowed"
    OVERFLOW_CONVERSATION: Final = "overflowConversation"
    KILL_REQUESTED: Final = "killRequested"
    RESTART_PROMPT: Final = "restartPrompt"
    LOADING: Final = "loading"
    BOOTSTRAP_CONVERSATION: Final = "bootstrapConversation"
    # work
    SKILL: Final = "skill"
    CURRENT_PHASE: Final = "currentPhase"
    PHASES: Final = "phases"
    PHASE_HISTORY: Final = "phaseHistory"
    COMPLETED_SKILLS: Final = "completedSkills"
    TARGET_FILE: Final = "targetFile"
    LOG_TEMPLATE: Final = "logTemplate"
    SESSION_DESCRIPTION: Final = "sessionDescription"
    SEARCH_KEYWORDS: Final = "searchKeywords"
    KEYWORDS: Final = "keywords"
    # context
    CONTEXT_USAGE: Final = "contextUsage"
    CONTEXT_USAGE_AT: Final = "contextUsageAt"
    CONTEXT_WINDOW_SIZE: Final = "contextWindowSize"
    DEHYDRATE_TOOL_CALLS: Final = "dehydrateToolCalls"
    # heartbeat (logging discipline)
    TOOL_CALLS_SINCE_LAST_LOG: Final = "toolCallsSinceLastLog"
    TOOL_CALLS_BY_TRANSCRIPT: Final = "toolCallsByTranscript"
    WARN_AFTER: Final = "toolUseWithoutLogsWarnAfter"
    BLOCK_AFTER: Final = "toolUseWithoutLogsBlockAfter"
    # timestamps
    STARTED_AT: Final = "startedAt"
    LAST_HEARTBEAT: Final = "lastHeartbeat"


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
