"""``fleet pane-id``: this pane's fleet identity, for an agent's own tools."""

from __future__ import annotations

import typer

from claude_shepherd.fleet.output import printer_of


def pane_id(ctx: typer.Context) -> None:
    """Print this pane's fleet identity session:window:label; exit 1 outside a fleet pane.

    Example: fleet pane-id   (from an agent's Bash tool: agents-2x2:agents:SDK)
    """
    from claude_shepherd.supervisor.session.identity import current_pane_id  # lazy: keeps `fleet --help` fast

    identity = current_pane_id()
    if identity is None:
        raise typer.Exit(1)
    printer_of(ctx).say(identity)
