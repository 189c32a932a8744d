"""The state transitions of docs/DESIGN.md §3.6, each the only writer of its fields: what they share.

Every transition changes a state dict in place (inside
:func:`claude_shepherd.supervisor.session.store.update_state`) and writes only what docs/DESIGN.md §3.6 says it
writes. State flows forward — ``overflowed`` only becomes true, ``killRequested`` is set by a restart request
and cleared by its consumer — except through :func:`.activate_transition.activate`, the one entry point of a
new lifecycle. The transitions are grouped by what they govern:

* :mod:`.activate_transition`: ``activate`` and its named rules;
* :mod:`.owner_transitions`: who owns a session, and the conversation bound to it;
* :mod:`.work_transitions`: phases, settings, the log's heartbeat counts, the end of a skill;
* :mod:`.restart_transitions`: overflow, dehydrate and restart.

Standard library only: the hooks apply some of them on the hot path.
"""

from __future__ import annotations

import time

from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.session.fields import F

PROTECTED_FROM_STDIN: frozenset[str] = frozenset(
    {
        F.PID,
        F.PID_START,
        F.SESSION_ID,
        F.FLEET_PANE_ID,
        F.LIFECYCLE,
        F.OVERFLOWED,
        F.OVERFLOW_CONVERSATION,
        F.KILL_REQUESTED,
        F.RESTART_PROMPT,
        F.LOADING,
        F.BOOTSTRAP_CONVERSATION,
        F.CONTEXT_USAGE,
        F.CONTEXT_USAGE_AT,
        F.CONTEXT_WINDOW_SIZE,
        F.DEHYDRATE_TOOL_CALLS,
        F.TOOL_CALLS_BY_TRANSCRIPT,
        F.COMPLETED_SKILLS,
        F.SKILL,
        F.CURRENT_PHASE,
        F.PHASE_HISTORY,
        F.LAST_HEARTBEAT,
        F.STARTED_AT,
        F.TOOL_CALLS_SINCE_LAST_LOG,
    }
)
"""Fields an activation's stdin JSON may not set: they belong to the transitions
(the skill is the command line's, validated there; the phase only moves by ``session phase``)."""
PROTECTED_FROM_UPDATE: frozenset[str] = PROTECTED_FROM_STDIN | {F.PHASES, F.LOG_TEMPLATE}
"""Fields ``session update`` may not set: ``phases`` and ``logTemplate`` are declared at
activation, so redeclaring them cannot open a path around the phase order and its proofs,
nor move the heartbeat's template onto another file."""


class TransitionError(ShepherdError):
    """A transition refused by its guard."""


def timestamp(now: float | None = None) -> str:
    """UTC ``YYYY-MM-DDTHH:MM:SSZ``, the format the bash era wrote."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if now is None else now))


def count_of(value: object) -> int:
    """A stored counter, or 0 when it is missing or not a non-negative integer."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
