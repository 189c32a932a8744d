"""``fleet host add``: set up another machine to run its part of a fleet."""

from __future__ import annotations

import typing as t

import typer

from claude_shepherd.fleet.output import printer_of

app = typer.Typer(
    name="host",
    help="Hosts a fleet spans: a layout window with `host: NAME` runs on NAME, in that host's own fleet.",
    epilog="Example: fleet host add dev@buildbox",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@app.command()
def add(
    ctx: typer.Context,
    host: t.Annotated[
        str, typer.Argument(metavar="HOST", help="[user@]name[:port], or a name from ~/.ssh/config.")
    ],
    python: t.Annotated[
        str, typer.Option("--python", metavar="PROGRAM", help="Python 3.11+ on that host, to make its venv.")
    ] = "python3",
) -> None:
    """Install this claude-shepherd (same version, same dependencies) into a venv on HOST over SSH, and
    its hooks there; check tmux and Python first.

    Example: fleet host add dev@buildbox
    """
    from claude_shepherd.fleet.hosts.install import add as install  # lazy: keeps `fleet --help` fast

    install(host, python, printer_of(ctx).say)
