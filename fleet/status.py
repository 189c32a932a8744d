"""``fleet status``: one row per pane, from tmux, the process table and each pane's session.

A pane's session is found the way its agent finds it — by the fleet pane id
(``session:window:label``), then by the supervisor's PID — in the sessions
root the agent uses (``CLAUDE_SESSIONS_DIR`` of its Claude or supervisor,
else ``sessions/`` of the pane's project). Nothing is written but the lookup
cache (:mod:`claude_shepherd.supervisor.session.index`) when it was stale.
"""

from __future__ import annotations

import math
import os
import sys
import time
import typing as t
from dataclasses import asdict, dataclass
from pathlib import Path

from claude_shepherd.fleet import procs as pr
from claude_shepherd.fleet.tmux import FleetServer, PaneInfo, list_panes
from claude_shepherd.fleet.worktree_status import STATUS_BUDGET, AgentTree, agent_tree, unsaved_in
from claude_shepherd.fleet.worktree_work import STATUS_TIMEOUT
from claude_shepherd.supervisor.claude_run.fleet_pane import restart_count
from claude_shepherd.supervisor.env import SESSIONS_DIR_ENV, WORKTREE_ENV
from claude_shepherd.supervisor.printable import printable
from claude_shepherd.supervisor.session.fields import F
from claude_shepherd.supervisor.session.identity import start_token
from claude_shepherd.supervisor.session.lookup import Found, sessions_on_pane, sessions_owned_by
from claude_shepherd.supervisor.session.numbers import PID_MAX, parse_decimal
from claude_shepherd.supervisor.session.paths import sessions_root
from claude_shepherd.supervisor.tmux_names import LIMITED, STOPPED, UNKNOWN

MAX_AMOUNT = 1e9
SPEND_SOURCES = ("measured", "estimated")
"""What the spend ledger says its figure is: Claude's own, or partly replies priced from transcripts."""
"""Larger percents or dollars in a pane option are not believed (shown as unknown)."""


@dataclass(frozen=True)
class PaneStatus:
    session: str
    window: str
    label: str
    pane: str
    pane_id: str | None
    state: str
    supervisor_pid: int | None
    supervisor_alive: bool
    claude_pid: int | None
    session_dir: str | None
    skill: str | None
    phase: str | None
    lifecycle: str | None
    overflowed: bool | None
    context_usage: float | None
    cost_usd: float | None
    restarts: int | None
    started_at: float | None
    """When the pane's supervisor started (epoch seconds): its uptime."""
    agent: bool = False
    """``fleet start`` made the pane to run an agent (so its death is an agent's death)."""
    spend_source: str = "unknown"
    """Where ``cost_usd`` came from: the agent's spend ledger, ``measured`` (Claude's own figures) or
    ``estimated`` (replies priced from the transcript that no figure of Claude's covers yet); else ``unknown``."""
    budget_usd: float | None = None
    """The budget closest to being reached of those the agent is held to (its pane's, window's, fleet's)."""
    budget_per: str | None = None
    budget_scope: str | None = None
    budget_spent: float | None = None
    """What was measured against that budget (over its period; a window's or fleet's: all their agents)."""
    paused: bool = False
    """The agent reached a budget and is paused until it is raised (``fleet budget``)."""
    credential: str | None = None
    """The Claude config directory the pane's agent uses (its login; supervisor.session.usage_windows)."""
    usage_windows: dict[str, dict[str, float]] | None = None
    """The credential's latest reading of each usage window: ``{name: {used_percentage, resets_at, seen_at}}``."""
    limited_until: float | None = None
    """The agent stopped at a usage limit: when the window reopens (epoch seconds)."""
    limited_window: str | None = None
    resume_at: float | None = None
    """After the reset, when this parked agent goes on (its turn among the others)."""
    worktree: str | None = None
    """The git worktree its Claude runs in (``claude -w NAME``), if any."""
    branch: str | None = None
    """That worktree's branch (None: detached, or not known)."""
    unsaved: str | None = None
    """What in that worktree is not committed (``""``: nothing); None when not known in time."""
    waiting: str | None = None
    """The dialog of Claude Code's its Claude waits at before it starts (state ``dialog``), as its screen
    shows it: ``trust dialog for /path`` (:mod:`claude_shepherd.fleet.dialogs`)."""

    def as_json(self) -> dict[str, t.Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: t.Mapping[str, t.Any]) -> PaneStatus:
        """A row another host's ``fleet status --json`` sent: each field of its type, else empty."""

        def text(key: str) -> str | None:
            value = data.get(key)
            return value if isinstance(value, str) else None

        def number(key: str, kind: type = float, most: float = MAX_AMOUNT) -> t.Any:
            value = data.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                return None
            if not math.isfinite(value) or not 0 <= value <= most:
                return None
            return kind(value) if kind is float or isinstance(value, int) else None

        def flag(key: str) -> bool | None:
            value = data.get(key)
            return value if isinstance(value, bool) else None

        return cls(
            session=text("session") or "",
            window=text("window") or "",
            label=text("label") or "",
            pane=text("pane") or "",
            pane_id=text("pane_id"),
            state=text("state") or "",
            supervisor_pid=number("supervisor_pid", int, PID_MAX),
            supervisor_alive=flag("supervisor_alive") or False,
            claude_pid=number("claude_pid", int, PID_MAX),
            session_dir=text("session_dir"),
            skill=text("skill"),
            phase=text("phase"),
            lifecycle=text("lifecycle"),
            overflowed=flag("overflowed"),
            context_usage=number("context_usage"),
            cost_usd=number("cost_usd"),
            restarts=number("restarts", int, 2**31),
            started_at=number("started_at", float, 2**40),  # epoch seconds
            agent=flag("agent") or False,
            spend_source=source if (source := data.get("spend_source")) in SPEND_SOURCES else "unknown",
            budget_usd=number("budget_usd"),
            budget_per=text("budget_per") if data.get("budget_per") in ("life", "day", "week") else None,
            budget_scope=text("budget_scope"),
            budget_spent=number("budget_spent"),
            paused=flag("paused") or False,
            credential=text("credential"),
            usage_windows=_windows(data.get("usage_windows")),
            limited_until=number("limited_until", float, 2**40),
            limited_window=text("limited_window"),
            resume_at=number("resume_at", float, 2**40),
            worktree=text("worktree"),
            branch=text("branch"),
            unsaved=text("unsaved"),
            waiting=text("waiting"),
        )


