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
    from claude_shepherd.fleet import known
    from claude_shepherd.fleet.drain import drain as bring_to_safe_points
    from claude_shepherd.fleet.local import LocalFleet
    from claude_shepherd.fleet.resolve import resolve  # lazy, as in every verb: keeps `fleet --help` fast
    from claude_shepherd.supervisor.errors import UsageError

    out = printer_of(ctx)
    fleet = resolve(out, layout, socket, verb="stop", here=here)
    if not isinstance(fleet, LocalFleet):
        raise UsageError("fleet drain drains this machine's fleets; on each host of a fleet across hosts run "
                         "`fleet drain NAME --here` there")  # fmt: skip
    where = fleet.where
    sessions = where.running_sessions(where.server())
    bring_to_safe_points(fleet, deadline, dehydrate, out.say)
    report = fleet.stop(grace, None)
    kept = [s for s in sessions if known.mark(where.socket, s, wanted=True) or _wanted(where.socket, s)]
    if kept:
        out.say(f"Kept to come back: {', '.join(kept)}; `fleet start --all` (or a boot, `fleet boot enable`) "
                "starts each agent again in its own conversation.")  # fmt: skip
    out.show(report)


def _wanted(socket: str, name: str) -> bool:
    from claude_shepherd.fleet import known

    record = known.record(socket, name)
    return record is not None and record.wanted
