"""A sub-agent's reply cut off at its output limit, at the budget: interrupted from outside.

Claude follows a reply cut off at its output limit up by itself (up to three requests) with no hook in
between; for the main conversation the status line interrupts it (:mod:`.cut_off_reply`), but none is
drawn while a sub-agent runs. So when the hooks let a sub-agent run under a budget, they leave a process
(``claude-hook watch-subagent``) that looks at the conversation's sub-agent transcripts every
:data:`WATCH_EVERY` seconds until that call is answered. Once the newest reply of one is cut off and
prices the agent to its budget, it interrupts Claude as the status line does: Escape in a fleet pane,
else SIGINT to the Claude the hook ran under (checked by its start token). It is a typist of the hooks
(:mod:`claude_shepherd.supervisor.session.typists`): claude-run ends it when it ends, and it ends by
itself once its claude-run is gone. Standard library only.
"""

from __future__ import annotations

import os
import time

from claude_shepherd.hooks import pane_typing

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t

    from claude_shepherd.hooks.locate import Caller

COMMAND = "watch-subagent"
"""``claude-hook watch-subagent CWD TRANSCRIPT CONVERSATION TOOL_USE_ID CLAUDE_PID CLAUDE_TOKEN``: internal."""
WATCH_EVERY = 0.2
"""Seconds between two looks: a follow-up is sent as soon as the cut-off reply is in."""
LONGEST = 6 * 3600.0
"""A sub-agent that runs longer is no longer watched."""
NEWEST = 4
"""How many of the newest sub-agent transcripts are looked at (one runs at a time under a budget)."""


def start(caller: Caller, env: t.Mapping[str, str], call: t.Any, cwd: str) -> int | None:
    """Leave the watcher of the sub-agent call *call* (admitted under a budget); its pid, or None when
    none could be left (no claude-run above, no Claude found)."""
    from claude_shepherd.hooks.cut_off_reply import claude_of
    from claude_shepherd.supervisor.session.identity import start_token

    who = pane_typing.owner(env)
    transcript, conversation, tool_use_id = call.transcript_path, call.conversation, call.tool_use_id
    if who is None or not all(isinstance(v, str) and v for v in (transcript, conversation, tool_use_id)):
        return None
    claude = claude_of(who[0])
    token = start_token(claude) if claude is not None else None
    if claude is None or token is None:
        return None
    return pane_typing.spawn(COMMAND, [cwd, transcript, conversation, tool_use_id, str(claude), token], env)


def main(args: list[str]) -> int:
    """The watcher: until the call is answered, its claude-run ends or :data:`LONGEST` passed."""
    from claude_shepherd.supervisor.session import replies

    try:
        cwd, transcript, conversation, tool_use_id, claude_text, claude_token = args
        claude = int(claude_text)
    except ValueError:
        return 2
    env = os.environ
    who = pane_typing.owner(env)
    if who is None or not os.path.isabs(transcript):
        return 0
    from claude_shepherd.hooks.locate import locate

    caller = locate(cwd, env)
    began = time.time()
    answered = f'"tool_use_id":"{tool_use_id}"'.encode()
    since = replies.size_of(transcript) or 0
    seen: set[str] = set()
    while time.time() - began < LONGEST and pane_typing.owner_alive(who):
        if replies.has_since(transcript, since, answered):
            return 0
        for ident, path, mtime in replies.subagent_transcripts(transcript)[:NEWEST]:
            if mtime >= began - 1 and _stopped(caller, env, transcript, conversation, ident, path, seen):
                _interrupt(caller, env, claude, claude_token)
                return 0
        time.sleep(WATCH_EVERY)
    return 0


def _stopped(
    caller: Caller, env: t.Mapping[str, str], transcript: str, conversation: str, ident: str, path: str,
    seen: set[str],
) -> bool:  # fmt: skip
    """Is sub-agent *ident*'s newest reply one cut off at its output limit (not seen before) that brings
    the agent to its budget (recorded ``paused`` then)?"""
    from claude_shepherd.hooks import budget_gate
    from claude_shepherd.hooks.cut_off_reply import cut_off

    reply = cut_off(path, sidechain=True)
    if reply is None or reply in seen:
        return False
    seen.add(reply)
    return (
        budget_gate.check(caller, env, transcript=transcript, conversation=conversation, subagent=ident)
        is not None
    )


def _interrupt(caller: Caller, env: t.Mapping[str, str], claude: int, token: str) -> None:
    """As the status line does: Escape in the agent's fleet pane, else SIGINT to the Claude the hook saw
    (if that is still the process)."""
    from claude_shepherd.hooks import budget_gate
    from claude_shepherd.hooks.cut_off_reply import interrupt

    interrupt(caller, env, budget_gate.agent_of(caller, env) or "", claude=(claude, token))