WINDOW_FIELDS = {"used_percentage": 100.0, "resets_at": 2.0**40, "seen_at": 2.0**40}
"""A usage window's numbers and the most each may be."""


def _windows(value: t.Any) -> dict[str, dict[str, float]] | None:
    """Usage windows another host sent (or a record read here): at most 16, each its known numbers within
    bounds, named in at most 40 characters; anything else is left out."""
    if not isinstance(value, dict):
        return None
    out = {}
    for name, window in list(value.items())[:16]:
        if isinstance(name, str) and len(name) <= 40 and isinstance(window, dict):
            fields = {k: float(v) for k, most in WINDOW_FIELDS.items() if isinstance(v := window.get(k), (int, float))
                      and not isinstance(v, bool) and math.isfinite(v) and 0 <= v <= most}  # fmt: skip
            if "used_percentage" in fields and "resets_at" in fields:
                out[name] = fields
    return out


def usage_of(root: Path, identity: str | None, *, went_on: bool = False) -> dict[str, t.Any]:
    """The usage fields of a pane's row: its agent's credential, that credential's windows not yet past
    their reset (a reading says nothing after it), and the agent's ``limited`` mark and turn
    (supervisor.session.usage_windows; empty when none recorded). *went_on*: its Claude runs and its
    pane shows another state than limited, so a mark still standing is stale."""
    from claude_shepherd.supervisor.session import usage_windows as uw

    record = uw.read_agent(root, identity) if identity else None
    credential = record.get("credential") if record else None
    if not isinstance(credential, str):
        return {}
    reading = uw.read_credential(root, credential) or {}
    now = time.time()
    current = {
        name: w for name, w in (_windows(reading.get("windows")) or {}).items() if w["resets_at"] > now
    }
    out: dict[str, t.Any] = {"credential": credential, "usage_windows": current}
    mark = None if went_on else uw.limited_of(record)
    if mark is not None:
        until = mark.get("until")
        out["limited_until"] = uw.moment(until)
        out["limited_window"] = mark.get("window") if isinstance(mark.get("window"), str) else None
        slots = uw.read_slots(root).get(credential)
        agents = slots.get("agents") if isinstance(slots, dict) else None
        turn = agents.get(identity) if isinstance(agents, dict) else None
        out["resume_at"] = uw.moment(turn)
    return out


