"""The budgets an agent is held to, and what was spent against each.

``fleet start`` (and ``fleet budget``) write a fleet's budgets — the layout's
``budget:`` of the fleet, of each window and of each labelled pane — to
``<root>/.shepherd/budgets/`` of every sessions root its agents use, one small
JSON file per fleet, out of the file tools' reach like the rest of
``.shepherd``. The file also lists those roots, since a window's or the fleet's
spend is the sum of every agent's ledger (:mod:`.spend`) wherever it lives.
``claude-run --budget-usd`` gives one agent a budget of its own through its
environment (:data:`~claude_shepherd.supervisor.env.BUDGET_USD_ENV`).

A budget is compared with what was *measured*: an agent (or window, or fleet)
whose spend nobody measured yet has no figure to hold to a budget, and is not
held (never a guess). Standard library only: the hooks call :func:`limits` on
every tool call and prompt; without a budget it costs one failed ``open``.
"""

from __future__ import annotations

import json
import os
import time

from claude_shepherd.supervisor.env import BUDGET_USD_ENV
from claude_shepherd.supervisor.session import index_records, spend
from claude_shepherd.supervisor.session.numbers import parse_decimal

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t
    from pathlib import Path

    from claude_shepherd.supervisor.session.budget_records import Pause
    from claude_shepherd.supervisor.session.spend import Ledger

    class Amount(t.TypedDict):
        """One budget as the file keeps it: dollars, over ``life``, a ``day`` or a ``week``."""

        usd: float
        per: str

    class BudgetsFile(t.TypedDict):
        """A fleet's budgets file, checked (:func:`read_fleet`): a budget the hooks would not hold an
        agent to is None here; ``changed`` names those ``fleet budget`` set (kept over the layout's)."""

        fleet: str
        roots: list[str]
        budget: Amount | None
        windows: dict[str, Amount | None]
        panes: dict[str, Amount | None]
        changed: list[str]


BUDGETS_DIRNAME = "budgets"
BUDGETS_LIMIT = 256 * 1024
ALERT_AT = 0.8
"""The share of a budget at which the fleet is alerted, once per budget (and per day or week)."""
MAX_USD = 1e6

FLEET, WINDOW, PANE, AGENT = "fleet", "window", "pane", "agent"
RESUME_INTERVAL_ENV = "FLEET_RESUME_INTERVAL"
RESUME_INTERVAL = 5.0
"""Seconds between two paused agents going on (``$FLEET_RESUME_INTERVAL``): each re-sends a whole context."""
RESUME_QUEUE = "budget resume"
"""The slot queue (:func:`.resume_slots.take_slot`) of every paused agent's going on, whether its budget
was raised (``fleet budget``) or renewed (a day's or week's): one at a time, whichever typed it."""


def amount_problem(usd: object) -> str | None:
    """Why *usd* is no budget amount, or None: a budget is a whole number of cents above 0 and at most
    :data:`MAX_USD` (an amount below a cent shows as $0.00 and would hold nobody to anything)."""
    if isinstance(usd, bool) or not isinstance(usd, (int, float)):
        return "is not a number"
    if not 0 < usd <= MAX_USD:
        return f"is not more than $0 and at most ${MAX_USD:,.0f}"
    if abs(usd * 100 - round(usd * 100)) > 1e-6 * max(1.0, usd):
        return "is not a whole number of cents"
    return None


RESUME_PROMPT = (
    "Your {budget} budget {how}: continue the task you were working on when it paused; "
    "do not repeat work that is already complete."
)
"""What is typed into the pane of an agent a budget paused, when the budget is raised (``fleet budget``)
or renews (a day's or week's): the one text, by :func:`resume_prompt`."""


def resume_prompt(per: str | None = None) -> str:
    """The resume prompt: for a budget *per* day or week that renewed, else for a budget raised."""
    if per in ("day", "week"):
        return RESUME_PROMPT.format(budget={"day": "daily", "week": "weekly"}[per], how="renewed")
    return RESUME_PROMPT.replace("{budget} ", "").format(how="was raised")


