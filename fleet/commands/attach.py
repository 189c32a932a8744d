"""``fleet attach``: show the person the fleet, with an agent's pane selected."""

from __future__ import annotations

import os
import sys
import typing as t

import typer

from claude_shepherd.fleet.commands.options import HereOpt, LayoutArg, SocketOpt, pane_labelled, say


def attach(
    layout: LayoutArg = None,
    pane: t.Annotated[
        str | None, typer.Option("--pane", metavar="LABEL", help="Select this agent's pane.")
    ] = None,
    socket: SocketOpt = None,
    here: HereOpt = False,
) -> None:
    """Attach to the fleet (switch to it inside its tmux; nested inside another), with an agent's pane selected.

    Example: fleet attach fleet-2x2 --pane SDK
    """
    from claude_shepherd.fleet import target  # lazy, as in every verb: keeps `fleet --help` fast
    from claude_shepherd.fleet.hosts.span import spanning

    span = None if here else spanning(layout, socket)
    if span is not None:
        from claude_shepherd.fleet.hosts import verbs

        return verbs.attach(span, pane)
    where = target.resolve(layout, socket)
    server = where.server()
    sessions = where.running_sessions(server)
    session, chosen = sessions[0], None
    if pane is not None:
        found = pane_labelled(where, server, sessions, pane)
        session, chosen = found.session, found.pane_id
        server.cmd("select-window", "-t", found.window_id)
        server.cmd("select-pane", "-t", found.pane_id)  # asked for by the person: focus is theirs to move
    show(where.socket, session, True, server.tmux_bin, chosen)


def show(socket: str, session: str, wanted: bool, tmux: str, pane: str | None = None) -> None:
    """Show the person the fleet, as the watch's Enter does: switch inside the fleet's tmux, else attach
    (nested inside another tmux: they asked for it); without a terminal, say the command."""
    from claude_shepherd.fleet.attach import attach_command, attach_env, nested_hint

    if not wanted or not (os.isatty(0) and os.isatty(1)):
        say(f"Attach with: tmux -L {socket} attach -t {session}")
        return
    argv, takes_terminal = attach_command(tmux, socket, session, pane)
    hint = nested_hint(socket)
    if hint:
        say(hint)
    sys.stdout.flush()
    if takes_terminal:
        os.execve(tmux, argv, attach_env())
    os.execv(tmux, argv)