def pane_state(pane: PaneInfo, supervisor: pr.Proc | None) -> str:
    """What the border shows: the hooks' state, ``stopped`` (by ``fleet stop``) or ``exited N``."""
    if pane.dead:
        return STOPPED if pane.notify == STOPPED else f"exited {pane.exit_code}".strip()
    return pane.notify


def sessions_root_of(pane: PaneInfo, supervisor: pr.Proc | None, claude: pr.Proc | None) -> Path:
    """The sessions root this pane's agent uses."""
    for proc in (claude, supervisor):
        env = pr.env_of(proc) if proc is not None else {}
        if proc is not None and env.get(SESSIONS_DIR_ENV):
            return sessions_root(cwd=_cwd(proc) or pane.current_path or None, env=env)
    cwd = (_cwd(supervisor) if supervisor else None) or pane.current_path or None
    return sessions_root(cwd=cwd, env={})


def _cwd(proc: pr.Proc | None) -> str | None:
    return pr.cwd_of(proc) if proc else None  # gone, or not ours to read: the pane's path will do


def find_pane_session(root: Path, pane: PaneInfo, supervisor: pr.Proc | None) -> Found | None:
    identity = pane.identity
    if identity:
        found = sessions_on_pane(root, identity)
        if found:
            return found[0]
    if supervisor is not None:
        owned = sessions_owned_by(root, supervisor.pid, start_token(supervisor.pid))
        if owned:
            return owned[0]
    return None


def collect(
    server: FleetServer,
    sessions: t.Sequence[str] | None = None,
    listed: t.Sequence[PaneInfo] | None = None,
    worktrees: t.Mapping[str, tuple[str, Path]] | None = None,
) -> list[PaneStatus]:
    """The status of every pane of *sessions* (all sessions of the server when None); *listed*: the
    server's panes, when they were listed already; *worktrees*: the worktree the layout gives each
    agent (by pane identity: its name and the window's root), for the rows of agents not running."""
    listed = list_panes(server) if listed is None else listed
    panes = [p for p in listed if sessions is None or p.session in sessions]
    socket = next((p.socket_path for p in panes if p.socket_path), None) if panes else None
    table = pr.trees(p.pid for p in panes if not p.dead)  # only the panes' trees, not every process
    rows = pane_rows(socket or (server.socket_file() if panes else None), panes, table, worktrees)
    from claude_shepherd.fleet.dialogs import with_dialogs

    return with_dialogs(server, panes, rows, table)


