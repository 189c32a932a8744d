"""``fleet boot enable|disable|status``: every fleet back after a reboot, without a person."""

from __future__ import annotations

import typer

from claude_shepherd.fleet.output import printer_of

app = typer.Typer(
    name="boot",
    help="Start every fleet that was running at boot (a systemd user unit, or a launchd agent on macOS).",
    epilog="Example: fleet boot enable",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@app.command()
def enable(ctx: typer.Context) -> None:
    """Write the unit that runs this installation's `fleet start --all` at boot (again: it names this
    installation after an upgrade), and enable it; what a person stopped stays stopped.

    Example: fleet boot enable
    """
    from claude_shepherd.fleet import boot  # lazy, as in every verb: keeps `fleet --help` fast

    boot.enable(printer_of(ctx).say)


@app.command()
def disable(ctx: typer.Context) -> None:
    """Remove the unit; the fleets running now are left alone.

    Example: fleet boot disable
    """
    from claude_shepherd.fleet import boot

    boot.disable(printer_of(ctx).say)


@app.command()
def status(ctx: typer.Context) -> None:
    """Whether boot start is enabled, whether the unit runs this installation, and what its last
    `fleet start --all` started.

    Example: fleet boot status
    """
    from claude_shepherd.fleet import boot

    say = printer_of(ctx).say
    for line in boot.status_lines():
        say(line)
