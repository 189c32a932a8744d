"""``fleet drain``: before a planned reboot, each agent reaches a safe point, then the fleet stops and is
kept to come back at the next ``fleet start --all``."""

from __future__ import annotations

import typing as t

import typer

from claude_shepherd.fleet.commands.options import GraceOpt, HereOpt, LayoutArg, SocketOpt
from claude_shepherd.fleet.output import printer_of


def drain(
    ctx: typer.Context,
    layout: LayoutArg = None,
    deadline: t.Annotated[
        float,
        typer.Option("--deadline", metavar="S", min=0, help="Seconds agents get to end their turn, at most."),
    ] = 300.0,
    dehydrate: t.Annotated[
        bool,
        typer.Option("--dehydrate", help="Ask each agent to save its handover (session dehydrate) first."),
    ] = False,
    grace: GraceOpt = 10.0,
    socket: SocketOpt = None,
    here: HereOpt = False,
) -> None:
    """Let each agent finish its turn (or, with --dehydrate, save its handover), then stop the fleet and
    keep it to come back at the next `fleet start --all`; an agent still working at the deadline is
    stopped anyway and resumes its conversation then.

    Example: fleet drain agents-2x2 --deadline 600   (--dehydrate: each saves its handover first)
    """
    from claude_shepherd.fleet.resolve import resolve  # lazy, as in every verb: keeps `fleet --help` fast

    out = printer_of(ctx)
    out.show(resolve(out, layout, socket, verb="stop", here=here).drain(grace, deadline, dehydrate))
