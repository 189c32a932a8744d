"""The tmux vocabulary the hooks, ``claude-run`` and ``fleet`` share: one name for each thing.

* which tmux servers are fleets (:data:`FLEET_SOCKET`, :func:`is_fleet_socket`);
* the pane, window and session options they read and write (``@pane_notify`` …);
* the pane states, most urgent first, with their priorities and colours;
* the format strings more than one of them builds (:func:`one_line_field`,
  :data:`WINDOW_AGGREGATE`, :func:`state_commands`).

Standard library only and nothing imported at all: the hooks import this on
every tool call.
"""

from __future__ import annotations

# --------------------------------------------------------------------------- fleet sockets

FLEET_SOCKET = "fleet"
"""The default fleet's socket name; every other fleet's is ``fleet-NAME``."""

_SOCKET_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def is_fleet_socket(name: str) -> bool:
    """``fleet`` or ``fleet-NAME``: the only tmux servers the fleet and its hooks act on (one test for all).

    NAME is ASCII letters, digits, ``_``, ``.`` and ``-``, never ``..``: a socket name becomes a file
    name beside tmux's sockets (and the fleet's lock), so it must not lead out of that folder.
    """
    if name == FLEET_SOCKET:
        return True
    rest = name[len(FLEET_SOCKET) + 1 :]
    return (name.startswith(FLEET_SOCKET + "-") and 0 < len(rest) <= 64 and ".." not in rest
            and all(c in _SOCKET_CHARS for c in rest))  # fmt: skip


# --------------------------------------------------------------------------- pane states

WORKING = "working"
NEEDS_YOU = "needs-you"
DONE = "done"
ERROR = "error"
EXITED = "exited"
"""The pane's process ended without being asked to (a crash, a give-up, kill -9, a quit)."""
STOPPED = "stopped"
"""``fleet stop`` ended the pane's agent."""
LIMITED = "limited"
"""The account's usage window stopped the agent; it goes on after the reset (supervisor.session.usage_windows)."""
PAUSED = "paused"
"""The agent reached a budget: its hooks refuse new work until the budget is raised (``fleet budget``)."""

UNKNOWN = "unknown"
"""The agent's host did not answer: it may run on, so it is never called stopped."""
NOT_RUNNING = "not running"
"""The host answered, and its part of the fleet is not running there."""
DIALOG = "dialog"
"""The agent's Claude waits at a dialog of Claude Code's before it starts (its folder's trust, say):
``fleet`` sees it on the pane's screen; no hook has run to say anything."""

STATES: tuple[str, ...] = (EXITED, ERROR, NEEDS_YOU, LIMITED, PAUSED, WORKING, DONE, STOPPED)
"""Most urgent first: the window tab shows the first state any of its panes is in."""

HOOK_STATES: tuple[str, ...] = (ERROR, NEEDS_YOU, LIMITED, WORKING, DONE)
"""What a running agent's hooks publish (the others belong to a pane whose process ended)."""

PRIORITY: dict[str, int] = {EXITED: 5, ERROR: 4, NEEDS_YOU: 3, LIMITED: 2, PAUSED: 2, WORKING: 1, DONE: 0,
                            STOPPED: -1}  # fmt: skip

COLOURS: dict[str, str] = {EXITED: "colour196", ERROR: "colour160", NEEDS_YOU: "colour35", WORKING: "colour33",
                           DONE: "colour244", STOPPED: "colour240", LIMITED: "colour172", PAUSED: "colour208"}  # fmt: skip
"""tmux colours of each state (border text, tab background)."""

ALERTING = frozenset({EXITED, ERROR, NEEDS_YOU, DONE, PAUSED})
"""States that may alert on entry (which of them do is the fleet's choice: claude_shepherd.supervisor.alerts)."""
ALERT_STATES: tuple[str, ...] = (NEEDS_YOU, ERROR, EXITED, DONE, PAUSED)
"""The states a layout's ``notify_on`` may list, in the order they are shown."""
DEFAULT_ALERT_ON: tuple[str, ...] = (NEEDS_YOU, ERROR, EXITED, PAUSED)
"""The states that alert when a layout does not say."""

