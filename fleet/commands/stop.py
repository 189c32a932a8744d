"""``fleet stop``: stop every agent (or some) so that no process is left, and report each pane."""

from __future__ import annotations

import typer

from claude_shepherd.fleet.commands.options import (
    GraceOpt,
    HereOpt,
    LayoutArg,
    MachineOpt,
    PaneOpt,
    SocketOpt,
)
from claude_shepherd.fleet.output import printer_of


def stop(
    ctx: typer.Context,
    layout: LayoutArg = None,
    grace: GraceOpt = 10.0,
    socket: SocketOpt = None,
    pane: PaneOpt = None,
    as_json: MachineOpt = False,
    here: HereOpt = False,
) -> None:
    """Stop every agent (SIGTERM, grace, SIGKILL) and close the fleet's tmux session; with --pane,
    only those agents (their panes stay, and `fleet start` resumes them).

    Example: fleet stop fleet-2x2 --pane SDK
    """
    from claude_shepherd.fleet.resolve import resolve  # lazy, as in every verb: keeps `fleet --help` fast
    from claude_shepherd.supervisor.errors import NotRunningError

    out = printer_of(ctx).use_json(as_json)
    # stopping what is stopped succeeds, as systemctl stop does
    fleet = resolve(out, layout, socket, verb="stop", here=here, lenient=(NotRunningError,))
    out.show(fleet.stop(grace, pane))
