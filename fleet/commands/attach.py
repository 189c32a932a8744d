"""``fleet attach``: show the person the fleet, with an agent's pane selected."""

from __future__ import annotations

import typing as t

import typer

from claude_shepherd.fleet.commands.options import HereOpt, LayoutArg, SocketOpt
from claude_shepherd.fleet.output import printer_of


def attach(
    ctx: typer.Context,
    layout: LayoutArg = None,
    pane: t.Annotated[
        str | None, typer.Option("--pane", metavar="LABEL", help="Select this agent's pane.")
    ] = None,
    socket: SocketOpt = None,
    here: HereOpt = False,
) -> None:
    """Attach to the fleet (switch to it inside its tmux; nested inside another), with an agent's pane selected.

    Example: fleet attach fleet-2x2 --pane SDK
    """
    from claude_shepherd.fleet.attach import hand_over
    from claude_shepherd.fleet.resolve import resolve  # lazy, as in every verb: keeps `fleet --help` fast

    out = printer_of(ctx)
    report = resolve(out, layout, socket, verb="attach", here=here).attach(pane)
    out.show(report)
    hand_over(report)
