"""After a usage-limit reset, parked agents go on one at a time: the UserPromptSubmit hook holds the continue prompts Claude types itself.

Interactively under a subscription, Claude waits out a usage limit by itself and, 30–90 s after the
reset, continues: it sends a continue prompt through the UserPromptSubmit hook, before the request
(observed with the real CLI 2.1.328; tests/e2e/test_usage_windows.py). The prompts it may send, read
from the 2.1.328 and 2.1.332 binaries (:data:`RESET_STARTS`, :data:`EARLY_STARTS`): ``Your claude.ai
usage limit has reset. Continue the task…``; ``Your claude.ai usage is available again before the
usage-limit reset…`` (usage came back early: the agent goes on *now*, not at the old reset); on 2.1.332
also ``I hit my usage limit while you were working, but it has reset now…`` and ``My computer went to
sleep while you were working…``. Every agent of the account does so within the same minute, and each
resume re-sends its whole context. So this hook gives each parked agent a slot (supervisor.session
.resume_slots.take_slot: the first at the reset, each next one ``$CLAUDE_USAGE_RESUME_INTERVAL``
seconds later, 60 by default) and

* within :data:`HOLD_MAX` seconds of its slot, waits for it and lets the prompt through;
* later than that, in a fleet pane, blocks the prompt (nothing reaches the API) and leaves a process
  of its own that types the continue prompt into the pane at the slot (``claude-hook resume-at``); that
  prompt comes back here at its slot and goes through. A prompt is blocked only together with the
  record that process types for (the agent's ``limited`` mark, with the slot as ``held``): an agent
  never parked by a StopFailure (shown ``error`` by an older parser, say) is not left blocked for good;
* outside a fleet there is nobody to type it: the prompt goes through (Claude's jitter is all the
  spread there is).

A hook must answer within its timeout (10 s; our deadline is 6 s), hence the block and the retyping
rather than one long wait. Only a prompt that *is* a continue prompt — one line that begins as Claude's
or claude-run's does — is held: a person's prompt that quotes one, says more on another line, or
Claude's wrap-up note near a limit (``[Usage limit reached — grace window active…]``) goes through
untouched. What is typed back is always our own :data:`CONTINUE_TEXT`, never the text the hook
was given: keys typed into a pane are input to Claude (a line break sends, a line starting ``!`` runs a
shell command). Standard library only.
"""

from __future__ import annotations

import time

from claude_shepherd.hooks.locate import claimant, locate
from claude_shepherd.hooks.protocol import parse_input
from claude_shepherd.supervisor.session import pane_records, resume_slots, usage_windows
from claude_shepherd.supervisor.session.credentials import credential_of
from claude_shepherd.supervisor.session.limit_messages import UNKNOWN

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t

AUTO_CONTINUE = "usage limit has reset. Continue the task"
"""What Claude's own auto-continue prompt says (``Your claude.ai usage limit has reset. Continue …``)."""
RESET_STARTS = (
    "Your claude.ai " + AUTO_CONTINUE,
    "Your " + AUTO_CONTINUE,  # claude-run's, after it waited (supervisor.claude_run.usage_wait)
    "I hit my usage limit while you were working, but it has reset now.",  # 2.1.332
    "My computer went to sleep while you were working.",  # 2.1.332: it slept through the reset
)
"""How a continue prompt after a reset begins."""
EARLY_STARTS = ("Your claude.ai usage is available again before the usage-limit reset.",)
"""How Claude's continue prompt begins when usage came back before the reset: the agent goes on now."""
CONTINUE_STARTS = RESET_STARTS + EARLY_STARTS
CONTINUE_MAX = 400
"""A continue prompt is one short line (Claude's is 150 characters)."""
CONTINUE_TEXT = (
    "Your claude.ai usage limit has reset. Continue the task you were working on when the limit was "
    "reached; do not repeat work that is already complete."
)
"""What ``resume-at`` types: Claude's own auto-continue, word for word (CLI 2.1.328)."""
HOLD_MAX = 4.0
"""Seconds the hook itself waits for a slot (inside the hook deadline)."""
RESUME_AT = "resume-at"
"""``claude-hook resume-at SOCKET PANE EPOCH ROOT AGENT``: internal, the process that types :data:`CONTINUE_TEXT`."""