# --------------------------------------------------------------------------- budgets

BUDGET_ALERT = "budget"
"""What an alert at 80 % of a budget says in ``{state}`` (it is no pane state: the agent works on)."""

# --------------------------------------------------------------------------- options

PANE_OPTION = "@pane_notify"
"""The pane's state (one of :data:`STATES`), set by the hooks and the pane-died hook."""
WINDOW_OPTION = "@window_notify"
"""The most urgent state of the window's panes (tmux works it out: :data:`WINDOW_AGGREGATE`)."""
LABEL_OPTION = "@pane_label"
"""The pane's label in its layout: ``session:window:label`` is the pane's identity."""
CONTEXT_OPTION = "@pane_context"
"""How full the pane's Claude's context is, in whole percent."""
COST_OPTION = "@pane_cost"
"""What the pane's Claudes spent in its session, in USD, two decimals (the status line's
``cost.total_cost_usd`` carried across restarts and resumes: supervisor.session.pane_records)."""
RESTARTS_OPTION = "@pane_restarts"
"""How often Claude was relaunched in the pane (``claude-run`` publishes it)."""
STOPPING_OPTION = "@pane_stopping"
"""The pid of the pane process ``fleet stop`` is ending: its death is a stop, not an exit."""
ALERTED_OPTION = "@pane_alerted"
"""``STATE=SECONDS ...``: when the pane last alerted on each state (the cooldown's record; the hooks write it, in tmux
where no file tool reaches)."""
AGENT_OPTION = "@pane_agent"
"""``1`` on a pane ``fleet start`` made to run a supervised Claude: a dead one is a dead agent."""
FLEET_NOTIFY_OPTION = "@fleet_notify"
"""The fleet's alert settings (a session option ``fleet start`` writes; see claude_shepherd.supervisor.alerts)."""
LAYOUT_OPTION = "@fleet_layout"
"""The layout file a fleet was built from (a session option): verbs given no LAYOUT use it."""
CLAUDE_OPTION = "@pane_claude"
"""The pid of the Claude whose SessionStart hook ran in the pane: a sign it is past Claude Code's startup
dialogs (trust, API key, …), which come before any hook or status line."""

# --------------------------------------------------------------------------- formats

FIELD_SEP = "\x1f"
"""Unit separator between the fields of one row tmux prints (shown as U+FFFD inside a field)."""


def one_line_field(name: str) -> str:
    """The tmux format of field *name* with tab, newline, CR and unit separator shown as U+FFFD.

    An agent sets its own pane's options (``@pane_label`` and the rest) and
    chooses its working directory: a separator or newline in them would split
    or forge the rows we parse, hiding a live pane from the fleet (and from
    ``fleet doctor``, which would then take its agent for an orphan). No
    layout label contains these characters, so nothing legitimate changes.
    """
    return f"#{{s/[\t\n\r\x1f]/\ufffd/:{name}}}"


def _aggregate_format() -> str:
    """A tmux format: the first of :data:`STATES` that any pane of the window is in, else ""."""
    states = f"#{{P:#{{{PANE_OPTION}}} }}"  # every pane's state, space-separated
    chosen = ""
    for state in reversed(STATES):
        chosen = f"#{{?#{{m:* {state} *, {states}}},{state},{chosen}}}"
    return chosen


WINDOW_AGGREGATE = _aggregate_format()
"""Expanded by tmux (``set-option -F``) when a pane's state is set."""


def state_commands(pane: str, state: str) -> list[str]:
    """tmux arguments that set *pane*'s state and then its window's aggregate, in one command list."""
    return ["set-option", "-p", "-t", pane, PANE_OPTION, state, ";",
            "set-option", "-w", "-F", "-t", pane, WINDOW_OPTION, WINDOW_AGGREGATE]  # fmt: skip


REAP_NUDGE = ("run-shell", "-b", "true")
"""A job of tmux's own. tmux 3.3 at times misses the SIGCHLD of a pane's process (the pane shows dead
with no exit status, and its ``pane-died`` hook never runs); when any later child of the server ends,
tmux reaps every child that has exited, so this settles such a pane."""