def pane_rows(
    socket: str | None,
    panes: t.Iterable[PaneInfo],
    table: pr.Table,
    worktrees: t.Mapping[str, tuple[str, Path]] | None = None,
) -> list[PaneStatus]:
    """The status of *panes* of the server at *socket*, from one process-table snapshot."""
    rows: list[PaneStatus] = []
    deadline = time.monotonic() + STATUS_BUDGET
    for pane in sorted(panes, key=lambda p: (p.session, p.window_index, p.pane_index)):
        _, supervisor, claude = table.agent_of(socket, pane)
        if supervisor is not None:
            tree = _tree_of(supervisor, claude, deadline)
        else:  # no agent runs there: its worktree is where the layout puts it, in the window's repository
            name, root = (worktrees or {}).get(pane.identity or "", (None, None))
            tree = _tree_at(agent_tree(name, None, str(root) if root else None), deadline)
        root = sessions_root_of(pane, supervisor, claude)
        found = find_pane_session(root, pane, supervisor)
        spending = _spending(root, pane.identity)
        state = found.state if found else {}
        usage = state.get(F.CONTEXT_USAGE)
        if not isinstance(usage, (int, float)) or isinstance(usage, bool) or not 0 <= usage < math.inf:
            published = _number(pane.context)  # no session: the percent the status line published
            usage = published / 100 if published is not None else None
        overflowed = state.get(F.OVERFLOWED)
        rows.append(
            PaneStatus(
                session=pane.session,
                window=pane.window,
                label=pane.label,
                pane=pane.pane_id,
                pane_id=pane.identity,
                state=pane_state(pane, supervisor),
                supervisor_pid=supervisor.pid if supervisor else None,
                supervisor_alive=supervisor is not None,
                claude_pid=claude.pid if claude else None,
                session_dir=str(found.session_dir) if found else None,
                skill=_text(state.get(F.SKILL)),
                phase=_text(state.get(F.CURRENT_PHASE)),
                lifecycle=_text(state.get(F.LIFECYCLE)),
                overflowed=overflowed if isinstance(overflowed, bool) else None,
                context_usage=float(usage) if usage is not None else None,
                cost_usd=_first(spending.get("spent"), _number(pane.cost)),
                restarts=restart_count(pane.restarts),
                started_at=supervisor.create_time if supervisor else None,
                agent=pane.agent,
                spend_source=spending.get("source", "unknown")
                if spending.get("spent") is not None
                else "unknown",
                budget_usd=spending.get("usd"),
                budget_per=spending.get("per"),
                budget_scope=spending.get("scope"),
                budget_spent=spending.get("budget_spent"),
                paused=bool(spending.get("paused")),
                **usage_of(root, pane.identity, went_on=claude is not None and pane.notify != LIMITED),
                worktree=tree.name if tree else None,
                branch=tree.branch if tree else None,
                unsaved=tree.unsaved if tree else None,
            )
        )
    return rows


def _first(*values: float | None) -> float | None:
    return next((v for v in values if v is not None), None)


def _spending(root: Path, identity: str | None) -> dict[str, t.Any]:
    """The agent's spend by its ledger, the budget it is nearest to, and whether it is paused."""
    from claude_shepherd.supervisor.session import budgets, spend

    if not identity:
        return {}
    now = time.time()
    ledger = spend.read(root, identity)
    source = ledger.get("source") if ledger else None
    out: dict[str, t.Any] = {
        "spent": spend.spent(ledger),
        "source": source if source in (spend.MEASURED, spend.ESTIMATED) else spend.MEASURED,
    }
    held = budgets.limits(root, identity, pane=True, env={}, now=now)
    if held:
        nearest = max(held, key=lambda b: (b.spent or 0.0) / b.usd)
        out.update(usd=nearest.usd, per=nearest.per, scope=nearest.scope, budget_spent=nearest.spent)
    out["paused"] = bool(spend.gate_record(root, identity).get("paused"))
    return out


def _tree_of(supervisor: pr.Proc, claude: pr.Proc | None, deadline: float) -> AgentTree | None:
    """The running agent's worktree, its branch and what is unsaved in it."""
    asked = pr.env_of(supervisor).get(WORKTREE_ENV)
    return _tree_at(agent_tree(asked, _cwd(claude), _cwd(supervisor)), deadline)


def _tree_at(where: tuple[str, Path] | None, deadline: float) -> AgentTree | None:
    """What is unsaved in the worktree *where* (its name and path): one ``git status``, within the
    status's shared *deadline*."""
    if where is None:
        return None
    return unsaved_in(*where, timeout=min(STATUS_TIMEOUT, deadline - time.monotonic()))


def _number(raw: str) -> float | None:
    """A figure a pane option publishes (a percent, dollars); None when it is not a plain number."""
    return parse_decimal(raw, maximum=MAX_AMOUNT)


def _text(value: t.Any) -> str | None:
    return value if isinstance(value, str) and value else None


COLUMNS = ("PANE", "SUPERVISOR", "CLAUDE", "SESSION", "SKILL", "PHASE", "LIFECYCLE", "OVERFLOW", "CTX", "COST",
           "BUDGET", "STATE")  # fmt: skip
PIPED_WIDTH = 250
"""Columns of a table printed to a pipe: it is not cut to 80, a row per pane must stay whole."""


