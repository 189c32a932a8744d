"""``claude-hook pre-compact``: no compaction for an agent paused at a budget.

``/compact`` (and Claude's own compaction) sends a request carrying the whole conversation, and it is
no prompt: no UserPromptSubmit hook sees it. While a budget holds the agent at its cap, PreCompact
blocks it (Claude Code lets this hook block since 2.1.105) with the line the prompt gate gives. A
compaction Claude cannot do without (the next request would not fit) is not asked about: nothing
goes out while the agent is paused anyway. A hook that fails blocks nothing. Standard library only.
"""

from __future__ import annotations

from claude_shepherd.hooks import budget_gate
from claude_shepherd.hooks.locate import locate
from claude_shepherd.hooks.protocol import block_prompt, parse_input

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t


def run(raw: bytes, env: t.Mapping[str, str]) -> str:
    """The hook's stdout for stdin *raw*: "" (compact) or a block at a budget."""
    inp = parse_input(raw)
    try:
        paused = budget_gate.check(locate(inp.cwd, env), env)
    except Exception:
        return ""
    return block_prompt(paused) if paused is not None else ""
