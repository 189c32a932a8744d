"""``fleet stop``: stop every agent (or some) so that no process is left, and report each pane."""

from __future__ import annotations

import typing as t

from claude_shepherd.fleet.commands.options import (
    FleetFailure,
    GraceOpt,
    HereOpt,
    LayoutArg,
    MachineOpt,
    PaneOpt,
    SocketOpt,
    labelled,
    locked,
    machine,
    say,
)
from claude_shepherd.supervisor.errors import NotRunningError

if t.TYPE_CHECKING:
    from claude_shepherd.fleet.target import Target
    from claude_shepherd.fleet.tmux import FleetServer


def stop(
    layout: LayoutArg = None,
    grace: GraceOpt = 10.0,
    socket: SocketOpt = None,
    pane: PaneOpt = None,
    as_json: MachineOpt = False,
    here: HereOpt = False,
) -> None:
    """Stop every agent (SIGTERM, grace, SIGKILL) and close the fleet's tmux session; with --pane,
    only those agents (their panes stay, and `fleet start` resumes them).

    Example: fleet stop fleet-2x2 --pane SDK
    """
    from claude_shepherd.fleet import target  # lazy, as in every verb: keeps `fleet --help` fast
    from claude_shepherd.fleet.hosts.span import spanning

    machine(as_json)
    span = None if here else spanning(layout, socket)
    if span is not None:
        from claude_shepherd.fleet.hosts import verbs

        return verbs.stop(span, grace, pane)
    try:
        where = target.resolve(layout, socket)
    except NotRunningError as exc:  # stopping what is stopped succeeds, as systemctl stop does
        say(f"{str(exc).split(';')[0].capitalize()}; nothing to stop.")
        return
    server = where.server()
    with locked(where.socket, "fleet stop"):
        try:
            sessions = where.running_sessions(server)
        except NotRunningError as exc:
            refuse_agents_elsewhere(where, server, str(exc))
            say(f"{str(exc)[:1].upper()}{str(exc)[1:]}; nothing to stop.")
            return
        stop_agents(where, server, sessions, grace, pane)
        if not pane and where.layout is not None:  # a decoy under the fleet's name is not the whole fleet
            refuse_agents_elsewhere(where, server, f"stopped the session named {where.layout.name!r}")


def refuse_agents_elsewhere(where: Target, server: FleetServer, done: str) -> None:
    """Not "nothing to stop" (or "nothing is left") while the layout's agents run on, their session
    renamed, say."""
    from claude_shepherd.fleet.builder import look_alikes, running_elsewhere

    layout = where.layout
    if layout is None:
        return
    renamed = look_alikes(layout, server)
    elsewhere = running_elsewhere(layout, server, layout.pane_ids())
    if renamed or elsewhere:
        what = (
            f"session {', '.join(map(repr, renamed))} has its windows, labels and sessions"
            if renamed
            else f"the agents of {', '.join(sorted(elsewhere))} still run"
        )
        raise FleetFailure(
            f"{done}, but {what} (was its session renamed? `fleet status --socket {where.socket}` lists every "
            f"session); rename it back (tmux -L {where.socket} rename-session -t OLD {layout.name}) and stop again"
        )


def stop_agents(
    where: Target, server: FleetServer, sessions: list[str], grace: float, labels: list[str] | None
) -> None:
    """Stop the agents (all, or those labelled *labels*) and report each; raise on what survived."""
    from claude_shepherd.fleet.stop import stop as stop_fleet

    pane_ids: set[str] | None = None
    if labels:
        pane_ids = {found.pane_id for found in labelled(where, server, sessions, labels)}
        say(
            f"Stopping {', '.join(labels)} of {', '.join(repr(s) for s in sessions)} (socket {where.socket})..."
        )
    else:
        say(f"Stopping {', '.join(repr(s) for s in sessions)} (socket {where.socket})...")
    result = stop_fleet(
        server, sessions, grace=grace, progress=lambda line: say(f"  {line}"), pane_ids=pane_ids
    )
    width = max((len(p.name) for p in result.panes), default=0)
    for pane in result.panes:
        say(f"  {pane.name:<{width}}  {pane.outcome}")
    if result.leftovers:
        pids = ", ".join(str(p.pid) for p in result.leftovers)
        raise FleetFailure(f"{len(result.leftovers)} process(es) survived SIGKILL: {pids}")
    if labels:
        say(f"Stopped in {result.seconds:.1f}s; `fleet start` resumes {'them' if len(labels) > 1 else 'it'}.")
    else:
        say(f"Stopped in {result.seconds:.1f}s; no process of the fleet is left.")
    if result.forced:
        names = ", ".join(p.name for p in result.forced)
        raise FleetFailure(
            f"{len(result.forced)} agent(s) ignored SIGTERM for {grace:g}s and were killed: {names}; "
            f"their sessions may not have saved their state"
        )
