"""``fleet usage``: the usage windows the fleet read, per credential; ``--clear`` forgets one."""

from __future__ import annotations

import typing as t

import typer

from claude_shepherd.fleet.output import printer_of

LayoutArg = t.Annotated[
    str | None,
    typer.Argument(
        metavar="LAYOUT",
        help="A layout file, or a name in ./tmuxinator/, ~/.config/tmuxinator/, ~/.tmuxinator/ or of a fleet "
        "started here (fleet ls): its sessions roots (default: the current directory's).",
    ),
]


def usage(
    ctx: typer.Context,
    layout: LayoutArg = None,
    clear: t.Annotated[
        str | None,
        typer.Option(
            "--clear",
            metavar="CREDENTIAL",
            help="Forget this credential's reading (as listed, e.g. ~/.claude; all: every one) and let the "
            "agents it holds go on: each waiting claude-run starts Claude within 5 s.",
        ),
    ] = None,
) -> None:
    """Usage windows per credential (the latest reading, its reset, the agents a limit holds); --clear
    forgets a reading that is wrong or stale, and the waits it caused.

    Without LAYOUT: the sessions root of the current directory.

    Example: fleet usage fleet-2x2   (then --clear ~/.claude, say, to forget that reading)
    """
    # lazy, as in every verb: keeps `fleet --help` fast
    from claude_shepherd.fleet import usage as fleet_usage
    from claude_shepherd.supervisor.errors import ShepherdError

    out = printer_of(ctx)
    roots = fleet_usage.roots_of(layout)
    if clear is None:
        lines = fleet_usage.readings(roots)
        for line in lines or [
            "No usage window read yet (an API key has none; a subscription's comes with a reply)."
        ]:
            out.say(line)
        return
    cleared, held = fleet_usage.clear(roots, clear)
    if not cleared:
        known = ", ".join(line.split(":", 1)[0] for line in fleet_usage.readings(roots)) or "none"
        raise ShepherdError(f"no reading of {clear!r} is kept; the credentials read: {known} (or all)")
    out.say(
        f"Cleared the reading of {', '.join(cleared)}; {held} agent(s) it held go on (a waiting claude-run "
        "within 5 s; an interactive Claude when it continues by itself)."
    )
