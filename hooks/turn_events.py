"""The turn's events in a fleet pane: Stop (done, and the reply that ended the turn priced), Notification
(needs-you, or done when idle) and the prompt (working), each shown through :mod:`.pane_notify`.

What a pane shows is not always the event's plain state: an agent paused at a budget stays ``paused``
until its budget is raised (:mod:`.budget_gate`), and an overflowed one shows ``error`` until it hands
over. Standard library only (these run on every turn).
"""

from __future__ import annotations

import time

from claude_shepherd.supervisor.pane_notify import publish
from claude_shepherd.supervisor.session.identity import fleet_socket
from claude_shepherd.supervisor.tmux_names import DONE, ERROR, NEEDS_YOU, WORKING

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

IDLE_NOTIFICATIONS = frozenset({"idle_prompt"})
QUIET_NOTIFICATIONS = frozenset({"auth_success", "quota_auto_resume_fired"})
"""Nobody is needed: a login went through; Claude goes on by itself after a usage limit (its
auto-continue, at the reset or early: ``Usage limit reset — Claude is continuing your task``). The
continue prompt it sends shows the agent working (or held for its turn: hooks.usage_turn)."""
DROPPED = "quota_auto_resume_disabled"
BLOCKED = "blocked before it reached the model"
"""Claude's words when a UserPromptSubmit hook blocked its continue prompt (``continuation-dropped``)."""


def notification_state(raw: bytes) -> str | None:
    """The state a Notification hook input means: needs-you, done (idle), or None (nothing to show)."""
    import json

    try:
        data = json.loads(raw or b"{}")
    except (ValueError, RecursionError):  # not JSON, or nested past the parser
        data = {}
    kind = data.get("notification_type") if isinstance(data, dict) else None
    if kind in QUIET_NOTIFICATIONS:
        return None
    if kind in IDLE_NOTIFICATIONS:
        return DONE
    return NEEDS_YOU  # a permission prompt, a question (elicitation), or an unknown kind: look


def shown(state: str, session: t.Mapping[str, object] | None, conversation: object) -> str:
    """*state*, or error instead of working/done while *session* is overflowed in *conversation* and
    has not begun to dehydrate: an overflowed agent must stay visible until it hands over."""
    if state not in (WORKING, DONE) or not session:
        return state
    from claude_shepherd.supervisor.session.fields import F, Lifecycle
    from claude_shepherd.supervisor.session.restart_transitions import overflowed_in

    conversation = conversation if isinstance(conversation, str) and conversation else None
    handing_over = session.get(F.LIFECYCLE) == Lifecycle.DEHYDRATING or session.get(F.KILL_REQUESTED) is True
    return ERROR if overflowed_in(session, conversation) and not handing_over else state


def unless_overflowed(state: str, raw: bytes, env: t.Mapping[str, str]) -> str:
    """:func:`shown` for a hook's input *raw*: looks the caller's session up, only in a fleet pane."""
    if state not in (WORKING, DONE) or fleet_socket(env) is None:
        return state  # nothing would be published outside a fleet
    try:
        from claude_shepherd.hooks.locate import locate
        from claude_shepherd.hooks.protocol import parse_input

        inp = parse_input(raw)
        caller = locate(inp.cwd, env)
        from claude_shepherd.hooks.budget_gate import is_paused

        if is_paused(caller, env):
            from claude_shepherd.supervisor.tmux_names import PAUSED

            return PAUSED  # it stays paused until its budget is raised
        found = caller.found
        return shown(state, found.state if found else None, inp.data.get("session_id"))
    except Exception:
        return state


def run_stop(raw: bytes, env: t.Mapping[str, str]) -> str:
    """``claude-hook stop``: the turn ended — done (error while overflowed), the reply that ended it
    priced for an agent held to a budget (:func:`meter_stop`). Prints nothing."""
    meter_stop(raw, env)
    publish(unless_overflowed(DONE, raw, env), env=env)
    return ""


def meter_stop(raw: bytes, env: t.Mapping[str, str]) -> None:
    """Price the reply that ended the turn into the spend ledger, where a budget may hold the agent: a
    fleet pane, or a claude-run with ``--budget-usd``. In ``claude -p`` it is the run's last reply,
    which no other hook sees. Never fails the hook."""
    from claude_shepherd.supervisor.env import BUDGET_USD_ENV

    if fleet_socket(env) is None and not env.get(BUDGET_USD_ENV):
        return
    try:
        from claude_shepherd.hooks.budget_gate import meter_turn_end
        from claude_shepherd.hooks.locate import locate
        from claude_shepherd.hooks.protocol import parse_input

        inp = parse_input(raw)
        meter_turn_end(locate(inp.cwd, env), env, inp.data.get("transcript_path"), inp.data.get("session_id"))
    except Exception:
        pass


def run_notification(raw: bytes, env: t.Mapping[str, str]) -> str:
    """``claude-hook notification``: Claude waits for the person — needs-you (or done when idle); not
    when Claude goes on by itself, nor for a continue prompt our hold blocked and will type again."""
    state = notification_state(raw)
    if state == NEEDS_YOU and BLOCKED.encode() in raw and held_by_us(raw, env):
        state = None
    if state is not None:
        publish(unless_overflowed(state, raw, env), env=env)
    return ""


def held_by_us(raw: bytes, env: t.Mapping[str, str]) -> bool:
    """Is this Claude's "automatic continue did not run" for a continue prompt the usage hold blocked
    (hooks.usage_turn), whose typist will send it at the agent's slot? Then nobody is needed."""
    import json

    try:
        data = json.loads(raw or b"{}")
        if not isinstance(data, dict) or data.get("notification_type") != DROPPED:
            return False
        from claude_shepherd.hooks.locate import claimant, locate
        from claude_shepherd.hooks.protocol import parse_input
        from claude_shepherd.supervisor.session import pane_records, usage_windows

        inp = parse_input(raw)
        caller = locate(inp.cwd, env)
        where = pane_records.spot(caller.pane, claimant(env, caller.pid, caller.token))
        record = usage_windows.read_agent(caller.root, where[0]) if where is not None else None
        limited = record.get("limited") if record else None
        held = limited.get("held") if isinstance(limited, dict) else None
        return isinstance(held, (int, float)) and held > time.time() - 60
    except Exception:
        return False  # when in doubt, the person is told
