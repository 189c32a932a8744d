"""Sub-agents one at a time for an agent a budget holds.

A reply may ask for several sub-agents (Task/Agent) at once, or for one that runs in the background
(Claude Code 2.1.328 runs the main agent's sub-agents in the background unless ``run_in_background`` is
``false``, and so does an agent definition that says ``background: true``); each sends requests of its
own, in flight before any of their replies can be priced, and a request in flight cannot be called
back. So for an agent held to a budget the budget gate admits sub-agents one at a time: only in the
foreground (``run_in_background: false``, or background tasks off: ``CLAUDE_CODE_DISABLE_BACKGROUND_TASKS``,
which claude-run sets for an agent a budget holds when it starts Claude: in a terminal, Claude Code
2.1.328 runs every sub-agent in the background otherwise and does not offer ``run_in_background``) and a
definition that does not put it in the background, only the first sub-agent call of a reply (the others
are refused, so the model asks for them again once it has the first one's answer), and none asked for
by a sub-agent. Each call of the sub-agent is priced from its own transcript (:mod:`.metering`). The cap
then overshoots by one reply, sub-agents or not. Standard library only.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t

SUBAGENT_TOOLS = ("Task", "Agent")
TAIL = 1 << 20
"""Bytes of the transcript's end searched for the reply asking for the call."""
ONE_AT_A_TIME = (
    "BUDGET: one sub-agent at a time while a budget holds this agent (sub-agents running together spend "
    "past it before any reply is priced). This one did not run; ask for it again once the first has answered."
)
FOREGROUND = (
    "BUDGET: while a budget holds this agent, a sub-agent runs in the foreground, one at a time (in the "
    "background it would spend beside the next requests). Ask for it again with run_in_background: false; "
    "where that parameter is not offered, sub-agents run in the background here: do this part yourself."
)
BACKGROUND_OFF = "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS"
"""Claude Code's switch that runs every sub-agent in the foreground (the hooks inherit Claude's environment)."""
TRUE_WORDS = ("1", "true", "yes", "on")


def background_off(env: t.Mapping[str, str]) -> bool:
    """Does Claude run without background tasks (every sub-agent in the foreground)?"""
    return env.get(BACKGROUND_OFF, "").strip().lower() in TRUE_WORDS


DEFINED_BACKGROUND = (
    "BUDGET: while a budget holds this agent, a sub-agent runs in the foreground, and the definition of "
    "this one puts it in the background (background: true). Use a sub-agent type without it."
)
NESTED = (
    "BUDGET: while a budget holds this agent, a sub-agent starts no sub-agents of its own (they would run "
    "beside it). Do this part yourself."
)
DEFINITION_LIMIT = 16 * 1024
DEFINITIONS_LIMIT = 256
"""The most files and folders of one definitions folder read for a sub-agent's definition."""


def refusal(
    name: str,
    tool_input: t.Mapping[str, object],
    transcript: object,
    tool_use_id: object,
    *,
    from_agent: bool = False,
    definitions: t.Sequence[str] = (),
    foreground: bool = False,
) -> str | None:
    """Why this sub-agent call may not run now (the agent is held to a budget), or None. *definitions*:
    the folders Claude Code finds agent definitions in (``agents/`` of the project and the config);
    *foreground*: Claude runs no background tasks (:func:`background_off`)."""
    if name not in SUBAGENT_TOOLS:
        return None
    if from_agent:
        return NESTED
    if not foreground and tool_input.get("run_in_background") is not False:
        return FOREGROUND
    kind = tool_input.get("subagent_type")
    if isinstance(kind, str) and any(_in_background(folder, kind) for folder in definitions):
        return DEFINED_BACKGROUND
    first = first_subagent_call(transcript, tool_use_id)
    return ONE_AT_A_TIME if first is not None and first != tool_use_id else None


def _in_background(folder: str, kind: str) -> bool:
    """Does a definition of sub-agent *kind* in *folder* say ``background: true`` in its front matter?

    Claude Code knows a definition by the ``name:`` in its front matter, whatever its file is called
    (``helper.md`` may define ``name: sneaky``), and finds them in sub-folders too: every definition of
    the folder is read, each one's first :data:`DEFINITION_LIMIT` bytes; past :data:`DEFINITIONS_LIMIT`
    files and folders the call is refused."""
    if not kind:
        return False
    read = 0
    for base, folders, files in os.walk(folder, followlinks=True):
        folders.sort()
        read += 1  # a folder counts too: linked folders may loop
        for name in sorted(files):
            read += name.endswith(".md")
            if read > DEFINITIONS_LIMIT:
                return True  # one may hide among so many: refused, as if it said so
            head = _front_matter(os.path.join(base, name)) if name.endswith(".md") else {}
            named = head.get("name", name[: -len(".md")]).strip("'\"")
            if named == kind and head.get("background", "").strip("'\"").lower() in TRUE_WORDS:
                return True
    return False


def _front_matter(path: str) -> dict[str, str]:
    """The ``key: value`` lines of the front matter of the definition at *path* (empty when none)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return {}
    try:
        text = os.read(fd, DEFINITION_LIMIT).decode("utf-8", "replace")
    except OSError:
        return {}
    finally:
        os.close(fd)
    if not text.startswith("---"):
        return {}
    head: dict[str, str] = {}
    for line in text[3:].split("\n---", 1)[0].splitlines():
        key, colon, value = line.partition(":")
        if colon and key.strip() and key.strip() not in head:
            head[key.strip()] = value.strip()
    return head


def first_subagent_call(transcript: object, tool_use_id: object) -> str | None:
    """The id of the first sub-agent call of the reply that asked for *tool_use_id* (Claude Code writes a
    reply as one line per block, each naming the message's id), or None when it cannot be told.

    The transcript's last :data:`TAIL` bytes are searched first; a reply whose calls carry long input
    may begin before them, so a call not found there, or a reply found in part, is looked for in the
    newest :data:`~claude_shepherd.supervisor.session.replies.READ_LIMIT` bytes."""
    if not isinstance(transcript, str) or not os.path.isabs(transcript) or not isinstance(tool_use_id, str):
        return None
    found = _first_call(transcript, tool_use_id, TAIL)
    if found == _PARTLY:
        from claude_shepherd.supervisor.session.replies import READ_LIMIT

        found = _first_call(transcript, tool_use_id, READ_LIMIT)
    return None if found == _PARTLY else found


_PARTLY = "\0"
"""The reply was found, but it may begin before the part read."""


def _first_call(transcript: str, tool_use_id: str, span: int) -> str | None:
    try:
        fd = os.open(transcript, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - span)
        tail = os.pread(fd, size - start, start)
    except OSError:
        return None
    finally:
        os.close(fd)
    blocks: list[tuple[str, str, str]] = []  # (message id, tool_use id, tool name), in order
    for line in tail.split(b"\n"):
        if b'"tool_use"' not in line:
            continue
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):  # a line nested too deep for the parser says nothing here
            continue
        message = entry.get("message") if isinstance(entry, dict) else None
        if not isinstance(message, dict) or entry.get("isSidechain") is True:
            continue
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                blocks.append((str(message.get("id")), str(block.get("id")), str(block.get("name"))))
    asked = next((m for m, i, _ in blocks if i == tool_use_id), None)
    if asked is None:
        return _PARTLY if start > 0 else None  # the call may lie before the part read
    if start > 0 and blocks[0][0] == asked:
        return _PARTLY  # the reply's first block read is the first read at all: more of it may lie before
    return next((i for m, i, n in blocks if m == asked and n in SUBAGENT_TOOLS), None)
