"""``claude-hook user-prompt-submit``: the prompt gate (docs/DESIGN.md S10, S11).

With ``SESSION_REQUIRED=1`` and no live session (none, completed, restarting),
the prompt goes through with boot instructions attached as additional
context; otherwise nothing is printed. An agent at its budget is refused the
prompt (nothing is sent: :mod:`claude_shepherd.hooks.budget_gate`). Writes no state. Standard library only.
"""

from __future__ import annotations

from claude_shepherd.hooks import budget_gate, turn_events
from claude_shepherd.hooks import config as hook_config
from claude_shepherd.hooks.gate import prompt_context
from claude_shepherd.hooks.locate import locate
from claude_shepherd.hooks.protocol import (
    USER_PROMPT_SUBMIT,
    add_context,
    block_prompt,
    one_line,
    parse_input,
)
from claude_shepherd.supervisor import pane_notify, tmux_names

CONTINUE_MARKERS = (b"usage limit has reset", b"usage is available again", b"while you were working")
"""Words of every continue prompt Claude types itself after a usage limit (hooks.usage_turn): a cheap
look before that module is loaded."""

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t


def run(raw: bytes, env: t.Mapping[str, str]) -> str:
    inp = parse_input(raw)  # only the cwd is needed; a broken input still gets the gate
    caller = None
    try:
        caller = locate(inp.cwd, env)
        paused = budget_gate.check(caller, env)  # publishes the pane's paused state itself
    except Exception:
        paused = None  # no cost it could not read stops an agent
    if paused is not None:
        return block_prompt(paused)
    if any(marker in raw for marker in CONTINUE_MARKERS):  # each parked agent in its turn
        from claude_shepherd.hooks.usage_turn import hold

        held = hold(raw, env)
        if held is not None:
            return held
    # A prompt was submitted: the agent works (unless it overflowed and must dehydrate first).
    pane_notify.publish(turn_events.unless_overflowed(tmux_names.WORKING, raw, env), env=env)
    try:
        config = hook_config.load(env)
        if not config.session_required:
            return ""
        text = prompt_context(caller or locate(inp.cwd, env), config, inp.cwd, env)
    except Exception as exc:
        text = one_line(
            f"claude-hook user-prompt-submit could not check the session ({type(exc).__name__}: {exc}); "
            "run `session find` to see which session this agent is in."
        )
    return add_context(USER_PROMPT_SUBMIT, text) if text else ""
