"""Interrupt Claude's own follow-up of a reply cut off at its output limit, once the budget is spent.

A reply that reaches its output limit (``stop_reason`` ``max_tokens``) runs no tool: Claude Code
follows it up by itself ("Output token limit hit. Resume directly…"), up to three more requests, with
no hook in between. The status line is still drawn after each reply. When it finds the newest reply
cut off and the agent at its budget, it interrupts Claude as a person would, once per reply:

- in a fleet pane, Escape — only when the agent's claude-run has its Claude reading the pane's keys
  (:func:`claude_shepherd.hooks.pane_typing.reads_keys`). The turn ends, the agent stays, paused, its
  conversation kept; ``fleet budget --add`` lets it go on;
- elsewhere, or where Escape would not reach Claude (its terminal put back in line mode: a key then
  waits for Enter), SIGINT to the claude-run's Claude: it ends (claude-run says how to go on in the
  same conversation, exit 4).

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


def cut_off(transcript: object, sidechain: bool = False) -> str | None:
    """The message id of the conversation's newest reply when it was cut off at its output limit (Claude
    follows it up by itself; a tool call in it is cut, never run), else None.

    The transcript's last :data:`TAIL` bytes are read; when no reply ends there, the line they begin
    inside is read whole, up to :data:`~claude_shepherd.supervisor.session.replies.READ_LIMIT` (a reply
    of whitespace is many bytes in few tokens). A sub-agent's own transcript is read with *sidechain*."""
    if not isinstance(transcript, str):
        return None
    fd = replies.open_transcript(transcript)
    if fd is None:
        return None
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - TAIL)
        data = os.pread(fd, size - start, start)
        lines = data[: data.rfind(b"\n") + 1].split(b"\n")
        first = lines.pop(0) if start > 0 and lines else None  # begun before the tail
        for line in reversed(lines):
            found = _newest_reply(line, sidechain)
            if found is not None:
                return found or None
        if first is None:
            return None
        found = _newest_reply(_line_ending_at(fd, start + len(first), start), sidechain)
        return found or None
    except OSError:
        return None
    finally:
        os.close(fd)


def _newest_reply(line: bytes, sidechain: bool = False) -> str | None:
    """For a line of a reply of the main conversation (a sub-agent's with *sidechain*): its message id
    when it was cut off at its output limit, else ``""`` (the newest reply says no); None for any other
    line (look further back)."""
    if b'"assistant"' not in line:
        return None
    try:
        entry = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(entry, dict) or entry.get("type") != "assistant":
        return None
    if (entry.get("isSidechain") is True) != sidechain:
        return None
    message = entry.get("message")
    if not isinstance(message, dict):
        return None
    ident = message.get("id")
    if message.get("model") == replies.SYNTHETIC_MODEL or not isinstance(ident, str):
        return ""  # Claude's own error line ends the follow-ups
    return ident[:200] if message.get("stop_reason") == "max_tokens" else ""  # a tool call in it is cut


def _line_ending_at(fd: int, end: int, read_from: int) -> bytes:
    """The whole line of the transcript that ends at byte *end* (its part from *read_from* on is known to
    lie inside it), read back to its start; empty when it is longer than the bounded read."""
    limit = max(0, end - replies.READ_LIMIT)
    at = read_from
    while at > limit:
        step = min(TAIL, at - limit)
        chunk = os.pread(fd, step, at - step)
        newline = chunk.rfind(b"\n")
        if newline != -1:
            at = at - step + newline + 1
            return os.pread(fd, end - at, at)
        at -= step
    return os.pread(fd, end, 0) if limit == 0 else b""


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
    if not budget_records.note_interrupted(caller.root, agent, reply):
        return False  # once per reply: a second Escape would open Claude's rewind menu
    return interrupt(caller, env, agent)


def interrupt(
    caller: Caller, env: t.Mapping[str, str], agent: str, claude: tuple[int, str] | None = None
) -> bool:
    """Escape into the fleet pane whose keys the agent's Claude reads; else (no fleet pane, or its
    terminal put back in line mode, where a key waits for Enter) SIGINT to the claude-run's Claude:
    *claude* (pid, start token) when given, else the Claude this hook runs under. False when neither
    was done."""
    from claude_shepherd.hooks import pane_typing
    from claude_shepherd.supervisor.session.identity import fleet_socket, start_token
    from claude_shepherd.supervisor.session.programs import run_tmux

    who = pane_typing.owner(env)
    if who is None:
        return False
    socket, pane = fleet_socket(env), env.get("TMUX_PANE", "")
    in_pane = caller.pane is not None and socket is not None and pane.startswith("%")
    if in_pane and pane_typing.reads_keys(str(socket), pane, agent, who) is not None:
        done = run_tmux(str(socket), ["send-keys", "-t", pane, "Escape"], os.environ)
        if done is not None and done.returncode == 0:
            return True
    if claude is not None:
        target: int | None = claude[0] if start_token(claude[0]) == claude[1] else None
    else:
        target = claude_of(who[0])
    if target is None:
        return False
    try:
        os.kill(target, signal.SIGINT)
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
