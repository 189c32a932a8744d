"""What the ``fleet`` verbs share: their typer arguments and options.

Only typer and small modules are imported here at module level: every verb module imports this,
and ``fleet --help`` imports every verb module.
"""

from __future__ import annotations

import typing as t

import typer

from claude_shepherd.fleet.output import PROG
from claude_shepherd.supervisor import __version__
from claude_shepherd.supervisor.env import FLEET_SOCKET_ENV, FLEET_START_WAIT_ENV, FLEET_STOP_GRACE_ENV

LayoutArg = t.Annotated[
    str | None,
    typer.Argument(
        metavar="LAYOUT",
        help="A layout file, or a name in ./tmuxinator/, ~/.config/tmuxinator/, ~/.tmuxinator/ "
        "or of a fleet started here (fleet ls) (default: $FLEET_LAYOUT, else 'fleet'); - reads one "
        "host's part as JSON from stdin.",
        show_default=False,
    ),
]
GraceOpt = t.Annotated[
    float,
    typer.Option("--grace", envvar=FLEET_STOP_GRACE_ENV, metavar="S", min=0,
                 help="Seconds agents get to stop after SIGTERM before they are killed."),
]  # fmt: skip
PaneOpt = t.Annotated[
    list[str] | None,
    typer.Option("--pane", metavar="LABEL", help="Only the agent of this pane (repeatable)."),
]
WaitOpt = t.Annotated[
    float | None,
    typer.Option("--wait", envvar=FLEET_START_WAIT_ENV, metavar="S", min=0, show_default=False,
                 help="Seconds to wait for each started agent's supervisor and Claude to run (default 10; "
                      "0: do not check)."),
]  # fmt: skip
SocketOpt = t.Annotated[
    str | None,
    typer.Option("--socket", "-L", envvar=FLEET_SOCKET_ENV, metavar="NAME",
                 help="The fleet's tmux socket (fleet or fleet-NAME), instead of the layout's."),
]  # fmt: skip


HereOpt = t.Annotated[
    bool,
    typer.Option("--here", hidden=True, help="This machine's fleet of that name only, never the other hosts "
                                             "of a fleet that spans hosts (what they are asked with)."),
]  # fmt: skip
MachineOpt = t.Annotated[
    bool,
    typer.Option("--json", help="Say it as one JSON object (exit_code, lines, error): for scripts, and for "
                                "`fleet` on another host."),
]  # fmt: skip


def _version(value: bool) -> None:
    if value:
        typer.echo(f"{PROG} {__version__}")
        raise typer.Exit()


VersionOpt = t.Annotated[
    bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
]


def root(version: VersionOpt = False) -> None:
    """tmux layouts of supervised Claude agents (tmuxinator YAML, one labelled agent per pane)."""
