"""``fleet status``: one row per pane of the fleet, as a table or as JSON."""

from __future__ import annotations

import typing as t

import typer

from claude_shepherd.fleet.commands.options import LayoutArg, SocketOpt
from claude_shepherd.fleet.commands.quick import show
from claude_shepherd.fleet.output import printer_of


def status(
    ctx: typer.Context,
    layout: LayoutArg = None,
    as_json: t.Annotated[bool, typer.Option("--json", help="One JSON object per pane, in a list.")] = False,
    socket: SocketOpt = None,
) -> None:
    """One row per pane: label, supervisor, Claude, session, skill, phase, lifecycle, context, cost, state.

    Example: fleet status fleet-2x2 --json
    """
    code = show(printer_of(ctx), layout, socket, as_json)
    if code:
        raise typer.Exit(code)
