"""Claude Code's hook protocol: JSON in on stdin, JSON (or nothing) out on stdout.

What Claude Code does with our output (docs/CLAUDE_CODE.md §6):
a crash, a timeout, bad JSON or an exit status other than 2 all *fail open* —
the tool runs anyway. Only a ``deny`` decision blocks. An explicit ``allow``
is worse than nothing: it skips the user's own permission prompt. So:

* allow = exit 0 with an empty stdout;
* deny = the ``hookSpecificOutput`` deny object, reason with real newlines;
* a note to the model = ``additionalContext`` without a decision;
* never a traceback: the callers turn every failure into one of the above.

Standard library only (this runs on every tool call).
"""

from __future__ import annotations

import json
import os
import sys

from claude_shepherd.hooks.input_limits import MAX_INPUT_BYTES, MAX_PATH, too_big

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

HOOK_EVENTS = (
    "pre-tool-use",
    "user-prompt-submit",
    "session-start",
    "status-line",
    "stop",
    "notification",
    "stop-failure",
    "pre-skill-shell-command",
    "post-tool-batch",
    "pre-compact",
)
"""The events ``claude-hook EVENT`` answers (installed by ``claude-hook install``)."""

PRE_TOOL_USE = "PreToolUse"
PRE_SKILL_SHELL_COMMAND = "PreSkillShellCommand"
USER_PROMPT_SUBMIT = "UserPromptSubmit"
SESSION_START = "SessionStart"

MAX_REASON_LINE = 400


class HookInput:
    """The stdin object, read defensively: every accessor tolerates any shape."""

    __slots__ = ("data", "problem")

    def __init__(self, data: dict[str, t.Any], problem: str | None = None) -> None:
        self.data = data
        self.problem = problem  # why the input could not be read, if it could not

    def text(self, key: str) -> str:
        value = self.data.get(key)
        return value if isinstance(value, str) else ""

    def obj(self, key: str) -> dict[str, object]:
        value = self.data.get(key)
        return value if isinstance(value, dict) else {}

    @property
    def cwd(self) -> str:
        """The agent's working directory; ours when the input has no usable one."""
        cwd = self.text("cwd")
        if cwd and len(cwd) <= MAX_PATH and "\0" not in cwd and os.path.isabs(cwd):
            return cwd
        try:
            return os.getcwd()
        except OSError:
            return "/"


def parse_input(raw: bytes) -> HookInput:
    """Decode the hook input; a non-object, undecodable or oversized input is recorded, not raised."""
    if len(raw) > MAX_INPUT_BYTES:
        return HookInput({}, too_big())
    text = raw.decode("utf-8", errors="replace")
    if not text.strip():
        return HookInput({}, "the hook input on stdin is empty")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        return HookInput({}, f"the hook input on stdin is not valid JSON ({one_line(str(exc), 120)})")
    if not isinstance(data, dict):
        return HookInput({}, f"the hook input on stdin is a JSON {type(data).__name__}, not an object")
    return HookInput(data)


def read_stdin(stream: t.BinaryIO | None = None) -> bytes:
    """Stdin up to one byte past :data:`MAX_INPUT_BYTES` (the rest is read and dropped, so the
    writer never meets a closed pipe); nothing when it is a terminal (someone ran the hook by hand)."""
    stream = stream if stream is not None else sys.stdin.buffer
    try:
        if stream.isatty():
            return b""
        data = stream.read(MAX_INPUT_BYTES + 1)
        if len(data) > MAX_INPUT_BYTES:
            while stream.read(1024 * 1024):
                pass
        return data
    except (OSError, ValueError, AttributeError):
        return b""


def one_line(text: str, limit: int = MAX_REASON_LINE) -> str:
    """Collapse whitespace so an error message stays one line, and bound its length."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def deny(reason: str, event: str = PRE_TOOL_USE) -> str:
    """The output that blocks a tool call (*event* PreToolUse) or a skill's shell command
    (PreSkillShellCommand); the model sees *reason*. ``hookEventName`` is the event asked about:
    each event's output schema names its own."""
    return json.dumps(
        {
            "hookSpecificOutput": {
                "hookEventName": event,
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        },
        ensure_ascii=False,
    )


def deny_and_stop(reason: str, event: str = PRE_TOOL_USE) -> str:
    """The output that blocks the call *and* ends the turn (``continue: false``): the
    model is not asked again, so nothing more is sent (a deny alone is no pause: the model asks
    again after every denial). *reason* is shown to the person as the stop reason too."""
    return json.dumps(
        {"continue": False, "stopReason": reason, **json.loads(deny(reason, event))}, ensure_ascii=False
    )


def stop_after(reason: str, answer: str = "") -> str:
    """*answer* (a PreToolUse output; "" lets the call run) that also ends the turn (``continue: false``):
    the model is not asked again after this call, whatever it was told."""
    decided = json.loads(answer) if answer else {}
    return json.dumps({**decided, "continue": False, "stopReason": reason}, ensure_ascii=False)


def block_prompt(reason: str) -> str:
    """The UserPromptSubmit output that refuses the prompt: nothing is sent; interactively the prompt
    goes back into the input box."""
    return json.dumps({"decision": "block", "reason": reason}, ensure_ascii=False)


def add_context(event: str, text: str) -> str:
    """Output that lets the call (or prompt) through and shows *text* to the model."""
    return json.dumps(
        {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}},
        ensure_ascii=False,
    )


def note(text: str) -> None:
    """One line on stderr (Claude Code keeps it in the transcript, not in the model's view)."""
    try:
        sys.stderr.write(one_line(text) + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def emit(text: str, stream: t.BinaryIO | None = None) -> None:
    """Write one output document as UTF-8 whatever the locale; a closed pipe is ignored."""
    if not text:
        return
    stream = stream if stream is not None else sys.stdout.buffer
    try:
        stream.write((text if text.endswith("\n") else text + "\n").encode("utf-8", "replace"))
        stream.flush()
    except (OSError, ValueError):
        pass