def cells(row: PaneStatus, trees: bool = False) -> list[str]:
    """*row*'s cells under :data:`COLUMNS` (and WORKTREE, with *trees*), made printable."""
    name = f"{row.window}:{row.label}" if row.label else f"{row.window}:{row.pane} (no label)"
    supervisor = str(row.supervisor_pid) if row.supervisor_alive else "—"
    context = f"{row.context_usage * 100:.0f}%" if row.context_usage is not None else "—"
    overflow = {True: "yes", False: "no", None: "—"}[row.overflowed]
    shown = (
        name,
        supervisor,
        str(row.claude_pid) if row.claude_pid else "—",
        Path(row.session_dir).name if row.session_dir else "—",
        row.skill or "—",
        row.phase or "—",
        row.lifecycle or "—",
        overflow,
        context,
        f"${row.cost_usd:.2f}" if row.cost_usd is not None else "—",
        budget_text(row),
        shown_state(row),
        *((worktree_cell(row),) if trees else ()),
    )
    return [printable(cell) for cell in shown]


def render(rows: list[PaneStatus], hosts: t.Sequence[str] | None = None) -> None:
    """A table for people: drawn by rich (colours, the terminal's width), or, to a pipe, by
    :func:`plain_table` when it draws exactly what rich would (rich then stays unloaded).

    Every cell is :func:`printable` text (as a :class:`rich.text.Text`, never markup): agents
    name their phases and sessions, and neither markup (``[/x]``) nor a terminal escape of
    theirs may reach the person's screen.
    """
    trees = any(row.worktree for row in rows)  # the WORKTREE column only where an agent has one
    table = [
        [*([printable(hosts[i])] if hosts is not None else []), *cells(row, trees)]
        for i, row in enumerate(rows)
    ]
    header = [*(["HOST"] if hosts is not None else []), *COLUMNS, *(["WORKTREE"] if trees else [])]
    piped = not sys.stdout.isatty() and not any(os.environ.get(name) for name in RICH_COLOUR_ENV)
    lines = plain_table(header, table) if piped else None
    if lines is not None:
        sys.stdout.write("".join(f"{line}\n" for line in lines))
        sys.stdout.flush()
        return
    from rich.console import Console  # a terminal only, not a pipe, --json or a relay (docs/HOT_CORE.md)
    from rich.table import Table
    from rich.text import Text

    drawn = Table(box=None, header_style="bold", pad_edge=False)
    for column in header:
        drawn.add_column(column, no_wrap=column in ("HOST", "PANE", "SUPERVISOR", "CLAUDE", "CTX", "COST"))
    offset = 1 if hosts is not None else 0
    for row, texts in zip(rows, table):
        styled = [Text(cell) for cell in texts]
        styled[offset + 7].stylize("red" if row.overflowed else "")
        styled[offset + 11].stylize(state_style(row.state))
        drawn.add_row(*styled)
    Console(highlight=False, width=None if sys.stdout.isatty() else PIPED_WIDTH).print(drawn)


RICH_COLOUR_ENV = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")
"""What makes rich draw a pipe as a terminal: the table is then rich's to draw."""

_PLAIN = frozenset(chr(c) for c in range(0x20, 0x7F)) | {"—"}


def plain_table(header: list[str], rows: list[list[str]]) -> list[str] | None:
    """The lines rich draws for this table on a pipe (no box, two spaces between columns, each cell
    padded to its column's width), or None where rich might draw otherwise: a character whose width
    on a screen is not one column, or a table wider than :data:`PIPED_WIDTH` (rich wraps it)."""
    if any(not _PLAIN.issuperset(cell) for row in rows for cell in row):
        return None
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows)]
    if sum(widths) + 2 * (len(widths) - 1) > PIPED_WIDTH:
        return None
    return ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)) for line in (header, *rows)]


def budget_text(row: PaneStatus) -> str:
    """``$1.20/$5.00 a day (pane)``: what was measured against the nearest budget; — without one."""
    if row.budget_usd is None:
        return "—"
    spent = f"${row.budget_spent:.2f}" if row.budget_spent is not None else "—"
    per = {"day": " a day", "week": " a week"}.get(row.budget_per or "", "")
    return f"{spent}/${row.budget_usd:.2f}{per} ({row.budget_scope})"


