"""The budget gate: an agent at its budget pauses, its conversation kept, until the budget is raised.

The semantics are a managed session budget's: at the cap no new model request
is made, the request in flight finishes, the agent pauses with its state kept,
and raising the cap lets it go on. Claude Code has no pause, but a PreToolUse
deny with ``"continue": false`` ends the turn after the one request whose tool
call it refuses, and a refused prompt is never sent: so at most one more model
request follows the moment the cap is seen.

On every tool call and prompt :func:`check` compares what the agent's
budgets (:mod:`claude_shepherd.supervisor.session.budgets`) with what was
measured (:mod:`claude_shepherd.supervisor.session.spend`). Reached: the agent
is recorded ``paused`` first (its gate record, then its pane's state, which
the border, ``fleet status`` and ``fleet watch`` show), then the hooks refuse
with a line naming the budget, what was spent and the command that raises it.
At 80 % the fleet is alerted once per budget (and day or week). Within its
budgets again (raised, or a new day), the record is cleared; in a fleet pane, an agent paused at a
budget per day or week is typed a resume prompt when it renews (:mod:`.budget_renewal`). Standard
library only.
"""

from __future__ import annotations

import time

from claude_shepherd.hooks.locate import Caller, claimant, shell_word
from claude_shepherd.hooks.protocol import one_line
from claude_shepherd.supervisor.env import CLAUDE_SESSION_ID_ENV
from claude_shepherd.supervisor.session import budget_records, budgets, pane_records

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t


