"""``fleet status``: one row per pane of the fleet, as a table or as JSON."""

from __future__ import annotations

import typing as t

import typer

from claude_shepherd.fleet.commands.options import LayoutArg, SocketOpt
from claude_shepherd.fleet.output import printer_of
from claude_shepherd.supervisor.errors import ShepherdError


def status(
    ctx: typer.Context,
    layout: LayoutArg = None,
    as_json: t.Annotated[bool, typer.Option("--json", help="One JSON object per pane, in a list.")] = False,
    socket: SocketOpt = None,
) -> None:
    """One row per pane: label, supervisor, Claude, session, skill, phase, lifecycle, context, cost, state.

    Example: fleet status fleet-2x2 --json
    """
    from claude_shepherd.fleet.resolve import resolve  # lazy, as in every verb: keeps `fleet --help` fast

    out = printer_of(ctx)
    try:
        report = resolve(out, layout, socket, verb="status").status()
    except ShepherdError as exc:
        if not as_json:
            raise
        # --json always prints JSON: a script reading it needs no second parser for errors.
        out.document_line({"error": str(exc), "exit_code": exc.exit_code})
        raise typer.Exit(exc.exit_code) from None
    out.status(report, as_json)
    failure = report.failure()
    if (
        failure is not None
    ):  # after --json rows, the error's line goes to stderr only: a script reads one document
        raise failure