def shown_state(row: PaneStatus, now: float | None = None) -> str:
    """The STATE cell: the pane's state, or ``limited until 15:47`` (and its turn after the reset);
    once the window reopened, ``limited, reopened 15:47`` and the turn it waits for (never an
    "until" in the past)."""
    if row.limited_until is None or row.state.startswith(("exited", "stopped")):
        return row.state or "—"
    from claude_shepherd.supervisor.session.usage_windows import clock

    now = time.time() if now is None else now
    if now < row.limited_until:
        text = f"limited until {clock(row.limited_until)}"
        if row.resume_at is not None and row.resume_at > row.limited_until + 0.5:
            text += f", goes on {clock(row.resume_at)}"
        return text
    text = f"limited, reopened {clock(row.limited_until)}"
    if row.resume_at is not None and row.resume_at > now:
        return text + f", goes on {clock(row.resume_at)}"
    return text + ", waiting for its turn"


def dialog_line(rows: t.Sequence[PaneStatus], fleet: str) -> list[str]:
    """Who waits at a dialog of Claude Code's, at which, and how to answer it."""
    waiting = [row for row in rows if row.waiting]
    if not waiting:
        return []
    first = waiting[0]
    names = ", ".join(f"{row.label or row.pane} ({row.waiting})" for row in waiting)
    return [
        f"  waiting at a dialog, not yet running: {names}; answer it in the pane: "
        f"`fleet attach {fleet or first.session} --pane {first.label or first.pane}`"
    ]


def usage_lines(rows: t.Sequence[PaneStatus]) -> list[str]:
    """Per credential, each usage window's use and reset; then what the fleet waits for, and when."""
    from claude_shepherd.supervisor.session.usage_windows import clock, shown_credential

    lines = []
    seen: dict[str, dict[str, dict[str, float]]] = {}
    for row in rows:
        if row.credential and row.credential not in seen:
            seen[row.credential] = row.usage_windows or {}
    for credential, windows in seen.items():
        users = sum(1 for row in rows if row.credential == credential)
        shown = (
            ", ".join(
                f"{name} {w['used_percentage']:g}% (resets {clock(w['resets_at'])})"
                for name, w in sorted(windows.items())
            )
            or "no reading (an API key, or no reply yet)"
        )
        lines.append(f"  usage {shown_credential(credential)} ({users} agent(s)): {shown}")
    parked = [row for row in rows if row.limited_until is not None]
    if parked:
        lines.append(waiting_line(parked))
    return lines


def waiting_line(parked: t.Sequence[PaneStatus]) -> str:
    """Who waits for a usage window, and when each goes on: an agent has its time once its slot is
    taken (when Claude's own auto-continue asks, 30-90 s after the reset, in any order); before
    that, only the spacing is known, so no two agents are said to go on at the same minute."""
    from claude_shepherd.supervisor.session.usage_windows import clock, resume_interval

    reopen = max(row.limited_until or 0 for row in parked)
    until = f"until {clock(reopen)}" if time.time() < reopen else f"that reopened at {clock(reopen)}"
    slotted = sorted((row for row in parked if row.resume_at), key=lambda r: r.resume_at or 0)
    waiting = [row for row in parked if not row.resume_at]
    turns = [f"{row.label or row.pane} {clock(row.resume_at or 0)}" for row in slotted]
    if waiting:
        names = ", ".join(row.label or row.pane for row in waiting)
        spacing = f"{resume_interval():g} s apart, in the order Claude asks"
        turns.append(f"then {names}, {spacing}" if slotted else f"from {clock(reopen)}, {spacing}: {names}")
    return (
        f"  waiting: {len(parked)} agent(s) at a usage limit {until}; "
        f"they go on one at a time{':' if slotted else ''} {', '.join(turns)}"
    )


def worktree_cell(row: PaneStatus) -> str:
    """The agent's worktree branch (its name when detached), ``*`` when work in it is not committed,
    ``?`` when that was not known in time."""
    if row.worktree is None:
        return "—"
    mark = "?" if row.unsaved is None else "*" if row.unsaved else ""
    return f"{row.branch or row.worktree}{mark}"


def state_style(state: str) -> str:
    """The colour of a pane state in a table."""
    if state.startswith("exited") or state == UNKNOWN:
        return "red"
    return {"error": "bold red", "needs-you": "bold green", "working": "blue", "done": "dim",
            "paused": "bold yellow", "limited": "yellow", "dialog": "bold green"}.get(state.split(" ")[0], "")  # fmt: skip
