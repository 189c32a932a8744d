"""``claude-hook post-tool-batch``: a budget's last word before Claude sends the next request.

Claude Code runs PostToolBatch once the results of a reply's tool calls are in, before it asks the
model again: also for calls it refused itself before any PreToolUse (an unknown tool, input that fails
its own check: an attack made eleven requests past a cap so), and after a sub-agent ended (its last
reply asks for no tool). For an agent held to a budget the hook prices what the transcripts gained
(the main one and the sub-agents', :mod:`.metering`) and, at the budget, ends the turn (``continue:
false``): nothing more is sent. Any other agent costs one look at its budgets. A hook that fails stops
nobody, as the budget gate does. Standard library only.
"""

from __future__ import annotations

from claude_shepherd.hooks import budget_gate
from claude_shepherd.hooks.locate import locate
from claude_shepherd.hooks.protocol import parse_input, stop_after

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t


def run(raw: bytes, env: t.Mapping[str, str]) -> str:
    """The hook's stdout for stdin *raw*: "" (go on) or ``continue: false`` at a budget."""
    inp = parse_input(raw)
    if inp.problem is not None:  # a batch holding input nested too deep to parse: at least the ledger's word
        try:
            paused = budget_gate.check(locate(inp.cwd, env), env)
        except Exception:
            return ""
        return stop_after(paused) if paused is not None else ""
    calls = inp.data.get("tool_calls")
    last = calls[-1] if isinstance(calls, list) and calls and isinstance(calls[-1], dict) else {}
    try:
        paused = budget_gate.check(
            locate(inp.cwd, env),
            env,
            transcript=inp.text("transcript_path") or None,
            conversation=inp.text("session_id"),
            call=last.get("tool_use_id"),  # the reply that asked for the batch, waited for in the transcript
            subagent=inp.text("agent_id") or None,
        )
    except Exception:
        return ""
    return stop_after(paused) if paused is not None else ""
