"""``fleet restart``: stop agents gracefully and start them again, resuming their conversations."""

from __future__ import annotations

import typer

from claude_shepherd.fleet.commands.options import (
    GraceOpt,
    HereOpt,
    LayoutArg,
    MachineOpt,
    PaneOpt,
    SocketOpt,
    WaitOpt,
)
from claude_shepherd.fleet.output import printer_of


def restart(
    ctx: typer.Context,
    layout: LayoutArg = None,
    grace: GraceOpt = 10.0,
    socket: SocketOpt = None,
    pane: PaneOpt = None,
    wait: WaitOpt = None,
    as_json: MachineOpt = False,
    here: HereOpt = False,
) -> None:
    """Stop agents gracefully and resume their conversations; --pane LABEL (repeatable) for some, else all.

    Example: fleet restart fleet-2x2 --pane SDK
    """
    from claude_shepherd.fleet.resolve import resolve  # lazy, as in every verb: keeps `fleet --help` fast

    out = printer_of(ctx).use_json(as_json)
    out.show(resolve(out, layout, socket, verb="restart", here=here).restart(grace, pane, wait))
