"""``fleet logs``: an agent's claude-run log, then its screen; ``-f`` keeps printing new lines of both."""

from __future__ import annotations

import os
import time
import typing as t

import typer

from claude_shepherd.fleet.commands.options import HereOpt, LayoutArg, SocketOpt, pane_labelled, say
from claude_shepherd.supervisor.printable import printable

FOLLOW_INTERVAL = 0.5
"""Seconds between two looks at the log and the screen with ``--follow``."""


def logs(
    layout: LayoutArg = None,
    pane: t.Annotated[str, typer.Option("--pane", metavar="LABEL", help="The agent's pane.")] = ...,  # type: ignore[assignment]
    lines: t.Annotated[
        int, typer.Option("-n", "--lines", metavar="N", min=1, help="How many lines of each.")
    ] = 50,
    follow: t.Annotated[
        bool, typer.Option("-f", "--follow", help="Keep printing new lines of both.")
    ] = False,
    socket: SocketOpt = None,
    here: HereOpt = False,
) -> None:
    """An agent's claude-run log (its starts, resumes, restarts and exits, kept across restarts), then its screen.

    Example: fleet logs fleet-2x2 --pane SDK -n 200 -f
    """
    # lazy, as in every verb: keeps `fleet --help` fast
    from claude_shepherd.fleet import target
    from claude_shepherd.fleet.hosts.span import spanning
    from claude_shepherd.fleet.tmux import new_lines, pane_history
    from claude_shepherd.supervisor.claude_run.run_log import log_path, tail

    span = None if here else spanning(layout, socket)
    if span is not None:
        from claude_shepherd.fleet.hosts import verbs

        return verbs.logs(span, pane, lines, follow)
    where = target.resolve(layout, socket)
    server = where.server()
    sessions = where.running_sessions(server)
    found = pane_labelled(where, server, sessions, pane)
    identity = f"{found.session}:{found.window}:{found.label}"
    path = log_path(where.socket, identity, os.environ)

    def history(count: int) -> list[str]:
        return [printable(line) for line in pane_history(server, found.pane_id, count)]

    kept = tail(path, lines)
    say(
        f"==> claude-run's log of {identity}: {path}"
        + (f" (last {len(kept)} lines) <==" if kept else " (none yet) <==")
    )
    for line in kept:
        say(line)
    shown = history(lines)[-lines:]
    say(f"==> the screen of {identity} ({found.pane_id}, last {len(shown)} lines) <==")
    for line in shown:
        say(line)
    while follow:
        time.sleep(FOLLOW_INTERVAL)
        now_kept = tail(path, lines + 200)
        for line in new_lines(kept, now_kept):
            say(line)
        kept = now_kept
        now = history(lines + 200)
        for line in new_lines(shown, now):
            say(line)
        shown = now