def resume_interval(env: t.Mapping[str, str]) -> float:
    value = parse_decimal(env.get(RESUME_INTERVAL_ENV, ""), maximum=3600)
    return RESUME_INTERVAL if value is None else value


def amount_of(value: object) -> Amount | None:
    """``{"usd": N, "per": P}`` as the file holds it, checked; None when it is not one."""
    if not isinstance(value, dict):
        return None
    usd, per = value.get("usd"), value.get("per", "life")
    if isinstance(usd, bool) or not isinstance(usd, (int, float)) or not 0 < usd <= MAX_USD:
        return None
    return {"usd": float(usd), "per": per} if isinstance(per, str) and per in spend.PERIODS else None


# --------------------------------------------------------------------------- the fleet's file


def read_fleet(root: Path, fleet: str) -> BudgetsFile | None:
    """The budgets ``fleet start`` wrote for *fleet* in *root*, checked; None when it wrote none."""
    data = index_records.read(
        root, BUDGETS_DIRNAME, index_records.file_name(fleet), BUDGETS_LIMIT, ("fleet", fleet)
    )
    return None if data is None else budgets_file_of(data, fleet)


def budgets_file_of(data: t.Mapping[str, object], fleet: str) -> BudgetsFile:
    """*data*, a budgets file as read, checked: what the hooks would not hold an agent to is left out."""

    def table(value: object) -> dict[str, Amount | None]:
        if not isinstance(value, dict):
            return {}
        return {k: amount_of(v) for k, v in value.items() if isinstance(k, str)}

    def strings(value: object) -> list[str]:
        return [s for s in value if isinstance(s, str)] if isinstance(value, list) else []

    return {
        "fleet": fleet,
        "roots": [r for r in strings(data.get("roots")) if os.path.isabs(r)],
        "budget": amount_of(data.get("budget")),
        "windows": table(data.get("windows")),
        "panes": table(data.get("panes")),
        "changed": strings(data.get("changed")),
    }


def write_fleet(root: Path, fleet: str, document: BudgetsFile) -> None:
    """Write *fleet*'s budgets into *root* (raises OSError when it cannot)."""
    text = json.dumps({**document, "fleet": fleet}, indent=1) + "\n"
    index_records.put(root, BUDGETS_DIRNAME, index_records.file_name(fleet), text)


# --------------------------------------------------------------------------- an agent's limits


class Limit:
    """One budget an agent is held to, and what was measured against it (None: nothing yet)."""

    __slots__ = ("scope", "name", "usd", "per", "spent", "source")

    def __init__(
        self, scope: str, name: str, usd: float, per: str, spent: float | None, source: str = spend.MEASURED
    ) -> None:
        self.scope = scope  # fleet, window, pane, or agent (claude-run --budget-usd)
        self.name = name  # the fleet's name, the window's, the pane's label; "" for an agent
        self.usd = usd
        self.per = per
        self.spent = spent
        self.source = source  # measured (Claude's figures), or estimated (replies priced from transcripts)

    @property
    def reached(self) -> bool:
        return self.spent is not None and self.spent >= self.usd

    @property
    def nearly(self) -> bool:
        return self.spent is not None and self.spent >= self.usd * ALERT_AT

    def text(self) -> str:
        """``$5.00``, ``$5.00 a day``, ``$5.00 a week``."""
        return f"${self.usd:.2f}" + {"day": " a day", "week": " a week"}.get(self.per, "")

    def key(self, now: float) -> str:
        """Names this budget, its amount and its current day or week: an alert is raised once per key."""
        period = {"day": spend.day_of(now), "week": min(spend.week_days(now))}.get(self.per, "")
        return f"{self.scope}:{self.name}:{self.usd:g}:{self.per}:{period}"

    def pause(self, command: str, since: float) -> Pause:
        """The pause this budget makes, as the gate records it (*command* lets the agent go on)."""
        return {"scope": self.scope, "name": self.name, "usd": self.usd, "per": self.per, "spent": self.spent,
                "raise": command, "since": since}  # fmt: skip

    def renews_at(self, now: float) -> float | None:
        return renews_at(self.per, now)


