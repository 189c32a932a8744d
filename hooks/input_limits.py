"""How much of its input a hook reads, and how long a value may be before it cannot be real.

A hook's answer time must not grow with what the agent sends: a 5 MB ``cwd``
or file path cost seconds in path normalisation and in walking up its parents,
and a hook that runs past its timeout fails open. So stdin is read up to
:data:`MAX_INPUT_BYTES` (the rest is drained unread, so Claude Code never
writes into a closed pipe), and at PreToolUse a path longer than the kernel
would take (``PATH_MAX``) or a tool name longer than any tool's denies the call
with the reason — never allow: it is not an input Claude Code makes for a real
tool call. The other events read an over-long ``cwd`` as none. Standard
library only.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

MAX_INPUT_BYTES = 8 * 1024 * 1024
"""A tool call's input is what a model wrote in one response (at most about 1 MB); a prompt may be
longer, but not this long."""
MAX_PATH = 4096
"""``PATH_MAX``: the kernel refuses a longer path, so a longer ``cwd`` or file path names nothing."""
MAX_TOOL_NAME = 256
"""Tool names are short (an MCP tool's is ``mcp__SERVER__TOOL``)."""
ENVELOPE_PATHS = ("cwd", "transcript_path")
TOOL_INPUT_PATHS = ("file_path", "notebook_path", "path")


def too_long(data: t.Mapping[str, object]) -> str | None:
    """Why a PreToolUse input is refused for its size, or None when every value has a real size."""
    for key in ENVELOPE_PATHS:
        value = data.get(key)
        if isinstance(value, str) and len(value) > MAX_PATH:
            return _reason(key, len(value), MAX_PATH, "any path")
    name = data.get("tool_name")
    if isinstance(name, str) and len(name) > MAX_TOOL_NAME:
        return _reason("tool_name", len(name), MAX_TOOL_NAME, "any tool's name")
    tool_input = data.get("tool_input")
    if isinstance(tool_input, dict):
        for key in TOOL_INPUT_PATHS:
            value = tool_input.get(key)
            if isinstance(value, str) and len(value) > MAX_PATH:
                return _reason(f"tool_input.{key}", len(value), MAX_PATH, "any path")
    return None


def _reason(field: str, length: int, limit: int, what: str) -> str:
    return (
        f"claude-hook pre-tool-use refused this tool call: its {field} is {length:,} characters long, "
        f"longer than {what} can be ({limit:,}). Use a real path (cd back into the project if the "
        "working directory is that deep) and try again."
    )


def too_big() -> str:
    """The problem with an input over :data:`MAX_INPUT_BYTES`."""
    return (
        f"the hook input on stdin is over {MAX_INPUT_BYTES // (1024 * 1024)} MiB, more than any tool call "
        "needs; split the work into smaller tool calls"
    )
