"""``claude-hook pre-tool-use``: every PreToolUse rule in one process, in a fixed order.

0. the budget gate: an agent at its budget is paused (every call but a ``session`` command is
   denied, and every call ends the turn: :mod:`claude_shepherd.hooks.budget_gate`);
   protected files: no Write/Edit of the state, the index, another session,
   our code, the shell snapshots or the settings that hold our hooks;
   a ``session restart``/``dehydrate`` the Bash tool would return from (background, short timeout);
1. the session gate (read-only),
2. the overflow gate and 3. the heartbeat (not for the calls the session gate lets through while the
   session is not live: its whitelist, which its deny tells the agent to use), both applied to the session's state
   in *one* locked read-modify-write, so a call denied by an earlier rule is
   never counted or written by a later one (the bash hooks ran in parallel and
   raced each other, docs/DESIGN.md appendix A R2).

Output: nothing to allow, a deny, or a heartbeat warning as additional
context. Whatever goes wrong, the answer is a deny naming the failure — except
for a ``session`` command, so a broken state never locks the agent out of the
one command that can repair it. A skill's inline shell command is judged here
too, as a Bash call (:mod:`claude_shepherd.hooks.skill_shell`), answered in
its own event's words. Standard library only.
"""

from __future__ import annotations

import os

from claude_shepherd.hooks import budget_gate, deadline, turn_events
from claude_shepherd.hooks import config as hook_config
from claude_shepherd.hooks.context import newest, stored_usage, transcript_usage
from claude_shepherd.hooks.gate import is_live, session_gate
from claude_shepherd.hooks.heartbeat import PASS, Verdict, heartbeat
from claude_shepherd.hooks.input_limits import too_long
from claude_shepherd.hooks.locate import Caller, locate, session_arg
from claude_shepherd.hooks.overflow import overflow_gate, restart_returns_reason, starts_dehydrate
from claude_shepherd.hooks.protected_paths import protected_reason
from claude_shepherd.hooks.protocol import (
    PRE_TOOL_USE,
    HookInput,
    add_context,
    deny,
    deny_and_stop,
    one_line,
    parse_input,
    stop_after,
)
from claude_shepherd.hooks.tool_call import ToolCall, classify
from claude_shepherd.supervisor import pane_notify, tmux_names
from claude_shepherd.supervisor.session.fields import F
from claude_shepherd.supervisor.session.restart_transitions import mark_overflowed
from claude_shepherd.supervisor.session.store import NoStateError, update_state

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

    from claude_shepherd.supervisor.session.state import State

LOCK_TIMEOUT = 3.0  # well inside the hook timeout, so we answer instead of being killed (fail-open)


def failure_reason(problem: str, event: str = PRE_TOOL_USE) -> str:
    hook, what = (
        ("pre-tool-use", "this tool call")
        if event == PRE_TOOL_USE
        else ("pre-skill-shell-command", "this skill's shell command")
    )
    return one_line(
        f"claude-hook {hook} could not check {what}: {problem}. It is blocked so that a "
        "broken hook cannot let everything through; a single `session` command still passes "
        "(start with `session find`)."
    )


SKILL_TOOL = "Skill"


def subagents_held(caller: Caller, env: t.Mapping[str, str], call: ToolCall, cwd: str) -> str | None:
    """For an agent a budget holds: a sub-agent call that may not run now (:mod:`.subagent_admission`);
    like the budget gate, a rule that fails refuses nothing. A sub-agent, or a skill (which may run in
    one), that runs is watched for its own follow-ups of a cut-off reply (:mod:`.subagent_watch`)."""
    from claude_shepherd.hooks import subagent_admission

    if call.name not in subagent_admission.SUBAGENT_TOOLS and call.name != SKILL_TOOL:
        return None
    try:
        if not budget_gate.holds(caller, env):
            return None
        if call.name == SKILL_TOOL:  # a skill may run in a sub-agent of its own (context: fork): watched
            from claude_shepherd.hooks import subagent_watch

            subagent_watch.start(caller, env, call, cwd)
            return None
        home = env.get("HOME") or os.path.expanduser("~")
        configs = {env.get("CLAUDE_CONFIG_DIR", "").strip() or os.path.join(home, ".claude")}
        projects = {env.get("CLAUDE_PROJECT_DIR", "").strip() or cwd, cwd}
        folders = [os.path.join(c, "agents") for c in configs] + [
            os.path.join(p, ".claude", "agents") for p in projects if p
        ]
        refused = subagent_admission.refusal(
            call.name, call.input, call.transcript_path, call.tool_use_id,
            from_agent=call.from_agent, definitions=folders,
            foreground=subagent_admission.background_off(env),
        )  # fmt: skip
        if refused is None:  # it runs: its own follow-ups of a cut-off reply are watched
            from claude_shepherd.hooks import subagent_watch

            subagent_watch.start(caller, env, call, cwd)
        return refused
    except Exception:
        return None


def budget_stop(caller: Caller, env: t.Mapping[str, str], call: ToolCall) -> str | None:
    """The budget gate's pause, if the agent is at a budget (counting the reply that asks for *call*,
    a sub-agent's from its own transcript); a gate that fails pauses nobody: no cost it could not read
    stops an agent."""
    try:
        return budget_gate.check(
            caller,
            env,
            transcript=call.transcript_path,
            conversation=call.conversation,
            call=call.tool_use_id,
            subagent=call.agent_id or None,
        )
    except Exception:
        return None


