"""The overflow gate: at the context threshold, nothing but dehydrating (docs/DESIGN.md S4, R4).

Applied to the state under its lock. In order:

1. a single ``session`` command always passes (extra commands configured for
   the session gate do not: an overflowing agent may only dehydrate);
2. with a restart pending (``killRequested``) every other call is denied: its
   Claude is being ended, and nothing more of that conversation may run;
3. ``Skill(skill="session", args="dehydrate …")`` starts dehydrating (of a live
   session) and passes; while dehydrating, tools pass for a bounded number of
   calls — an agent must not invoke dehydrate and then work on forever
   (docs/DESIGN.md appendix A);
4. at or above the threshold: ``overflowed=true`` (recording which
   conversation overflowed) and deny, saying how to dehydrate; an unreadable
   newest reading is denied here too (unknown is never the previous reading),
   without the sticky flag: the next readable response judges again;
5. a conversation that overflowed stays blocked even if its usage drops (a
   compaction): only a new conversation's activation lifts it;
6. otherwise pass.

The dehydrate budget belongs to the conversation: neither a new dehydrate, a
re-activation inside it, nor a deactivate + continue refills it.

Standard library only.
"""

from __future__ import annotations

from claude_shepherd.hooks.config import Config
from claude_shepherd.hooks.context import Usage
from claude_shepherd.hooks.tool_call import ToolCall
from claude_shepherd.supervisor.session.fields import LIVE_LIFECYCLES, F, Lifecycle
from claude_shepherd.supervisor.session.restart_transitions import (
    begin_dehydrate,
    count_dehydrate_call,
    mark_overflowed,
    overflowed_in,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

    from claude_shepherd.supervisor.session.state import State

TAG = "§CMD_REANCHOR_AFTER_RESTART"
DEHYDRATE_SKILLS = ("session", "dehydrate")  # ours, and the bash era's separate skill


def starts_dehydrate(call: ToolCall) -> bool:
    """``Skill(session, "dehydrate …")`` (or the bash era's ``Skill(dehydrate)``)."""
    skill_call = call.skill_call
    if skill_call is None:
        return False
    skill, args = skill_call
    if skill == "dehydrate":
        return True
    words = args.split(maxsplit=1)  # the first word only: args may be megabytes
    return skill == "session" and bool(words) and words[0] == "dehydrate"


def percent(fraction: float) -> str:
    return f"{fraction * 100:.0f}%"


def _handover_command(dir_arg: str) -> str:
    """Unindented: an indented ``EOF`` would not end the here-document, and the Bash whitelist would refuse it."""
    return (
        f"session dehydrate {dir_arg} <<'EOF'\n"
        "# Handover\n"
        "## Doing / phase / decisions / next steps\n"
        "...\n"
        "## Required files\n"
        "- path/to/each/file/to/reload\n"
        "EOF"
    )


def overflow_reason(usage: Usage | None, config: Config, state: t.Mapping[str, object], dir_arg: str) -> str:
    skill = state.get(F.SKILL) or "current"
    phase = state.get(F.CURRENT_PHASE) or "its current phase"
    level = (
        f"context is at {percent(usage.fraction)}"
        if usage is not None and usage.fraction is not None and usage.fraction >= config.threshold
        else "this conversation reached the threshold earlier"
    )
    return (
        f"{TAG}: Context overflow — {level} "
        f"(threshold {percent(config.threshold)}). You MUST dehydrate NOW; no other tool is allowed.\n"
        "Write your handover (what you were doing, the phase, decisions, next steps and a "
        "'## Required files' list) and pipe it to the session command:\n"
        f"{_handover_command(dir_arg)}\n"
        "This saves DEHYDRATED_CONTEXT.md and restarts Claude with a fresh context that continues "
        f"the {skill} session at {phase}.\n"
        'To gather it with tools first, invoke Skill(skill: "session", args: "dehydrate"): you then '
        f"get {config.dehydrate_budget} more tool calls."
    )


def budget_reason(config: Config, dir_arg: str) -> str:
    return (
        f"{TAG}: Dehydration has used its {config.dehydrate_budget} tool calls. "
        "Finish it now; no other tool is allowed:\n"
        f"{_handover_command(dir_arg)}\n"
        "This saves DEHYDRATED_CONTEXT.md and restarts Claude with a fresh context."
    )


def unreadable_reason(config: Config, dir_arg: str) -> str:
    return (
        f"{TAG}: Context usage unknown — the transcript line of the response asking for this call "
        "cannot be read (nested too deeply, cut short or with bad numbers), so the call is denied as if "
        f"the context had reached the threshold ({percent(config.threshold)}); an older reading does not "
        "stand in for it. Retry it with plainer input. If the context is near full, dehydrate instead:\n"
        f"{_handover_command(dir_arg)}"
    )


RESTART_PENDING_REASON = (
    f"{TAG}: A restart of this session is pending. Stop working: the supervisor ends this Claude and "
    "starts a fresh one that continues the session. If nothing happens, exit Claude (claude-run picks the "
    "restart up). Only the session command is allowed."
)


def overflow_gate(
    state: State, call: ToolCall, usage: Usage | None, config: Config, dir_arg: str
) -> str | None:
    """Apply the gate to *state* (mutating it); the deny reason, or None to pass."""
    if call.is_session_command:
        return None
    if state.get(F.KILL_REQUESTED) is True:
        return RESTART_PENDING_REASON  # the conversation is being ended: nothing more of it may run
    if starts_dehydrate(call):
        if state.get(F.LIFECYCLE, Lifecycle.ACTIVE) in LIVE_LIFECYCLES:
            begin_dehydrate(state)  # not for a completed session: that would reopen the gate
        return None
    if state.get(F.LIFECYCLE) == Lifecycle.DEHYDRATING:
        if count_dehydrate_call(state, config.dehydrate_budget):
            return None
        return budget_reason(config, dir_arg)
    conversation = call.conversation or None
    fraction = None if usage is None else usage.fraction
    if usage is not None and fraction is None:
        return unreadable_reason(config, dir_arg)
    if fraction is not None and fraction >= config.threshold:
        mark_overflowed(state, conversation)
        return overflow_reason(usage, config, state, dir_arg)
    if overflowed_in(state, conversation):
        return overflow_reason(usage, config, state, dir_arg)
    return None


NO_RESTART = "--no-restart"
ENDS_CLAUDE = frozenset({"restart", "dehydrate"})
"""``session`` commands after which this Claude must not run on: the watchdog ends it."""


def ends_claude(call: ToolCall) -> str | None:
    """The ``session`` command (restart, dehydrate) of *call* that ends this Claude, else None.

    Only the exact ``--no-restart`` keeps Claude running: an abbreviation argparse would accept is treated
    as a restart, which costs nothing but a foreground run.
    """
    invocation = call.invocation
    if not call.is_session_command or invocation is None or NO_RESTART in invocation.args:
        return None
    command = next((arg for arg in invocation.args if not arg.startswith("-")), None)
    return command if command in ENDS_CLAUDE else None


def _timeout_ms(value: object) -> float | None:
    """A Bash ``timeout`` in milliseconds; None when it is no plain number (a bool, nan, a sign, an exponent)."""
    from claude_shepherd.supervisor.session.numbers import parse_decimal

    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    return parse_decimal(value if isinstance(value, str) else str(value), maximum=1e15)


def restart_returns_reason(call: ToolCall, env: t.Mapping[str, str]) -> str | None:
    """Deny a restart the Bash tool would return from before the watchdog ends Claude.

    In the background (``run_in_background``) Claude Code answers at once, and a ``timeout`` shorter than
    the restart's wait kills it after ``killRequested`` is written but before the watchdog is signalled:
    either way the model reads a result and sends one more request.
    """
    command = ends_claude(call)
    if command is None:
        return None
    background = call.input.get("run_in_background")
    timeout = call.input.get("timeout")
    if (background is None or background is False) and timeout is None:
        return None
    from claude_shepherd.supervisor.session.restart_request import restart_wait

    need = restart_wait(env) * 1000
    given = None if timeout is None else _timeout_ms(timeout)
    if (background is None or background is False) and given is not None and given >= need:
        return None
    return (
        f"{TAG}: `session {command}` ends this Claude and must not return to you. Run it again in the "
        f"foreground (no run_in_background) and without a timeout (or one of at least {need:.0f} ms)."
    )
