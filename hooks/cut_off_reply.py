"""Interrupt Claude's own follow-up of a reply cut off at its output limit, once the budget is spent.

A reply that reaches its output limit (``stop_reason`` ``max_tokens``) runs no tool: Claude Code
follows it up by itself ("Output token limit hit. Resume directly…"), up to three more requests, with
no hook in between. The status line is still drawn after each reply. When it finds the newest reply
cut off and the agent at its budget, it interrupts Claude as a person would, once per reply:

- in a fleet pane, Escape — only when the agent's claude-run has its Claude reading the pane's keys
  (:func:`claude_shepherd.hooks.pane_typing.reads_keys`). The turn ends, the agent stays, paused, its
  conversation kept; ``fleet budget --add`` lets it go on;
- elsewhere, SIGINT to the claude-run's Claude: it ends (a lone claude-run's budget is fixed while it
  runs; the pause's line says how to go on in the same conversation).

The follow-up in flight is cut; none after it is sent. Standard library only (the status line's path).
"""

from __future__ import annotations

import json
import os
import signal

from claude_shepherd.supervisor.session import budget_records, replies

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t

    from claude_shepherd.hooks.locate import Caller

TAIL = 256 * 1024
"""How much of the transcript's end is searched for its newest reply."""
INTERRUPTED = "interrupted"
"""The gate record's field: the id of the cut-off reply whose follow-up was interrupted."""


def cut_off(transcript: object) -> str | None:
    """The message id of the conversation's newest reply when it was cut off at its output limit (Claude
    follows it up by itself; a tool call in it is cut, never run), else None."""
    if not isinstance(transcript, str):
        return None
    fd = replies.open_transcript(transcript)
    if fd is None:
        return None
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - TAIL)
        data = os.pread(fd, size - start, start)
    except OSError:
        return None
    finally:
        os.close(fd)
    if b'"max_tokens"' not in data:
        return None  # the common case, without parsing a line
    for line in reversed(data[: data.rfind(b"\n") + 1].split(b"\n")):
        if b'"assistant"' not in line:
            continue
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if (
            not isinstance(entry, dict)
            or entry.get("type") != "assistant"
            or entry.get("isSidechain") is True
        ):
            continue
        message = entry.get("message")
        if not isinstance(message, dict):
            continue
        if message.get("model") == replies.SYNTHETIC_MODEL:
            return None  # Claude's own error line ends the follow-ups
        ident = message.get("id")
        if message.get("stop_reason") == "max_tokens" and isinstance(ident, str):  # a tool call in it is cut
            return ident[:200]
        return None
    return None


def stop_at_budget(
    caller: Caller, env: t.Mapping[str, str], transcript: object, conversation: object
) -> bool:
    """After a reply cut off at its output limit, interrupt Claude when the agent reached a budget
    (recorded ``paused`` by the budget gate first); True when it was interrupted now."""
    reply = cut_off(transcript)
    if reply is None:
        return False
    from claude_shepherd.hooks import budget_gate

    agent = budget_gate.agent_of(caller, env)
    if (
        agent is None
        or budget_gate.check(caller, env, transcript=transcript, conversation=conversation) is None
    ):
        return False
    record = budget_records.gate_record(caller.root, agent)
    if record.get(INTERRUPTED) == reply:
        return False  # once per reply: a second Escape would open Claude's rewind menu
    budget_records.write_gate_record(caller.root, agent, {**record, INTERRUPTED: reply})
    return interrupt(caller, env, agent)


def interrupt(caller: Caller, env: t.Mapping[str, str], agent: str) -> bool:
    """Escape into the fleet pane whose keys the agent's Claude reads, else SIGINT to the claude-run's
    Claude; False when no Claude of the agent's claude-run was found."""
    from claude_shepherd.hooks import pane_typing
    from claude_shepherd.supervisor.session.identity import fleet_socket
    from claude_shepherd.supervisor.session.programs import run_tmux

    who = pane_typing.owner(env)
    if who is None:
        return False
    socket, pane = fleet_socket(env), env.get("TMUX_PANE", "")
    if caller.pane is not None:
        if socket is None or not pane.startswith("%"):
            return False
        if pane_typing.reads_keys(socket, pane, agent, who) is None:
            return False
        done = run_tmux(socket, ["send-keys", "-t", pane, "Escape"], os.environ)
        return done is not None and done.returncode == 0
    claude = claude_of(who[0])
    if claude is None:
        return False
    try:
        os.kill(claude, signal.SIGINT)
    except OSError:
        return False
    return True


def claude_of(supervisor: int) -> int | None:
    """The Claude this hook runs under: its ancestor that is a child of claude-run *supervisor*."""
    from claude_shepherd.supervisor.session.identity import parent_pid

    pid = os.getpid()
    for _ in range(16):
        parent = parent_pid(pid)
        if parent is None or parent <= 1:
            return None
        if parent == supervisor:
            return pid
        pid = parent
    return None
