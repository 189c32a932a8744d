"""A fleet's budgets: written where the hooks read them, changed by ``fleet budget``, and the resume.

``fleet start`` writes the layout's ``budget:`` keys (the fleet's, each window's, each labelled
pane's) into every sessions root the fleet's agents use
(:mod:`claude_shepherd.supervisor.session.budgets`): the hooks hold each agent to them from its next
tool call on. ``fleet budget`` changes one of them at once, in the same files; the amounts it set
are kept over the layout's by later starts (the file names them in ``changed``). After a change,
every agent that is paused and now within all its budgets goes on by itself: its pane is typed a
resume prompt (Ctrl-U first: a prompt refused while paused is still in the input box), one agent at
a time, ``$FLEET_RESUME_INTERVAL`` seconds apart, since each resume re-sends a whole context.
"""

from __future__ import annotations

import os
import time
import typing as t
from dataclasses import dataclass, field
from pathlib import Path

from claude_shepherd.supervisor.errors import UsageError
from claude_shepherd.supervisor.session import budget_records, spend
from claude_shepherd.supervisor.session import budgets as hook_budgets

if t.TYPE_CHECKING:
    from claude_shepherd.fleet.layout import Budget, Layout
    from claude_shepherd.fleet.tmux import FleetServer, PaneInfo
    from claude_shepherd.supervisor.session.budgets import Amount, BudgetsFile
    from claude_shepherd.supervisor.session.spend import Ledger

TYPE_WAIT = 10.0
"""Seconds, at most, for an agent's Claude to read its pane's keys before its resume is given up."""


def _written(budget: Budget | None) -> Amount | None:
    return None if budget is None else {"usd": budget.usd, "per": budget.per}


def roots(layout: Layout) -> list[Path]:
    """The sessions roots of the layout's agents (where their ledgers and budgets live)."""
    return sorted(layout.sessions_roots())


def document(layout: Layout, previous: BudgetsFile | None = None) -> BudgetsFile:
    """The budgets file of *layout*; what ``fleet budget`` changed in *previous* is kept."""
    doc: BudgetsFile = {
        "fleet": layout.name,
        "roots": [str(r) for r in roots(layout)],
        "budget": _written(layout.budget),
        "windows": {w.name: _written(w.budget) for w in layout.windows},
        "panes": {
            f"{layout.name}:{w.name}:{p.label}": _written(p.budget)
            for w in layout.windows
            for p in w.panes
            if p.label and p.budget is not None
        },
        "changed": [],
    }
    for key in previous["changed"] if previous else []:
        scope, _, name = key.partition(":")
        scope = "panes" if scope == "pane" else scope  # the marker earlier versions wrote
        if scope == "fleet" and previous:
            doc["budget"] = previous["budget"]
        elif scope == "windows" and previous and name in doc["windows"]:  # not a window the layout lost
            doc["windows"][name] = previous["windows"].get(name)
        elif scope == "panes" and previous:
            doc["panes"][name] = previous["panes"].get(name)
        else:
            continue
        doc["changed"].append(f"{scope}:{name}" if scope != "fleet" else key)
    return doc


def current(layout: Layout) -> BudgetsFile | None:
    """The budgets file as it stands (the first root that has one), each budget in it as the hooks read
    it (``{"usd", "per"}``) or None: a value they would not hold an agent to is no budget here either."""
    for root in roots(layout):
        found = hook_budgets.read_fleet(root, layout.name)
        if found is not None:
            return found
    return None


def has_budgets(layout: Layout) -> bool:
    return layout.budget is not None or any(
        w.budget is not None or any(p.budget is not None for p in w.panes) for w in layout.windows
    )


def start(layout: Layout) -> None:
    """``fleet start``'s part: the layout's budgets where the hooks read them (none: no file is
    written, so a fleet without budgets costs its hooks one failed ``open``)."""
    previous = current(layout)
    if previous is not None or has_budgets(layout):
        write(layout, document(layout, previous))


