"""``fleet status``: one row per pane, from tmux, the process table and each pane's session.

A pane's session is found the way its agent finds it — by the fleet pane id
(``session:window:label``), then by the supervisor's PID — in the sessions
root the agent uses (``CLAUDE_SESSIONS_DIR`` of its Claude or supervisor,
else ``sessions/`` of the pane's project). Nothing is written but the lookup
cache (:mod:`claude_shepherd.supervisor.session.index`) when it was stale.
"""

from __future__ import annotations

import math
import time
import typing as t
from pathlib import Path

from claude_shepherd.fleet import procs as pr
from claude_shepherd.fleet.pane_status import MAX_AMOUNT, PaneStatus, checked_windows
from claude_shepherd.fleet.tmux import FleetServer, PaneInfo, list_panes
from claude_shepherd.fleet.worktree_status import STATUS_BUDGET, AgentTree, agent_tree, unsaved_in
from claude_shepherd.fleet.worktree_work import STATUS_TIMEOUT
from claude_shepherd.supervisor.claude_run.fleet_pane import restart_count
from claude_shepherd.supervisor.env import SESSIONS_DIR_ENV, WORKTREE_ENV
from claude_shepherd.supervisor.session.fields import F
from claude_shepherd.supervisor.session.identity import start_token
from claude_shepherd.supervisor.session.lookup import Found, sessions_on_pane, sessions_owned_by
from claude_shepherd.supervisor.session.numbers import parse_decimal
from claude_shepherd.supervisor.session.paths import sessions_root
from claude_shepherd.supervisor.tmux_names import LIMITED, STOPPED


def usage_of(root: Path, identity: str | None, *, went_on: bool = False) -> dict[str, t.Any]:
    """The usage fields of a pane's row: its agent's credential, that credential's windows not yet past
    their reset (a reading says nothing after it), and the agent's ``limited`` mark and turn
    (supervisor.session.usage_windows; empty when none recorded). *went_on*: its Claude runs and its
    pane shows another state than limited, so a mark still standing is stale."""
    from claude_shepherd.supervisor.session import usage_windows as uw
    from claude_shepherd.supervisor.session.resume_slots import read_slots
    from claude_shepherd.supervisor.session.usage_records import moment

    record = uw.read_agent(root, identity) if identity else None
    credential = record.get("credential") if record else None
    if not isinstance(credential, str):
        return {}
    reading = uw.read_credential(root, credential)
    now = time.time()
    current = {
        name: w
        for name, w in (checked_windows(reading["windows"] if reading else None) or {}).items()
        if w["resets_at"] > now
    }
    out: dict[str, t.Any] = {"credential": credential, "usage_windows": current}
    mark = None if went_on else uw.limited_of(record)
    if mark is not None:
        until = mark.get("until")
        out["limited_until"] = moment(until)
        out["limited_window"] = mark.get("window") if isinstance(mark.get("window"), str) else None
        slots = read_slots(root).get(credential)
        agents = slots.get("agents") if isinstance(slots, dict) else None
        turn = agents.get(identity) if isinstance(agents, dict) else None
        out["resume_at"] = moment(turn)
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
    from claude_shepherd.supervisor.session import budget_records, budgets, spend

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
    out["paused"] = budget_records.paused(root, identity) is not None
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


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