def decide(
    call: ToolCall,
    cwd: str,
    config: hook_config.Config,
    env: t.Mapping[str, str],
    event: str = PRE_TOOL_USE,
) -> str:
    caller = locate(cwd, env)
    paused = budget_stop(caller, env, call)
    if paused is None:
        admitted = subagents_held(caller, env, call, cwd)
        if admitted is not None:
            return deny(admitted, event)
    if paused is not None and not call.is_session_command:
        return deny_and_stop(paused, event)
    # A paused agent's lone `session` command runs (it may be what saves its work), and ends the turn:
    # a model that asks only for `session` calls gets no more requests than one that asks for anything.
    answer = _decide(call, caller, cwd, config, env, event)
    if paused is None:
        return answer
    return stop_after(paused, answer)


def _decide(
    call: ToolCall,
    caller: Caller,
    cwd: str,
    config: hook_config.Config,
    env: t.Mapping[str, str],
    event: str = PRE_TOOL_USE,
) -> str:
    reason = (
        protected_reason(call, caller, cwd, env)
        or restart_returns_reason(call, env)
        or session_gate(call, caller, config, cwd, env)
    )
    if reason is not None:
        return deny(reason, event)
    found = caller.found
    if found is None:
        return ""
    dir_arg = session_arg(found.session_dir, cwd)
    # What the session gate let through for a session that is not live is its whitelist (no work), which
    # its deny tells the agent to use: the heartbeat must not count it, nor refuse it.
    gated = config.session_required and not is_live(caller)
    seen = None
    if not call.is_session_command:  # read the transcript outside the lock
        seen = transcript_usage(
            call.transcript_path, found.state.get(F.CONTEXT_WINDOW_SIZE), call.tool_use_id
        )

    pane_state = tmux_names.WORKING

    def apply(state: State) -> Verdict:
        nonlocal pane_state
        usage = newest(stored_usage(state), seen)
        if (
            starts_dehydrate(call)
            and usage
            and usage.fraction is not None
            and usage.fraction >= config.threshold
        ):
            mark_overflowed(
                state, call.conversation or None
            )  # dehydrating is an overflow's: this call is one
        blocked = overflow_gate(state, call, usage, config, dir_arg)
        pane_state = turn_events.shown(
            tmux_names.WORKING, state, call.conversation
        )  # error until it dehydrates
        if blocked is not None:
            pane_state = tmux_names.ERROR
            return Verdict(deny=blocked)
        return PASS if gated else heartbeat(state, call, cwd=cwd, env=env, dir_arg=dir_arg)

    try:
        verdict: Verdict = update_state(found.session_dir, apply, timeout=LOCK_TIMEOUT)
    except NoStateError:
        return ""  # the session went away between lookup and lock: nothing left to enforce
    if call.is_session_command and pane_state == tmux_names.WORKING and budget_gate.is_paused(caller, env):
        pane_state = tmux_names.PAUSED  # a paused agent's session command: it stays paused
    pane_notify.publish(pane_state, env=env)
    if verdict.deny is not None:
        return deny(verdict.deny, event)
    if verdict.warn is not None and event == PRE_TOOL_USE:  # PreSkillShellCommand takes no additionalContext
        return add_context(PRE_TOOL_USE, verdict.warn)
    return ""


def run(raw: bytes, env: t.Mapping[str, str]) -> str:
    """The hook's stdout for stdin *raw*: "" (allow), a deny, or additional context."""
    return judge(parse_input(raw), env)


def judge(inp: HookInput, env: t.Mapping[str, str], event: str = PRE_TOOL_USE) -> str:
    """The answer to *inp*, a PreToolUse input — for *event* PreSkillShellCommand, a skill's inline
    command given as a Bash call, answered in that event's words."""
    if inp.problem is not None:
        return refuse(failure_reason(inp.problem, event), inp, env, event)
    oversized = too_long(inp.data)  # before any rule normalises a path or walks up from it
    if oversized is not None:
        return refuse(oversized, inp, env, event)
    call: ToolCall | None = None
    try:
        config = hook_config.load(env)
        call = classify(inp, config, from_skill=event != PRE_TOOL_USE)
        if call.is_session_command:
            deadline.fallback("")  # every gate lets a lone session command through: so may a late answer
        return decide(call, inp.cwd, config, env, event)
    except Exception as exc:
        if call is not None and call.is_session_command:
            return ""
        return refuse(failure_reason(f"{type(exc).__name__}: {exc}", event), inp, env, event)


def refuse(reason: str, inp: HookInput, env: t.Mapping[str, str], event: str) -> str:
    """A refusal before the rules ran (an input that cannot be read or is too long, a rule that
    failed): for an agent at its budget it also ends the turn, or the model would ask again and again,
    each time a request past the cap. The budget is read from the input's plain fields only."""
    try:
        paused = budget_gate.check(
            locate(inp.cwd, env),
            env,
            transcript=_plain(inp.text("transcript_path")),
            conversation=_plain(inp.text("session_id")),
            call=_plain(inp.text("tool_use_id")),
            subagent=_plain(inp.text("agent_id")) or None,
        )
    except Exception:
        paused = None
    return deny_and_stop(paused, event) if paused is not None else deny(reason, event)


def _plain(value: str) -> str:
    """*value* when it is short, printable text, else "" (the input may be what was refused)."""
    return value if len(value) <= 4096 and value.isprintable() else ""