def write(layout: Layout, doc: BudgetsFile | None = None) -> None:
    """Write *doc* (default: the layout's budgets, keeping what ``fleet budget`` set) into every root."""
    doc = document(layout, current(layout)) if doc is None else doc
    for root in roots(layout):
        try:
            hook_budgets.write_fleet(root, layout.name, doc)
        except OSError as exc:
            raise UsageError(
                f"cannot write the budgets of fleet {layout.name!r} into {root}/.shepherd ({exc.strerror}); "
                "check that folder's owner and permissions"
            ) from None


# --------------------------------------------------------------------------- fleet budget


@dataclass(frozen=True)
class BudgetLine:
    scope: str
    name: str
    budget: Amount | None
    spent: float | None
    paused: bool = False

    def text(self) -> str:
        budget = self.budget
        if budget:
            shown = f"${budget['usd']:.2f}" + {"day": " a day", "week": " a week"}.get(budget["per"], "")
        else:
            shown = "no budget"
        spent = f"${self.spent:.2f}" if self.spent is not None else "—"
        over = ""
        if budget and self.spent is not None:
            over = f" ({self.spent / budget['usd'] * 100:.0f} %)"
        mark = "  PAUSED (budget)" if self.paused else ""
        return f"{self.scope:<6} {self.name:<24} {shown:<18} spent {spent}{over}{mark}"

    def as_json(self) -> dict[str, object]:
        return {
            "scope": self.scope,
            "name": self.name,
            "budget": self.budget,
            "spent": self.spent,
            "source": spend.MEASURED if self.spent is not None else spend.UNKNOWN,
            "paused": self.paused,
        }


@dataclass(frozen=True)
class BudgetReport:
    """``fleet budget``: what changed, every budget and agent with what it spent, and who went on."""

    fleet: str
    changed: str | None
    rows: list[BudgetLine]
    resumed: list[str] = field(default_factory=list)
    still_paused: list[str] = field(default_factory=list)
    """A line for each paused agent a budget still holds, naming it and the command that lets it go on."""

    def lines(self) -> list[str]:
        out = [self.changed] if self.changed else []
        out.append(
            f"Budgets of fleet {self.fleet!r} (spend as measured by each agent's status line; — none yet):"
        )
        out += [f"  {row.text()}" for row in self.rows]
        out += [f"Resumed {agent}: typed the resume prompt into its pane." for agent in self.resumed]
        return out + self.still_paused

    def failure(self) -> None:
        return None

    def as_json(self) -> dict[str, object]:
        return {
            "fleet": self.fleet,
            "changed": self.changed,
            "budgets": [row.as_json() for row in self.rows],
            "resumed": self.resumed,
            "still_paused": self.still_paused,
        }


def change(
    layout: Layout,
    *,
    window: str | None,
    pane: str | None,
    set_usd: float | None,
    add_usd: float | None,
    per: str | None = None,
    remove: bool = False,
) -> str:
    """Set, raise or remove one budget in the fleet's files; returns the line that says what changed."""
    doc = document(layout, current(layout))
    if pane is not None:
        matches = [
            f"{layout.name}:{w.name}:{p.label}"
            for w in layout.windows
            if window is None or w.name == window
            for p in w.panes
            if p.label == pane
        ]
        if len(matches) != 1:
            labels = sorted({p.label for w in layout.windows for p in w.panes if p.label})
            what = "no pane" if not matches else f"{len(matches)} panes"
            raise UsageError(
                f"{what} labelled {pane!r} in fleet {layout.name!r}"
                + ("; add --window W" if matches else f"; labels: {', '.join(labels) or 'none'}")
            )
        scope, key, table = "panes", matches[0], doc["panes"]
        label = f"pane {pane}"
    elif window is not None:
        if window not in doc["windows"]:
            raise UsageError(
                f"no window {window!r} in fleet {layout.name!r}; windows: {', '.join(doc['windows'])}"
            )
        scope, key, table = "windows", window, doc["windows"]
        label = f"window {window}"
    else:
        scope, key, table = "fleet", "", None
        label = f"fleet {layout.name}"
    before = table.get(key) if table is not None else doc["budget"]
    before_usd = before["usd"] if before is not None else None
    if remove and before_usd is None:
        raise UsageError(f"{label} has no budget to remove; `fleet budget {layout.name}` shows them")
    if add_usd is not None and before_usd is None:
        raise UsageError(_held_by(layout, label, window if scope != "fleet" else None, scope, add_usd))
    usd = (before_usd or 0.0) + add_usd if add_usd is not None else set_usd
    after: Amount | None = None
    if not remove:
        assert usd is not None
        problem = hook_budgets.amount_problem(round(usd, 6))
        if problem is not None:
            raise UsageError(f"a budget of ${usd:g} {problem}; give a whole number of cents like 5 or 2.50")
        period = per or (before["per"] if before is not None else "life")
        after = {"usd": round(usd, 2), "per": period}
    if table is not None:
        table[key] = after
    else:
        doc["budget"] = after
    marker = "fleet" if scope == "fleet" else f"{scope}:{key}"
    if marker not in doc["changed"]:
        doc["changed"].append(marker)
    write(layout, doc)
    was = f"${before_usd:.2f}" if before_usd is not None else "none"
    if after is None:
        return f"Budget of {label}: {was} -> none (removed: it holds nobody now)"
    per_text = {"day": " a day", "week": " a week"}.get(after["per"], "")
    spent = _scope_spent(layout, scope, key)
    below = (
        f"; that is below the ${spent:.2f} spent: its agents pause at their next tool call"
        if spent is not None and spent >= after["usd"]
        else ""
    )
    return f"Budget of {label}: {was} -> ${after['usd']:.2f}{per_text}{below}"


