"""``fleet restart``: stop agents gracefully and start them again, resuming their conversations."""

from __future__ import annotations

import dataclasses
import typing as t

from claude_shepherd.fleet.commands.options import (
    FleetFailure,
    GraceOpt,
    HereOpt,
    LayoutArg,
    MachineOpt,
    PaneOpt,
    SocketOpt,
    WaitOpt,
    locked,
    machine,
)
from claude_shepherd.fleet.commands.start import refuse_left_alone, refuse_not_running, report_started
from claude_shepherd.fleet.commands.stop import stop_agents

if t.TYPE_CHECKING:
    from claude_shepherd.fleet.builder import StartResult


def restart(
    layout: LayoutArg = None,
    grace: GraceOpt = 10.0,
    socket: SocketOpt = None,
    pane: PaneOpt = None,
    wait: WaitOpt = None,
    as_json: MachineOpt = False,
    here: HereOpt = False,
) -> None:
    """Stop agents gracefully and resume their conversations; --pane LABEL (repeatable) for some, else all.

    Example: fleet restart fleet-2x2 --pane SDK
    """
    from claude_shepherd.fleet import builder, target  # lazy, as in every verb: keeps `fleet --help` fast
    from claude_shepherd.fleet.hosts.span import spanning

    machine(as_json)
    span = None if here else spanning(layout, socket)
    if span is not None:
        from claude_shepherd.fleet.hosts import verbs

        return verbs.restart(span, grace, pane, wait)
    where = target.resolve_layout(layout, socket, "restart")
    spec = where.require_layout("restart")
    server = where.server()
    with locked(where.socket, "fleet restart"):
        sessions = where.running_sessions(server)
        labels = pane or [p.label for w in spec.windows for p in w.panes if p.label and p.runs_agent]
        blocked = builder.blockers(spec, server)
        if blocked:  # before anything is stopped: a restart must not end in agents it cannot start again
            raise FleetFailure(
                f"nothing restarted: {'; '.join(blocked)}; an agent may have relabelled its pane or "
                "renamed its window; fix that (see `fleet status`) and restart again"
            )
        stop_agents(where, server, sessions, grace, labels)
        result = builder.start(spec, server)
        failed = report_started(server, changed_only(result), wait)
        refuse_left_alone(result, spec.socket_name)
        refuse_not_running(failed, layout)


def changed_only(result: StartResult) -> StartResult:
    """*result* without the panes a restart left running (they were not asked for)."""
    return dataclasses.replace(result, panes=tuple(p for p in result.panes if p.action != "running"))
