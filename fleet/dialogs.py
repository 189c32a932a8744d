"""A Claude that waits at one of Claude Code's startup dialogs is not running: what it waits for.

Claude Code asks, before it starts, whether the folder is trusted (and, once, about an API key found
in the environment, Bypass Permissions mode, the theme, a project's MCP servers). Until it is
answered no hook runs and no status line is drawn, so the hooks cannot say so; the pane's screen
does. The SessionStart hook marks the pane with its Claude's pid (``@pane_claude``,
:func:`claude_shepherd.hooks.session_start.mark_up`): a Claude so marked is past them, and only the
screen of a pane whose Claude is not is read — all such panes in one tmux call.

The words are Claude Code 2.1.328's, as tests/e2e saw them in a scratch HOME that had not answered
them (and the trust dialog's older wording).
"""

from __future__ import annotations

import dataclasses
import typing as t

from claude_shepherd.fleet.tmux import NEXT, FleetServer, PaneInfo
from claude_shepherd.supervisor.tmux_names import DIALOG, FIELD_SEP

if t.TYPE_CHECKING:
    from claude_shepherd.fleet import procs as pr
    from claude_shepherd.fleet.pane_status import PaneStatus

TRUST_MARKS = (
    "Accessing workspace:",
    "Is this a project you created or one you trust",
    "trust the files in this folder",
)
"""The trust dialog: 2.1.328's heading and question, and the question of the versions before it."""
DIALOGS: tuple[tuple[str, str], ...] = (
    ("Detected a custom API key in your environment", "API key dialog"),
    ("running in Bypass Permissions mode", "Bypass Permissions dialog"),
    ("Choose the text style that looks best with your terminal", "first-run setup (theme)"),
    ("New MCP server found in", "MCP server dialog"),
)
"""What the screen shows, and what the agent waits at."""
ANY_DIALOG = "Enter to confirm · Esc to cancel"
"""The line under each of them (and under another of its dialogs a later version may add)."""
MARK = FIELD_SEP + "pane "
"""Printed before each pane's screen in one tmux call (no screen line has the unit separator)."""


def on_screen(lines: t.Sequence[str]) -> str | None:
    """The dialog *lines* (a pane's screen) show, as ``fleet`` says it; None when none."""
    for at, line in enumerate(lines):
        if any(mark in line for mark in TRUST_MARKS):
            folder = next(
                (later.strip() for later in lines[at + 1 :] if later.strip().startswith(("/", "~"))), None
            )
            return f"trust dialog for {folder}" if folder else "trust dialog"
    text = "\n".join(lines)
    named = next((name for mark, name in DIALOGS if mark in text), None)
    if named is not None:
        return named
    return "a dialog of Claude Code's" if ANY_DIALOG in text else None


def unproven(pane: PaneInfo, claude: pr.Proc | None) -> bool:
    """Does *pane* run a Claude that has not yet reached its session (no SessionStart marked it)?"""
    return claude is not None and not pane.dead and pane.claude_up != str(claude.pid)


def screens(server: FleetServer, pane_ids: t.Sequence[str]) -> dict[str, list[str]]:
    """The visible screen of each of *pane_ids* (wrapped lines joined), in one tmux call; a pane
    that went meanwhile is left out."""
    if not pane_ids:
        return {}
    args: list[t.Any] = []
    for pane_id in pane_ids:
        args += [*([NEXT] if args else []), "display-message", "-p", f"{MARK}{pane_id}"]
        args += [NEXT, "capture-pane", "-p", "-J", "-t", pane_id]
    result = server.cmd(*args)
    if result.returncode != 0 and len(pane_ids) > 1:  # one pane gone stops the rest: ask each alone
        return {k: v for pane_id in pane_ids for k, v in screens(server, [pane_id]).items()}
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in result.stdout:
        if line.startswith(MARK):
            current = out.setdefault(line[len(MARK) :], [])
        elif current is not None:
            current.append(line)
    return out


def waiting(server: FleetServer, unproven_panes: t.Sequence[str]) -> dict[str, str]:
    """What each of *unproven_panes* waits at, for those whose screen shows a dialog."""
    found = {}
    for pane_id, lines in screens(server, unproven_panes).items():
        dialog = on_screen(lines)
        if dialog is not None:
            found[pane_id] = dialog
    return found


def with_dialogs(
    server: FleetServer, panes: t.Sequence[PaneInfo], rows: list[PaneStatus], table: pr.Table
) -> list[PaneStatus]:
    """*rows* (``fleet status``'s, of *panes*) with state ``dialog`` where the agent's Claude waits at
    one, and what it waits for (``waiting``)."""
    by_id = {pane.pane_id: pane for pane in panes}
    looked = []
    for row in rows:
        pane = by_id.get(row.pane)
        claude = table.by_pid.get(row.claude_pid) if row.claude_pid else None
        if pane is not None and unproven(pane, claude):
            looked.append(row.pane)
    if not looked:
        return rows
    found = waiting(server, looked)
    return [
        dataclasses.replace(row, state=DIALOG, waiting=found[row.pane]) if row.pane in found else row
        for row in rows
    ]