def _scope_spent(layout: Layout, scope: str, key: str) -> float | None:
    """What the agents a budget holds spent in its period, as ``fleet budget`` shows it."""
    wanted = {"fleet": "fleet", "windows": "window", "panes": "pane"}[scope]
    name = layout.name if scope == "fleet" else key.rpartition(":")[2] if scope == "panes" else key
    return next((row.spent for row in lines(layout) if row.scope == wanted and row.name == name), None)


def _held_by(layout: Layout, label: str, window: str | None, scope: str, add_usd: float) -> str:
    """Why --add cannot raise a budget that is not there: which budgets hold its agents, and the command
    that raises each (a new budget below the spend would pause them twice over)."""
    rows = lines(layout)
    holders = [row for row in rows if row.budget and row.scope == "fleet"]
    if scope == "panes":
        mine = window or next(
            (w.name for w in layout.windows for p in w.panes if f"pane {p.label}" == label), None
        )
        holders = [row for row in rows if row.budget and row.scope == "window" and row.name == mine] + holders
    if scope == "fleet" or not holders:
        return f"{label} has no budget to raise; give it one with --set USD"
    said = []
    for row in holders:
        option = f" --window {row.name}" if row.scope == "window" else ""
        spent = f", spent ${row.spent:.2f}" if row.spent is not None else ""
        usd = row.budget["usd"] if row.budget else 0.0
        said.append(
            f"the budget of {row.scope} {row.name} (${usd:.2f}{spent}): "
            f"`fleet budget {layout.name}{option} --add {add_usd:g}`"
        )
    return (
        f"{label} has no budget of its own to raise; it is held by "
        + " and ".join(said)
        + (f"; or give {label} its own with --set USD")
    )


def _spent(ledgers: list[Ledger], per: str, now: float) -> float | None:
    figures = [f for f in (spend.spent(entry, per, now) for entry in ledgers) if f is not None]
    return round(sum(figures), 6) if figures else None


def lines(layout: Layout, now: float | None = None) -> list[BudgetLine]:
    """The fleet's budgets and every agent's spend (its own budget's period, else its life)."""
    now = time.time() if now is None else now
    doc = current(layout) or document(layout)
    first = roots(layout)[0]
    ledgers = hook_budgets.fleet_ledgers(doc, first, layout.name)
    out: list[BudgetLine] = []
    fleet_budget = doc["budget"]
    per = fleet_budget["per"] if fleet_budget is not None else "life"
    out.append(BudgetLine("fleet", layout.name, fleet_budget, _spent(ledgers, per, now)))
    for window in layout.windows:
        budget = doc["windows"].get(window.name)
        per = budget["per"] if budget is not None else "life"
        theirs = [e for e in ledgers if e["agent"].startswith(f"{layout.name}:{window.name}:")]
        out.append(BudgetLine("window", window.name, budget, _spent(theirs, per, now)))
        for pane in window.panes:
            if not pane.label:
                continue
            agent = f"{layout.name}:{window.name}:{pane.label}"
            budget = doc["panes"].get(agent)
            per = budget["per"] if budget is not None else "life"
            mine = [e for e in ledgers if e["agent"] == agent]
            out.append(
                BudgetLine("pane", pane.label, budget, _spent(mine, per, now), paused_anywhere(layout, agent))
            )
    return out


