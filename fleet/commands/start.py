"""``fleet start``: build the layout's fleet, or reconcile the running one, and say which agents run."""

from __future__ import annotations

import typing as t

import typer

from claude_shepherd.fleet.commands.options import LayoutArg, MachineOpt, SocketOpt, WaitOpt
from claude_shepherd.fleet.output import printer_of


def start(
    ctx: typer.Context,
    layout: LayoutArg = None,
    no_attach: t.Annotated[
        bool, typer.Option("--no-attach", help="Do not attach, even from a terminal.")
    ] = False,
    socket: SocketOpt = None,
    wait: WaitOpt = None,
    as_json: MachineOpt = False,
    every: t.Annotated[
        bool,
        typer.Option(
            "--all",
            help="Every fleet started here that was running (not those a person stopped): what a boot runs.",
        ),
    ] = False,
) -> None:
    """Build the layout's fleet, or reconcile the running one (respawn dead agent panes); say `running`
    only for agents seen running, and fail naming each one that is not.

    Example: fleet start tmuxinator/fleet-2x2.yml --no-attach
    """
    from claude_shepherd.fleet.attach import hand_over
    from claude_shepherd.fleet.resolve import resolve  # lazy, as in every verb: keeps `fleet --help` fast

    out = printer_of(ctx).use_json(as_json)
    if every:
        from claude_shepherd.fleet.start_all import start_all
        from claude_shepherd.supervisor.errors import UsageError

        if layout is not None or socket is not None:
            raise UsageError("--all starts every fleet started here; give no LAYOUT nor --socket with it")
        failure = start_all(out.say, wait).failure()  # each fleet's line is said as it is known
        if failure is not None:
            raise failure
        return
    report = resolve(out, layout, socket, verb="start").start(wait=wait, attach=not no_attach)
    out.show(report)
    if report.then is not None:
        hand_over(report.then)
