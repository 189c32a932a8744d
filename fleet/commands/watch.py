"""``fleet watch``: a live view of every agent of every running fleet."""

from __future__ import annotations

import sys
import typing as t

import typer

from claude_shepherd.fleet.commands.options import GraceOpt
from claude_shepherd.supervisor.errors import ShepherdError, UsageError


def watch(
    interval: t.Annotated[
        float, typer.Option("--interval", metavar="S", min=0.2, help="Seconds between refreshes.")
    ] = 1.0,
    grace: GraceOpt = 10.0,
    fleet: t.Annotated[
        list[str] | None,
        typer.Option("--fleet", metavar="NAME", help="Only this fleet (its name or socket; repeatable)."),
    ] = None,
) -> None:
    """A live view of every agent of every running fleet (or of --fleet NAME), needs-you first.

    Keys: Enter attaches to the agent's pane, r restarts its agent, s stops it
    (each asks first, naming the agent), l shows its recent output, q quits.

    Example: fleet watch --fleet agents-2x2 --interval 2
    """
    if any(not name.strip() for name in fleet or ()):
        raise UsageError("--fleet needs a fleet's name or socket (`fleet status` names them)")
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise ShepherdError("fleet watch needs a terminal; in scripts use fleet status --json")
    from claude_shepherd.fleet.watch_app import run as run_watch  # lazy: Textual costs `fleet --help` most

    run_watch(interval=interval, grace=grace, only=fleet or ())
