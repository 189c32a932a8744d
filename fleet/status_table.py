"""``fleet status`` for people: the table, its cells, and the lines under it (usage windows, dialogs).

The watch and the web page show a row's state as the table does (:func:`shown_state`,
:func:`state_style`). Every cell is printable text: agents name their phases and sessions.
"""

from __future__ import annotations

import os
import sys
import time
import typing as t
from pathlib import Path

from claude_shepherd.fleet.pane_status import PaneStatus
from claude_shepherd.supervisor.printable import printable
from claude_shepherd.supervisor.tmux_names import UNKNOWN

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
    from claude_shepherd.supervisor.session.credentials import shown_credential
    from claude_shepherd.supervisor.session.usage_windows import clock

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
