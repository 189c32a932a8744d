"""``fleet logs``: an agent's claude-run log, then its screen; ``-f`` keeps printing new lines of both."""

from __future__ import annotations

import typing as t

import typer

from claude_shepherd.fleet.commands.options import HereOpt, LayoutArg, SocketOpt
from claude_shepherd.fleet.output import printer_of


def logs(
    ctx: typer.Context,
    layout: LayoutArg = None,
    pane: t.Annotated[str, typer.Option("--pane", metavar="LABEL", help="The agent's pane.")] = ...,  # type: ignore[assignment]
    lines: t.Annotated[
        int, typer.Option("-n", "--lines", metavar="N", min=1, help="How many lines of each.")
    ] = 50,
    follow: t.Annotated[
        bool, typer.Option("-f", "--follow", help="Keep printing new lines of both.")
    ] = False,
    socket: SocketOpt = None,
    here: HereOpt = False,
) -> None:
    """An agent's claude-run log (its starts, resumes, restarts and exits, kept across restarts), then its screen.

    Example: fleet logs fleet-2x2 --pane SDK -n 200 -f
    """
    from claude_shepherd.fleet.resolve import resolve  # lazy, as in every verb: keeps `fleet --help` fast

    out = printer_of(ctx)
    out.show(resolve(out, layout, socket, verb="logs", here=here).logs(pane, lines, follow))