def renews_at(per: str, now: float) -> float | None:
    """When a budget *per* day or week starts its next period, as its spend is counted (local midnight;
    Monday's for a week); None for a budget over a life."""
    if per not in ("day", "week"):
        return None
    today = time.localtime(now)
    ahead = 1 if per == "day" else 7 - today.tm_wday
    return time.mktime((today.tm_year, today.tm_mon, today.tm_mday + ahead, 0, 0, 0, 0, 0, -1))


def env_budget(env: t.Mapping[str, str]) -> float | None:
    """``claude-run --budget-usd``'s amount, or None."""
    value = parse_decimal(env.get(BUDGET_USD_ENV, ""), maximum=MAX_USD)
    return value if value else None


def _sum(ledgers: t.Sequence[Ledger], per: str, now: float) -> tuple[float | None, str]:
    """What *ledgers* say was spent over *per*, and whether any of it is an estimate."""
    figures = [f for f in (spend.spent(ledger, per, now) for ledger in ledgers) if f is not None]
    estimated = any(ledger["source"] == spend.ESTIMATED for ledger in ledgers)
    return (round(sum(figures), 6) if figures else None), spend.ESTIMATED if estimated else spend.MEASURED


def fleet_ledgers(document: BudgetsFile, root: Path, fleet: str) -> list[Ledger]:
    """Every ledger of *fleet*'s agents in the roots its budgets file names (and *root*), once each."""
    roots = {str(root), *document["roots"]}
    seen: dict[str, Ledger] = {}
    for each in sorted(roots):
        for ledger in spend.ledgers(type(root)(each), f"{fleet}:"):
            seen.setdefault(ledger["agent"], ledger)
    return list(seen.values())


def window_of(document: BudgetsFile, fleet: str, agent: str) -> str | None:
    """The window of the fleet *agent* (``fleet:window:label``) is in, by the budgets file's windows."""
    found = [w for w in document["windows"] if agent.startswith(f"{fleet}:{w}:")]
    return max(found, key=len) if found else None


def limits(root: Path, agent: str, *, pane: bool, env: t.Mapping[str, str], now: float) -> list[Limit]:
    """Every budget *agent* is held to (*pane*: it is a fleet pane, ``fleet:window:label``), with what
    was measured against it; [] when it has none."""
    out: list[Limit] = []
    own = env_budget(env)
    if own is not None:
        ledger = spend.read(root, agent)
        out.append(Limit(AGENT, "", own, "life", *_sum([ledger] if ledger else [], "life", now)))
    if not pane or ":" not in agent:
        return out
    fleet = agent.split(":", 1)[0]
    document = read_fleet(root, fleet)
    if document is None:
        return out
    ledgers = fleet_ledgers(document, root, fleet)
    window = window_of(document, fleet, agent)
    budget = document["panes"].get(agent)
    if budget is not None and window is not None:
        mine = [entry for entry in ledgers if entry["agent"] == agent]
        label = agent[len(fleet) + len(window) + 2 :]
        out.append(Limit(PANE, label, budget["usd"], budget["per"], *_sum(mine, budget["per"], now)))
    budget = document["windows"].get(window) if window is not None else None
    if budget is not None and window is not None:
        theirs = [entry for entry in ledgers if entry["agent"].startswith(f"{fleet}:{window}:")]
        out.append(Limit(WINDOW, window, budget["usd"], budget["per"], *_sum(theirs, budget["per"], now)))
    budget = document["budget"]
    if budget is not None:
        out.append(Limit(FLEET, fleet, budget["usd"], budget["per"], *_sum(ledgers, budget["per"], now)))
    return out