def paused_anywhere(layout: Layout, agent: str) -> bool:
    return any(budget_records.paused(root, agent) for root in roots(layout))


# --------------------------------------------------------------------------- the resume


def resume(layout: Layout, server: FleetServer, say: t.Callable[[str], None]) -> tuple[list[str], list[str]]:
    """Type the resume prompt into each paused agent's pane that is within its budgets now, one at a
    time, and clear its pause; returns their identities, and a line for each agent still held (by
    which budget, and the command that raises it enough). An agent paused by its own ``claude-run
    --budget-usd`` stays paused: no fleet budget raises that one."""
    from claude_shepherd.fleet.tmux import NEXT, list_panes
    from claude_shepherd.hooks.budget_gate import raise_command
    from claude_shepherd.supervisor.tmux_names import WORKING, state_commands

    now = time.time()
    live = [p for p in list_panes(server, layout.name) if p.identity and not p.dead]
    # An identity two panes carry is nobody's (an agent relabelled its pane to another's): which one the
    # resume would reach cannot be told, so it is typed into neither.
    panes = {p.identity: p for p in live if p.identity and sum(q.identity == p.identity for q in live) == 1}
    resumed: list[str] = []
    interval = hook_budgets.resume_interval(os.environ)
    resumed_at: float | None = None
    held_back: list[str] = []
    for root in roots(layout):
        for agent in sorted(panes):
            paused = budget_records.paused(root, agent)
            if paused is None or paused["scope"] == hook_budgets.AGENT:
                continue  # not paused, or by its own claude-run --budget-usd, which no fleet budget raises
            held = hook_budgets.limits(root, agent, pane=True, env={}, now=now)
            reached = next((limit for limit in held if limit.reached), None)
            if reached is not None:
                held_back.append(
                    f"Still paused: {agent}, at the {reached.scope} budget {reached.text()} "
                    f"(spent ${reached.spent or 0:.2f}); to let it go on: `{raise_command(reached, agent)}`"
                )
                continue
            _wait_for_slot(root, agent, now, interval, resumed_at)
            resumed_at = time.time()
            budget_records.go_on(root, agent)
            pane = panes[agent]
            server.run(*(NEXT if word == ";" else word for word in state_commands(pane.pane_id, WORKING)))
            if _type(server, pane, agent):
                resumed.append(agent)
            else:
                held_back.append(
                    f"Not typed: {agent} may go on, but its Claude did not read its pane's keys within "
                    f"{TYPE_WAIT:g}s; type a prompt into it yourself (`fleet attach`)"
                )
    return resumed, held_back


def _wait_for_slot(root: Path, agent: str, now: float, interval: float, previous: float | None) -> None:
    """Wait for *agent*'s turn in the queue every resume of a paused agent takes (a renewal's typist
    takes the same: one at a time, whichever types), and *interval* after this command's last one."""
    from claude_shepherd.supervisor.session import resume_slots

    slot = resume_slots.take_slot(root, hook_budgets.RESUME_QUEUE, agent, now, interval)
    if previous is not None:
        slot = max(slot, previous + interval)
    wait = slot - time.time()
    if wait > 0:
        time.sleep(wait)


def _type(server: FleetServer, pane: PaneInfo, agent: str) -> bool:
    """The resume prompt, typed as the hooks type theirs (:func:`claude_shepherd.hooks.pane_typing.type_prompt`:
    only while the pane carries *agent* and its claude-run's Claude reads the keys); True when typed."""
    from claude_shepherd.hooks.pane_typing import type_prompt
    from claude_shepherd.supervisor.session.identity import start_token

    token = start_token(pane.pid)
    if token is None:
        return False
    until = time.monotonic() + TYPE_WAIT
    return type_prompt(server.socket_name, pane.pane_id, agent, hook_budgets.resume_prompt(), (pane.pid, token),
                       lambda: time.monotonic() < until)  # fmt: skip
