"""The logging heartbeat: an agent that works without logging is warned, then stopped.

Only for sessions whose skill declared a ``logTemplate``. One counter per
transcript (``toolCallsByTranscript``, keyed by the transcript's basename), so
sub-agents do not inflate the main agent's count (docs/DESIGN.md §7.10).
``loading=true`` (bootstrap, granted once per conversation, until the first
``session phase``) passes unwarned but only for ``LOADING_BLOCK_AFTER`` calls,
so an agent cannot stay in bootstrap to escape the heartbeat (§7.13).
Dehydrating passes uncounted only in a conversation that overflowed, where the
overflow gate's budget (once per conversation) bounds it; an early dehydrate
is counted like any work. Only a ``session
log`` that really appended an entry resets the counters, and it does so itself
(:func:`claude_shepherd.supervisor.session.work_transitions.record_log_entry`) — the hook never resets on
seeing the command, which may fail, print its help or name another session.
``session`` commands and reading standards (where a skill keeps its log template) pass; Task/Agent
calls are not counted (their sub-agent's calls are, in its own transcript), nor is
a skill's inline shell command (:mod:`claude_shepherd.hooks.skill_shell`), but
once the counter has reached the block threshold they are denied like
everything else. Every other call counts, repeated Edits of one file included.
The thresholds are clamped: a skill may relax them, never switch them off.
Applied under the state lock. Standard library only.
"""

from __future__ import annotations

import os

from claude_shepherd.hooks.read_whitelist import is_standard, readable_template, resolve
from claude_shepherd.hooks.tool_call import READ, ToolCall
from claude_shepherd.supervisor.session.fields import (
    DEFAULT_BLOCK_AFTER,
    DEFAULT_WARN_AFTER,
    LOADING_BLOCK_AFTER,
    MAX_BLOCK_AFTER,
    F,
    Lifecycle,
)
from claude_shepherd.supervisor.session.paths import log_file_name
from claude_shepherd.supervisor.session.restart_transitions import overflowed_in
from claude_shepherd.supervisor.session.work_transitions import count_tool_call, tool_calls

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

    from claude_shepherd.supervisor.session.state import State

TAG = "§CMD_LOG_BETWEEN_TOOL_USES"


class Verdict:
    """What the state-changing rules decided."""

    __slots__ = ("deny", "warn")

    def __init__(self, deny: str | None = None, warn: str | None = None) -> None:
        self.deny = deny  # block with this reason
        self.warn = warn  # let through, showing this to the model


PASS = Verdict()


def threshold(state: t.Mapping[str, object], field: str, default: int) -> int:
    """A configured threshold within 1..MAX_BLOCK_AFTER; a missing, malformed or 0 value means the default."""
    value = state.get(field)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return default
    return min(value, MAX_BLOCK_AFTER)


def _uncounted_read(call: ToolCall, template: str, cwd: str, env: t.Mapping[str, str]) -> bool:
    """Reading the standards under ``~/.claude``, or exactly the session's log template when it is safe
    to read: the deny tells the agent to read it, so the gate must let it."""
    home = env.get("HOME") or os.path.expanduser("~")
    real = resolve(call.file_path or "", cwd, home)
    return real is not None and (is_standard(real, env) or real == readable_template(template, cwd, env))


def _loading(state: State, call: ToolCall, dir_arg: str) -> Verdict:
    """Bootstrap passes unwarned, but only so far: an agent that never enters a phase is stopped."""
    counted = count_tool_call(state, call.transcript_key) if call.counted else None
    count = tool_calls(state, call.transcript_key) if counted is None else counted
    if count < LOADING_BLOCK_AFTER:
        return PASS
    return Verdict(
        deny=(
            f"{TAG}: {count} tool calls while loading the skill. Tool DENIED.\n"
            "Loading is over: enter your first phase before any more tool calls:\n"
            f'  session phase {dir_arg} "<first phase of your skill>"'
        )
    )


def heartbeat(state: State, call: ToolCall, *, cwd: str, env: t.Mapping[str, str], dir_arg: str) -> Verdict:
    """Count *call* against the caller's logging discipline (mutating *state*)."""
    template = state.get(F.LOG_TEMPLATE)
    if not isinstance(template, str) or not template.strip():
        return PASS
    if state.get(F.LIFECYCLE) == Lifecycle.DEHYDRATING and overflowed_in(state, call.conversation or None):
        return PASS  # the overflow gate's dehydrate budget bounds these calls, once per conversation
    key = call.transcript_key
    if call.is_session_command:
        return PASS
    if call.name == READ and _uncounted_read(call, template, cwd, env):
        return PASS
    if state.get(F.LOADING) is True:
        return _loading(state, call, dir_arg)
    counted = count_tool_call(state, key) if call.counted else None
    count = tool_calls(state, key) if counted is None else counted
    block = threshold(state, F.BLOCK_AFTER, DEFAULT_BLOCK_AFTER)
    warn = min(threshold(state, F.WARN_AFTER, DEFAULT_WARN_AFTER), block)
    if count >= block:
        return Verdict(
            deny=(
                f"{TAG}: {count} tool calls without logging. Tool DENIED.\n"
                + _how_to_log(state, template, cwd, env, dir_arg)
                + "\nUntil you log, every other tool call is denied."
            )
        )
    if counted is not None and count >= warn:
        return Verdict(
            warn=(
                f"{TAG}: {count}/{block} tool calls without logging. Log soon.\n"
                + _how_to_log(state, template, cwd, env, dir_arg)
            )
        )
    return PASS


def _how_to_log(state: State, template: str, cwd: str, env: t.Mapping[str, str], dir_arg: str) -> str:
    """Read the template (only when the gates let the agent read it, else say so), then the exact command:
    a quoted here-document with nothing indented, as the Bash whitelist takes it."""
    readable = readable_template(template, cwd, env)
    if readable is not None:
        first = f"You MUST Read the log template first (reading it is allowed): {readable}\n"
        entry = "<what you did, what you found, what comes next — in the template's format>"
    else:
        first = (
            f"The declared log template {template} cannot be read now (it is missing, or no template file "
            "that may be read safely): write the entry as plain notes.\n"
        )
        entry = "<what you did, what you found, what comes next>"
    log_file = f"{dir_arg.rstrip('/')}/{log_file_name(state)}"
    return (
        f"{first}Then log your progress with this command, alone in one Bash call "
        f"(it appends to {log_file}):\n"
        f"session log {dir_arg} <<'EOF'\n{entry}\nEOF"
    )