def raise_by(limit: budgets.Limit) -> float:
    """How much to raise *limit* by so that it is its own amount above what was spent (however far the
    spend went past it), to the cent upwards: typed as given, the raise lets the agent go on."""
    needed = max(limit.usd, limit.spent or 0.0)
    return -(-round(needed * 100, 6) // 1) / 100


def raise_command(limit: budgets.Limit, agent: str, env: t.Mapping[str, str] | None = None) -> str:
    """The command that raises *limit* enough for the agent to go on (see :func:`raise_by`). A lone
    claude-run's goes on in the same conversation by its id (``$CLAUDE_CODE_SESSION_ID``), which brings
    its session back with it (claude-run takes over the session that conversation ran in)."""
    add = f"--add {raise_by(limit):g}"
    fleet = agent.split(":", 1)[0]
    if limit.scope == budgets.PANE:
        return f"fleet budget {shell_word(fleet)} --pane {shell_word(limit.name)} {add}"
    if limit.scope == budgets.WINDOW:
        return f"fleet budget {shell_word(fleet)} --window {shell_word(limit.name)} {add}"
    if limit.scope == budgets.FLEET:
        return f"fleet budget {shell_word(fleet)} {add}"
    if agent.startswith("claude-run "):
        conversation = env.get(CLAUDE_SESSION_ID_ENV, "") if env is not None else ""
        again = f"--resume {shell_word(conversation)}" if conversation else "--continue"
        return f"claude-run --budget-usd {limit.usd:g} -- {again}"
    # In a fleet pane the ledger is the pane's: a new claude-run there goes on counting it.
    return "a larger claude-run --budget-usd in this pane's command (it counts the pane's spend so far)"


def _raise_text(limit: budgets.Limit, agent: str, env: t.Mapping[str, str]) -> str:
    """What to do, as typed: a fleet's budgets change at once; a claude-run's own is fixed while it runs,
    and a new one outside a fleet counts anew, continuing the same conversation."""
    if limit.scope in (budgets.PANE, budgets.WINDOW, budgets.FLEET):
        return (
            f"No tool runs and no prompt is sent until it is raised: `{raise_command(limit, agent)}`; "
            "the conversation is kept and goes on then."
        )
    if not agent.startswith("claude-run "):
        return (
            "No tool runs and no prompt is sent. This pane's claude-run --budget-usd is fixed while it runs "
            "and counts the pane's spend so far: give the pane's command a larger one and restart the pane."
        )
    return (
        "No tool runs and no prompt is sent. A claude-run's budget is fixed while it runs: end this Claude "
        f"(/exit) and go on in the same conversation under a new budget: `{raise_command(limit, agent, env)}` "
        "(with your other Claude arguments)."
    )


def reason(limit: budgets.Limit, agent: str, env: t.Mapping[str, str]) -> str:
    """The one line the agent and the person read."""
    whose = {budgets.PANE: "this pane's budget", budgets.WINDOW: f"the budget of window {limit.name}",
             budgets.FLEET: f"the budget of fleet {limit.name}"}  # fmt: skip
    which = whose.get(limit.scope, "this agent's budget")
    return one_line(
        f"PAUSED (budget): {which} ({limit.text()}) is spent "
        f"(${limit.spent or 0:.2f} {limit.source}). {_raise_text(limit, agent, env)} A `session` command still runs."
    )


def agent_of(caller: Caller, env: t.Mapping[str, str]) -> str | None:
    """The identity the agent's spend is measured under (the status line's), or None."""
    where = pane_records.spot(caller.pane, claimant(env, caller.pid, caller.token))
    return where[0] if where else None


def check(
    caller: Caller,
    env: t.Mapping[str, str],
    now: float | None = None,
    *,
    transcript: object = None,
    conversation: object = None,
    call: object = None,
    subagent: str | None = None,
) -> str | None:
    """The refusal when the calling agent reached a budget (recorded ``paused`` before it returns),
    else None (alerting at 80 % once).

    With the call's *transcript* and *conversation*, the replies Claude wrote since the last hook are
    priced first (:mod:`.metering`; the reply asking for tool call *call* waited for): the status line
    may not have counted them yet, and in ``claude -p`` it never does. A call of sub-agent *subagent* is
    priced from that sub-agent's own transcript."""
    agent = agent_of(caller, env)
    if agent is None:
        return None
    now = time.time() if now is None else now
    held = budgets.limits(caller.root, agent, pane=bool(caller.pane), env=env, now=now)
    if not held:
        return None
    if transcript is not None:
        from claude_shepherd.hooks import metering

        needle = metering.tool_use_needle(call)
        if metering.meter(caller.root, agent, conversation, transcript, needle, subagent=subagent):
            held = budgets.limits(caller.root, agent, pane=bool(caller.pane), env=env, now=now)
    reached = next((limit for limit in held if limit.reached), None)
    before = budget_records.paused(caller.root, agent)
    if reached is not None:
        text = reason(reached, agent, env)
        paused = reached.pause(raise_command(reached, agent, env), now)
        renews = before.get("renews") if before is not None else None
        if reached.per != "life":  # one process waits for the renewal while the agent is paused
            from claude_shepherd.hooks import budget_renewal

            if not budget_renewal.waiting(renews, reached.per, now):
                renews = budget_renewal.ask(caller, env, reached.per, agent, now)
        if renews is not None:
            paused["renews"] = renews
        budget_records.pause(caller.root, agent, paused)
        from claude_shepherd.supervisor import pane_notify
        from claude_shepherd.supervisor.tmux_names import PAUSED

        pane_notify.publish(PAUSED, env=env)
        return text
    if before is not None and budget_records.go_on(caller.root, agent):  # raised, or a new day or week
        from claude_shepherd.supervisor import pane_notify
        from claude_shepherd.supervisor.tmux_names import WORKING

        pane_notify.publish(WORKING, env=env)
    fresh = False
    for limit in held:
        if limit.nearly:
            fresh = _first_alert(caller, agent, limit, now) or fresh
    if fresh:
        from claude_shepherd.supervisor import pane_notify

        try:
            pane_notify.budget_alert(env)
        except Exception:
            pass
    return None


def _first_alert(caller: Caller, agent: str, limit: budgets.Limit, now: float) -> bool:
    """Record that *limit* reached 80 % (in the record of whoever the budget is: the agent's own, else
    its window's or fleet's, so a shared budget alerts once, not once per agent); True when it is new."""
    owner = agent
    if limit.scope == budgets.WINDOW:
        owner = f"{agent.split(':', 1)[0]}:{limit.name}:"
    elif limit.scope == budgets.FLEET:
        owner = f"{limit.name}:"
    return budget_records.note_alert(caller.root, owner, limit.key(now))


def meter_turn_end(
    caller: Caller, env: t.Mapping[str, str], transcript: object, conversation: object
) -> None:
    """At the end of a turn (the Stop hook), price the reply that ended it into the ledger of an agent
    held to a budget: it asked for no tool, so no PreToolUse hook saw it (in ``claude -p`` it is the
    run's last, which only this measures)."""
    agent = agent_of(caller, env)
    if agent is None or not budgets.limits(
        caller.root, agent, pane=bool(caller.pane), env=env, now=time.time()
    ):
        return
    from claude_shepherd.hooks import metering

    metering.meter(caller.root, agent, conversation, transcript)


def holds(caller: Caller, env: t.Mapping[str, str]) -> bool:
    """Is the calling agent held to any budget?"""
    agent = agent_of(caller, env)
    return bool(
        agent and budgets.limits(caller.root, agent, pane=bool(caller.pane), env=env, now=time.time())
    )


def is_paused(caller: Caller, env: t.Mapping[str, str]) -> bool:
    """Is the agent recorded paused (what the pane's state must go on showing)?"""
    agent = agent_of(caller, env)
    return bool(agent and budget_records.paused(caller.root, agent))
