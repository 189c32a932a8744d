"""``fleet status``: one row per pane of the fleet, as a table or as JSON."""

from __future__ import annotations

import json
import typing as t

import typer

from claude_shepherd.fleet.commands.options import FleetFailure, LayoutArg, SocketOpt, say
from claude_shepherd.supervisor.errors import ShepherdError


def status(
    layout: LayoutArg = None,
    as_json: t.Annotated[bool, typer.Option("--json", help="One JSON object per pane, in a list.")] = False,
    socket: SocketOpt = None,
) -> None:
    """One row per pane: label, supervisor, Claude, session, skill, phase, lifecycle, context, cost, state.

    Example: fleet status fleet-2x2 --json
    """
    # lazy, as in every verb: keeps `fleet --help` fast
    from claude_shepherd.fleet import status as st
    from claude_shepherd.fleet import target
    from claude_shepherd.fleet.hosts.span import spanning

    try:
        span = spanning(layout, socket)
        if span is not None:
            from claude_shepherd.fleet.hosts import verbs

            return verbs.status(span, as_json)
        where = target.resolve(layout, socket)
        server = where.server()
        sessions = where.running_sessions(server)
        rows = st.collect(server, sessions)
    except ShepherdError as exc:
        if not as_json:
            raise
        # --json always prints JSON: a script reading it needs no second parser for errors.
        typer.echo(
            json.dumps({"error": str(exc), "exit_code": exc.exit_code})
        )  # ASCII: escapes come out \u-quoted
        raise typer.Exit(exc.exit_code) from None
    dead = [row for row in rows if row.agent and row.state.startswith("exited")]
    if as_json:
        typer.echo(json.dumps([row.as_json() for row in rows], indent=2))
    else:
        costs = [row.cost_usd for row in rows if row.cost_usd is not None]
        total = f", ${sum(costs):.2f} spent" if costs else ""
        say(
            f"Fleet {', '.join(repr(s) for s in sessions)} (socket {where.socket}): {len(rows)} pane(s){total}"
        )
        st.render(rows)
    if dead:
        names = ", ".join(f"{row.label or row.pane} ({row.state})" for row in dead)
        first = dead[0]
        raise FleetFailure(
            f"{len(dead)} agent(s) not running: {names}; `fleet logs {first.session} --pane {first.label or first.pane}` "
            f"shows why, `fleet start {first.session}` respawns them"
        )
