"""``fleet doctor``: find (and with --fix repair) orphans, stale bindings, duplicate labels, missing hooks."""

from __future__ import annotations

import typing as t

import typer

from claude_shepherd.fleet.commands.options import LayoutArg, MachineOpt, SocketOpt
from claude_shepherd.fleet.output import printer_of


def doctor(
    ctx: typer.Context,
    layout: LayoutArg = None,
    fix: t.Annotated[bool, typer.Option("--fix", help="Repair what was found.")] = False,
    socket: SocketOpt = None,
    as_json: MachineOpt = False,
) -> None:
    """Find orphaned agents, stale bindings, duplicate labels, missing hooks or Claude Code (a stale index is refreshed).

    Example: fleet doctor fleet-2x2 --fix
    """
    from claude_shepherd.fleet.resolve import resolve  # lazy, as in every verb: keeps `fleet --help` fast
    from claude_shepherd.supervisor.errors import NotRunningError, UsageError

    out = printer_of(ctx).use_json(as_json)
    # none or several running: doctor looks at every fleet
    fleet = resolve(out, layout, socket, verb="doctor", lenient=(NotRunningError, UsageError))
    out.show(fleet.doctor(fix))
