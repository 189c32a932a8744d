"""``fleet start``: build the layout's fleet, or reconcile the running one, and say which agents run."""

from __future__ import annotations

import typing as t

import typer

from claude_shepherd.fleet.commands.attach import show
from claude_shepherd.fleet.commands.options import (
    FleetFailure,
    LayoutArg,
    MachineOpt,
    SocketOpt,
    WaitOpt,
    locked,
    machine,
    say,
)
from claude_shepherd.fleet.hosts.part import STDIN

if t.TYPE_CHECKING:
    from claude_shepherd.fleet.builder import StartResult
    from claude_shepherd.fleet.tmux import FleetServer


def start(
    layout: LayoutArg = None,
    no_attach: t.Annotated[
        bool, typer.Option("--no-attach", help="Do not attach, even from a terminal.")
    ] = False,
    socket: SocketOpt = None,
    wait: WaitOpt = None,
    as_json: MachineOpt = False,
) -> None:
    """Build the layout's fleet, or reconcile the running one (respawn dead agent panes); say `running`
    only for agents seen running, and fail naming each one that is not.

    Example: fleet start tmuxinator/fleet-2x2.yml --no-attach
    """
    from claude_shepherd.fleet import (  # lazy, as in every verb: keeps `fleet --help` fast
        builder,
        known,
        target,
    )
    from claude_shepherd.fleet.hosts.span import spanning

    machine(as_json)
    span = spanning(layout, socket)  # by file, or by the name of a fleet across hosts started here
    if span is not None:
        from claude_shepherd.fleet.hosts import verbs

        spec = span.layout
        return verbs.start(spec, layout, wait=wait, attaching=spec.attach and not no_attach and not as_json)
    where = target.resolve_layout(layout, socket, "start")
    spec = where.require_layout("start")
    server = where.server()
    builder.check_roots(spec)  # before a word about starting: a missing root starts nothing
    with locked(where.socket, "fleet start"):
        running = server.has_fleet_session(spec.name)
        windows = len(spec.windows)
        if running:
            say(f"Fleet {spec.name!r} is running (socket {where.socket}); reconciling with {spec.source}")
        else:
            say(
                f"Starting fleet {spec.name!r} (socket {where.socket}): {windows} window{'s' * (windows != 1)}, "
                f"{spec.pane_count} pane{'s' * (spec.pane_count != 1)}"
            )
        result = builder.start(spec, server)
        if layout != STDIN:  # a host's own part is known by the fleet that sent it
            known.remember(spec)
        failed = report_started(server, result, wait)
        refuse_left_alone(result, where.socket)
        refuse_not_running(failed, layout)
        if running and not result.changed:
            say("Nothing to do: every agent is running.")
    if not as_json:
        show(where.socket, spec.name, spec.attach and not no_attach, server.tmux_bin)


def report_started(server: FleetServer, result: StartResult, wait: float | None) -> list[str]:
    """Print each pane's outcome, the started agents' once seen running (or not); the names not running."""
    from claude_shepherd.fleet import readiness

    timeout = readiness.default_wait() if wait is None else wait
    launched = {p.pane_id for p in result.launched}
    outcomes = (
        readiness.wait_running(server, sorted(launched), timeout=timeout) if launched and timeout > 0 else {}
    )
    width = max((len(p.name) for p in result.panes), default=0)
    failed: list[str] = []
    for pane in result.panes:
        detail = f" ({pane.detail})" if pane.detail else ""
        outcome = outcomes.get(pane.pane_id) if pane.pane_id in launched else None
        if outcome is None:
            unchecked = " (not checked: --wait 0)" if pane.pane_id in launched else ""
            say(f"  {pane.name:<{width}}  {pane.action}{detail}{unchecked}")
        elif outcome.running:
            say(f"  {pane.name:<{width}}  {pane.action}{detail}, running ({outcome.detail})")
        else:
            failed.append(pane.name)
            say(f"  {pane.name:<{width}}  {pane.action}{detail}, but NOT RUNNING: {outcome.detail}")
            for line in outcome.last_lines:
                say(f"  {'':<{width}}  | {line}")
    return failed


def refuse_not_running(failed: list[str], layout: str | None) -> None:
    if failed:
        again = f"fleet start {layout}" if layout and layout != "-" else "fleet start"
        raise FleetFailure(
            f"{len(failed)} agent(s) not running: {', '.join(failed)} (their last lines are above); fix the cause "
            f"and run `{again}` again, which respawns them"
        )


def refuse_left_alone(result: StartResult, socket: str) -> None:
    """Fail when a window was left alone: the person must say which pane is which."""
    if result.left_alone:
        raise FleetFailure(
            f"window {', '.join(result.left_alone)} was left alone (see above): an agent may have relabelled its "
            f"pane or renamed its window; give each pane its own label (tmux -L {socket} set-option -p -t %N "
            "@pane_label NAME) and each window its name, or stop the agent that runs elsewhere, and start again"
        )