def is_auto_continue(prompt: str) -> bool:
    """Is *prompt* a continue prompt (one line, as Claude or claude-run word it), not a prompt that quotes one?"""
    text = prompt.strip()
    return len(text) <= CONTINUE_MAX and text.isprintable() and text.startswith(CONTINUE_STARTS)


def is_early(prompt: str) -> bool:
    """Is *prompt* Claude's continue prompt of usage that came back before the reset?"""
    return prompt.strip().startswith(EARLY_STARTS)


def hold(raw: bytes, env: t.Mapping[str, str], now: float | None = None) -> str | None:
    """None: let the prompt through (after waiting for the slot, if it is near); else the block answer."""
    inp = parse_input(raw)
    prompt = inp.text("prompt")
    if not is_auto_continue(prompt):
        return None
    now = time.time() if now is None else now
    caller = locate(inp.cwd, env)
    where = pane_records.spot(caller.pane, claimant(env, caller.pid, caller.token))
    if where is None:
        return None
    agent = where[0]
    credential = credential_of(env)
    mark = usage_windows.limited_of(usage_windows.read_agent(caller.root, agent), now)
    until = mark.get("until") if mark else None
    # An early resume goes on now: usage is back, whatever reset the mark waited for.
    reset = float(until) if isinstance(until, (int, float)) and not is_early(prompt) else now
    slot = resume_slots.take_slot(
        caller.root, credential, agent, reset, usage_windows.resume_interval(env), now
    )
    wait = slot - now
    from claude_shepherd.supervisor.session.identity import fleet_socket

    socket = fleet_socket(env)
    if wait <= HOLD_MAX or caller.pane is None or socket is None:
        if 0 < wait <= HOLD_MAX:
            time.sleep(wait)
        usage_windows.clear_limited(caller.root, agent)  # nobody would type it later: it goes now
        return None
    from claude_shepherd.hooks import pane_typing

    # What the typist types for, written before the block: it types only while this mark stands.
    window = str(mark.get("window") or UNKNOWN) if mark else UNKNOWN
    source = str(mark.get("source") or "continue") if mark else "continue"
    usage_windows.note_limited(caller.root, agent, credential, reset, window, source, now, held=slot)
    pane = env.get("TMUX_PANE", "")
    args = [socket, pane, f"{slot:.3f}", str(caller.root), agent]
    if pane_typing.spawn(RESUME_AT, args, env) is None:
        usage_windows.clear_limited(caller.root, agent)
        return None
    import json

    at = time.strftime("%H:%M:%S", time.localtime(slot))
    reason = (
        f"The usage window reopened; the fleet lets its parked agents go on one at a time, and this one "
        f"goes on at {at} (the prompt is sent again then by itself; nothing to do)."
    )
    return json.dumps({"decision": "block", "reason": reason})


def resume_at(args: list[str]) -> int:
    """The detached process: at the slot, type :data:`CONTINUE_TEXT` into the pane
    (:func:`.pane_typing.type_prompt`: only while it is the agent's, and its claude-run's Claude reads
    the keys). A slot too far ahead, or not a number, is nobody's; nothing is typed for an agent that
    went on meanwhile (its mark is gone), nor once its claude-run is gone."""
    import os
    from pathlib import Path

    from claude_shepherd.hooks import pane_typing

    try:
        socket, pane, when, root, agent = args[0], args[1], float(args[2]), Path(args[3]), args[4]
    except (IndexError, ValueError):
        return 2
    if not pane.startswith("%") or not when - time.time() <= pane_typing.LATEST:
        return 2  # NaN fails too
    who = pane_typing.owner(os.environ)
    if who is None or not pane_typing.wait_for(when, who=who):
        return 0

    def wanted() -> bool:  # it did not go on meanwhile
        record = usage_windows.read_agent(root, agent)
        return record is not None and "limited" in record

    if wanted():
        pane_typing.type_prompt(socket, pane, agent, CONTINUE_TEXT, who, wanted)
    return 0
