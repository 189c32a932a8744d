"""``claude-run --budget-usd`` in a headless run (``-p``): the budget is the whole run's.

A headless Claude cannot be paused: at its budget it stops. Claude's own ``--max-budget-usd`` stops
it between replies (``Error: Exceeded USD budget``, status 1) and our PreToolUse hook stops the turn
(status 0); either way it must stay stopped. Relaunching it as after a crash gave every launch the
whole budget again, and replies seconds apart never trip the crash limit: the spend had no bound.

So claude-run counts what every launch spent in the agent's spend ledger (the claude-run's own, or
the fleet pane's): the hooks price each reply as Claude writes it (no status line runs in ``-p``),
and when a Claude ends, its conversation's ``cost-state`` (Claude's own figure for everything it
spent) is read in as a complete measurement. Each launch gets ``--max-budget-usd`` for what is left
(unless the person gave their own); none is made once nothing is left, and a Claude that ends at the
budget is not a crash: claude-run says so in one line and exits :data:`EXIT_BUDGET_SPENT`.
"""

from __future__ import annotations

import time
from pathlib import Path

from claude_shepherd.supervisor.claude_run.transcripts import find_transcript
from claude_shepherd.supervisor.errors import EXIT_BUDGET_SPENT
from claude_shepherd.supervisor.session import pane_records

TYPE_CHECKING = False
if TYPE_CHECKING:  # claude-run runs beside every agent: no typing at run time (docs/HOT_CORE.md)
    import typing as t

__all__ = ["EXIT_BUDGET_SPENT", "RunBudget", "headless"]

PRINT_FLAGS = ("-p", "--print")
OWN_FLAG = "--max-budget-usd"
LEFT_DECIMALS = 6
"""``--max-budget-usd`` is given to the micro-dollar: what Claude stops at is what the ledger counts."""


BACKGROUND_OFF = "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS"
"""Claude Code's switch that runs every sub-agent in the foreground, where its calls are priced one at a time."""


def launch_env(
    env: t.Mapping[str, str],
    root: Path,
    pane: str | None,
    owner: tuple[int, str | None],
    args: t.Sequence[str] = (),
) -> t.Mapping[str, str]:
    """Claude's environment for the next launch: with background tasks off while a budget holds an
    interactive agent.

    In a terminal Claude Code runs every sub-agent in the background, beside the requests that follow,
    where no budget can hold it (the hooks refuse them); with background tasks off it runs each in the
    foreground, one at a time, each of its calls priced. Headless (``-p``), Claude offers
    ``run_in_background`` and the hooks ask for ``false``. A value the person set stays."""
    if BACKGROUND_OFF in env or headless(args):
        return env
    from claude_shepherd.supervisor.session import budgets

    where = pane_records.spot(pane, owner)
    if where is None or not budgets.limits(root, where[0], pane=bool(pane), env=env, now=time.time()):
        return env
    return {**env, BACKGROUND_OFF: "1"}


def headless(args: t.Iterable[str]) -> bool:
    """Do Claude's arguments ask for a headless run (``-p``, ``--print``)?"""
    return any(a in PRINT_FLAGS for a in args)


def has_own_budget(args: t.Iterable[str]) -> bool:
    return any(a == OWN_FLAG or a.startswith(OWN_FLAG + "=") for a in args)


class RunBudget:
    """What is left of a headless claude-run's budget, by its agent's ledger.

    Its methods import :mod:`~claude_shepherd.supervisor.session.spend` themselves: only a run with
    ``--budget-usd`` loads the ledger, one claude-run runs beside every agent (docs/HOT_CORE.md)."""

    def __init__(
        self,
        usd: float,
        root: Path,
        owner: tuple[int, str | None],
        places: tuple[Path, ...],
        env: t.Mapping[str, str],
        *,
        own_flag: bool = False,
    ) -> None:
        from claude_shepherd.supervisor.session import spend

        self.usd = usd
        self.root = root
        self.owner = owner
        self.places = places
        self.env = env
        self.own_flag = own_flag  # the person gave Claude a --max-budget-usd of their own: it stays
        self.spent: float | None = None
        self.source = spend.MEASURED

    def agent(self, pane: str | None) -> str | None:
        """The identity the agent's spend is counted under (the hooks' and the status line's)."""
        where = pane_records.spot(pane, self.owner)
        return where[0] if where else None

    def _read(self, pane: str | None) -> float:
        from claude_shepherd.supervisor.session import spend

        agent = self.agent(pane)
        ledger = spend.read(self.root, agent) if agent else None
        self.spent = spend.spent(ledger) or 0.0
        self.source = ledger.get("source", spend.MEASURED) if ledger else spend.MEASURED
        return self.spent

    def left(self, pane: str | None) -> float:
        """USD left of the budget now (0 or less: spent)."""
        return self.usd - self._read(pane)

    def launch_args(self, pane: str | None) -> list[str] | None:
        """Claude's own stop at what is left, for the next launch (none when the person gave theirs);
        None when nothing is left: no launch."""
        from claude_shepherd.supervisor.session import spend

        left = self.left(pane)
        if left <= spend.EPSILON:
            return None
        return [] if self.own_flag else [f"{OWN_FLAG}={left:.{LEFT_DECIMALS}f}".rstrip("0").rstrip(".")]

    def measure_exit(self, pane: str | None) -> None:
        """Count what the Claude that just ended spent, by its own figure: the last ``cost-state`` line
        of its conversation's transcript (it writes one as it ends), a complete measurement that
        covers every reply the hooks priced."""
        from claude_shepherd.supervisor.session import spend_writes, transcript_costs

        agent = self.agent(pane)
        where = pane_records.spot(pane, self.owner)
        record = pane_records.read(self.root, *where) if where else None
        conversation = pane_records.conversation(record) if record else None
        if agent is None or not conversation:
            return
        transcript = next(
            (found for found in (find_transcript(conversation, p, self.env) for p in self.places) if found),
            None,
        )
        if transcript is None:
            return
        ended = transcript_costs.ended_cost(str(transcript))
        if ended is not None:
            spend_writes.measure(self.root, agent, conversation, ended[0], before=ended[1], complete=True)

    def spent_out(self, pane: str | None) -> bool:
        """Is the budget spent (within a micro-dollar: Claude's own stop is given that precision)?"""
        from claude_shepherd.supervisor.session import spend

        return self.left(pane) <= spend.EPSILON

    def line(self) -> str:
        """What claude-run says as it stops for the budget."""
        return (
            f"the budget of ${self.usd:.2f} is spent (${self.spent or 0:.2f} {self.source}); "
            "nothing more is sent"
        )
