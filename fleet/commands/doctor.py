"""``fleet doctor``: find (and with --fix repair) orphans, stale bindings, duplicate labels, missing hooks."""

from __future__ import annotations

import contextlib
import typing as t

import typer

from claude_shepherd.fleet.commands.options import (
    FleetFailure,
    LayoutArg,
    MachineOpt,
    SocketOpt,
    locked,
    machine,
    say,
)
from claude_shepherd.supervisor.errors import NotRunningError, UsageError
from claude_shepherd.supervisor.tmux_names import FLEET_SOCKET


def doctor(
    layout: LayoutArg = None,
    fix: t.Annotated[bool, typer.Option("--fix", help="Repair what was found.")] = False,
    socket: SocketOpt = None,
    as_json: MachineOpt = False,
) -> None:
    """Find orphaned agents, stale bindings, duplicate labels, missing hooks or Claude Code (a stale index is refreshed).

    Example: fleet doctor fleet-2x2 --fix
    """
    # lazy, as in every verb: keeps `fleet --help` fast
    from claude_shepherd.fleet import doctor as dr
    from claude_shepherd.fleet import target
    from claude_shepherd.fleet.hosts.span import spanning

    machine(as_json)
    span = spanning(layout, socket)
    if span is not None:
        from claude_shepherd.fleet.hosts import verbs

        return verbs.doctor(span, fix)
    try:
        where = target.resolve(layout, socket)
    except (NotRunningError, UsageError):  # none or several running: doctor looks at every fleet
        where = target.Target(FLEET_SOCKET)
    layouts = [where.layout] if where.layout else []
    servers = [where.server()]
    with contextlib.ExitStack() as held:
        if fix:  # what is repaired is decided under the locks of every fleet it may touch
            for name in fleet_sockets(where.socket):
                held.enter_context(locked(name, "fleet doctor --fix"))
        examined = dr.examine(layouts, servers)
        findings = [finding for finding in examined if not finding.info]
        if fix:
            dr.repair(findings)
    for note in dr.refresh_caches(examined):  # after the fixes, which may change state files
        say(f"{note.kind}: {note.fixed}")
    if not findings:
        say("No problems found.")
        return
    for finding in findings:
        say(f"{finding.kind}: {finding.message}")
        if finding.fixed:
            say(
                f"  fixed: {finding.fixed}"
                if not finding.fixed.startswith("not fixed")
                else f"  {finding.fixed}"
            )
        elif fix and finding.fix is None:
            say("  not fixed: repair it by hand")
    unfixed = [f for f in findings if not f.fixed or f.fixed.startswith("not fixed")]
    if unfixed:
        hint = "" if fix else "; run `fleet doctor --fix` to repair"
        raise FleetFailure(f"{len(unfixed)} problem(s) {'left' if fix else 'found'}{hint}")


def fleet_sockets(mine: str) -> list[str]:
    """*mine* and every fleet socket with a server, in one order (two callers locking several never
    wait on each other in a circle)."""
    from claude_shepherd.fleet.live import live_fleets

    return sorted({mine, *(server.socket_name for server in live_fleets().servers.values())})
