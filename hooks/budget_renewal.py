"""A day's or week's budget renews: an agent it paused in a fleet pane goes on by itself.

When the budget gate (:mod:`.budget_gate`) pauses an agent in a fleet pane at a budget per day or
week, it leaves one process of its own (``claude-hook budget-renews``) that waits for the budget's next
period — local midnight, Monday's for a week, as the spend is counted — and for the agent's turn:
agents that go on at the same moment go one at a time, ``$FLEET_RESUME_INTERVAL`` (5 s) apart, since
each resume re-sends a whole context (the slots are the usage windows' own,
:func:`~claude_shepherd.supervisor.session.resume_slots.take_slot`). Then it types the resume prompt
into the pane (:mod:`.pane_typing`), only if the agent is still paused, within every budget it is held
to now (another, say its budget for life, may still hold it) and the pane still its. The prompt
goes through the gate like any, which lifts the pause. Outside a fleet nobody can type: the next
prompt a person sends goes through. Standard library only.
"""

from __future__ import annotations

import os
import time

from claude_shepherd.hooks import pane_typing
from claude_shepherd.supervisor.session import budget_records, budgets, index_records, resume_slots, spend

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t

    from claude_shepherd.hooks.locate import Caller
    from claude_shepherd.supervisor.session.budget_records import Renewal

COMMAND = "budget-renews"
"""``claude-hook budget-renews SOCKET PANE EPOCH ROOT AGENT PER``: internal, the process that types the prompt."""
PERIODS = {"day": "daily", "week": "weekly"}
START_SETTLE = 10.0
"""Seconds after a Claude started that a budget renewed meanwhile is typed: its input box is ready then."""


def renewal(per: str, now: float) -> str | None:
    """Names the next renewal of a budget *per* day or week (``day:EPOCH``); None for one over a life."""
    renews = budgets.renews_at(per, now)
    return None if renews is None else f"{per}:{renews:.0f}"


def waiting(asked: Renewal | None, per: str, now: float) -> bool:
    """Does the process *asked* (what :func:`ask` gave, kept in the gate record) still wait for the
    next renewal of a budget *per* day or week? Not once it ended: claude-run ended it as the fleet
    stopped, say."""
    from claude_shepherd.supervisor.session.identity import start_token

    if asked is None or asked["at"] != renewal(per, now):
        return False
    pid, token = asked["pid"], asked["token"]
    return pid > 0 and token is not None and start_token(pid) == token


def ask(
    caller: Caller, env: t.Mapping[str, str], per: str, agent: str, now: float, renews: float | None = None
) -> Renewal | None:
    """Leave the process that resumes *agent* when its budget *per* day or week renews (at *renews*,
    when it renewed already); which renewal it waits for and which process it is (what the gate record
    keeps, so that a pause asks once while it waits), or None when nothing will type it."""
    from claude_shepherd.supervisor.session.identity import fleet_socket, start_token

    socket, pane = fleet_socket(env), env.get("TMUX_PANE", "")
    renews = budgets.renews_at(per, now) if renews is None else renews
    if renews is None or socket is None or caller.pane is None or not pane.startswith("%"):
        return None
    slot = resume_slots.take_slot(
        caller.root, budgets.RESUME_QUEUE, agent, renews, budgets.resume_interval(env), now
    )
    key = renewal(per, now)
    if key is None:
        return None
    pid = pane_typing.spawn(COMMAND, [socket, pane, f"{slot:.3f}", str(caller.root), agent, per], env)
    return None if pid is None else {"at": key, "pid": pid, "token": start_token(pid)}


def started_paused(caller: Caller, env: t.Mapping[str, str], agent: str, now: float | None = None) -> None:
    """A Claude starts in the pane of *agent* while it is paused at a day's or week's budget, its
    process gone (the fleet was stopped, the pane respawned): one waits again, for the renewal, or
    types once Claude is up when the budget renewed meanwhile (the resumed Claude waits for a prompt)."""
    paused = budget_records.paused(caller.root, agent)
    if paused is None or paused["per"] not in PERIODS:
        return
    now = time.time() if now is None else now
    held = budgets.limits(caller.root, agent, pane=True, env=env, now=now)
    reached = next((limit for limit in held if limit.reached), None)
    per = reached.per if reached is not None else paused["per"]
    if per not in PERIODS or waiting(paused.get("renews"), per, now):
        return  # a budget for life holds it (raising that one resumes it), or one waits already
    asked = ask(caller, env, per, agent, now, renews=None if reached is not None else now + START_SETTLE)
    if asked is not None:
        budget_records.note_renewal(caller.root, agent, asked)


def main(args: list[str]) -> int:
    """The detached process: at its slot, the resume prompt, if the agent is to go on."""
    from pathlib import Path

    try:
        socket, pane, at, folder, agent, per = args
        when, root = float(at), Path(folder)
    except ValueError:  # too few or too many, or not a number
        return 2
    if per not in PERIODS or not pane.startswith("%") or not when - time.time() <= pane_typing.LATEST:
        return 2  # NaN fails too
    who = pane_typing.owner(os.environ)
    if who is None:
        return 0  # no claude-run of the agent's above it: nobody's to type for
    folder = index_records.folder_path(root, spend.SPEND_DIRNAME)
    if pane_typing.only_one(os.path.join(folder, index_records.file_name(agent) + ".typist.lock")) is None:
        return 0  # another waits for this agent already (two hooks at once each left one)

    def wanted() -> bool:  # not raised meanwhile (`fleet budget` resumed it), nor its pane gone
        return (
            budget_records.paused(root, agent) is not None and pane_typing.identity_of(socket, pane) == agent
        )

    if not pane_typing.wait_for(when, wanted, who) or budget_records.paused(root, agent) is None:
        return 0
    held = budgets.limits(root, agent, pane=True, env=os.environ, now=time.time())
    if any(limit.reached for limit in held):
        return 0  # another budget still holds it: raising that one resumes it
    pane_typing.type_prompt(socket, pane, agent, budgets.resume_prompt(per), who, wanted)
    return 0
