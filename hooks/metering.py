"""The hooks measure what the status line has not: the replies Claude wrote since the last hook.

Claude's status line is redrawn at its own pace, so requests that follow each other faster (quick
tool calls) outrun its figure; in ``claude -p`` it never runs at all. So the hooks of an agent held to
a budget price the replies the transcript gained since they last read it (each at Claude's list
price, :mod:`claude_shepherd.supervisor.session.prices`) into the spend ledger before the budget gate
compares: PreToolUse the reply asking for this call, Stop the reply that ended the turn (the last one
of a ``-p`` run, which asks for no tool). A sub-agent's call is priced from the sub-agent's own
transcript: while the main agent waits for it, the status line is not redrawn, and its replies are in
no other file the hooks read. A sub-agent's last reply asks for no tool: the main agent's next call
prices what every sub-agent of the conversation wrote lately (:func:`meter_subagents`). Claude writes the transcript a few milliseconds late, so the
hook first waits for the reply it is called for (:data:`CALL_WAIT` at most, and only while the file
is being written). Standard library only.
"""

from __future__ import annotations

import os
import time

from claude_shepherd.supervisor.session import spend, spend_writes

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    from pathlib import Path

CALL_WAIT = 1.0
"""Seconds to wait for the reply the hook is called for (seen landing 25 ms late when idle)."""
POLL = 0.005
LIVE_WRITE_SECONDS = 5.0
"""A transcript written this recently is still being written: its reply may be on its way."""
NEEDLE_SPAN = 1024 * 1024
"""How far back from the end a reply is looked for while waiting (a long tool input makes a long line)."""
ANY_REPLY = b'"type":"assistant"'
SUBAGENTS_RECENT = 3600.0
"""Seconds since a sub-agent's transcript was written within which the main agent's calls price it."""


def tool_use_needle(tool_use_id: object) -> bytes | None:
    """How the reply asking for tool call *tool_use_id* names it in the transcript, or None."""
    if not isinstance(tool_use_id, str) or not 0 < len(tool_use_id) <= 200:
        return None
    if not all(c.isalnum() or c in "_-" for c in tool_use_id):
        return None
    return b'"' + tool_use_id.encode() + b'"'


def _await(transcript: str, since: int, needle: bytes, wait: float) -> None:
    """Return once *needle* is in the transcript after *since*, the file is no longer being written,
    or *wait* seconds passed."""
    from claude_shepherd.supervisor.session import replies

    deadline = time.monotonic() + wait
    while not replies.has_since(transcript, since, needle, NEEDLE_SPAN):
        try:
            if time.time() - os.stat(transcript).st_mtime > LIVE_WRITE_SECONDS:
                return
        except OSError:
            return
        if time.monotonic() >= deadline:
            return
        time.sleep(POLL)


def meter(
    root: Path,
    agent: str,
    conversation: object,
    transcript: object,
    needle: bytes | None = ANY_REPLY,
    wait: float = CALL_WAIT,
    subagent: str | None = None,
) -> bool:
    """Price the replies of *conversation* its *transcript* gained since *agent*'s ledger read it
    (those of its sub-agent *subagent*, from that one's own transcript), after waiting for the one
    holding *needle*; True when the ledger changed."""
    if not isinstance(conversation, str) or not conversation or not isinstance(transcript, str):
        return False
    if not os.path.isabs(transcript) or "\0" in transcript:
        return False
    main = transcript
    if subagent is not None:
        from claude_shepherd.supervisor.session.replies import subagent_transcript

        found = subagent_transcript(transcript, subagent)
        if found is None:
            return False
        transcript = found
    if needle is not None and wait > 0:
        _await(transcript, spend_writes.offset_of(root, agent, conversation, subagent) or 0, needle, wait)
    priced = spend_writes.price_replies(
        root, agent, conversation, transcript, subagent=subagent, main_transcript=main
    )
    if subagent is None:
        return meter_subagents(root, agent, conversation, main) or priced is not None
    return priced is not None


def meter_subagents(root: Path, agent: str, conversation: str, transcript: str) -> bool:
    """Price what the sub-agents of *conversation* wrote to their own transcripts since the ledger read
    them (the last reply of each asks for no tool, so no call of its own priced it); True when the
    ledger changed. Only transcripts written lately: an older one was read when it ended."""
    from claude_shepherd.supervisor.session.replies import subagent_transcripts

    changed = False
    now = time.time()
    for ident, path, mtime in subagent_transcripts(transcript)[: spend.KEEP_SUBAGENTS]:
        if now - mtime > SUBAGENTS_RECENT:
            continue
        if spend_writes.price_replies(
            root, agent, conversation, path, subagent=ident, main_transcript=transcript
        ):
            changed = True
    return changed
