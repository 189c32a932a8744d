"""``fleet``: tmux layouts of supervised Claude agents.

    fleet start [LAYOUT] [--no-attach]   build the layout, or reconcile a running fleet
    fleet stop [LAYOUT] [--grace S]      stop every agent; no process is left
    fleet status [LAYOUT] [--json]       one row per pane
    fleet pane-id                        this pane's identity (session:window:label)
    fleet doctor [LAYOUT] [--fix]        orphans, stale bindings, duplicate labels, hooks
    fleet watch                          every agent of every fleet, live; attach, restart, stop

Errors are one line, ``fleet: error: ...``. Exit status: 0 done, 1 failed (or
``stop`` had to kill an agent that ignored SIGTERM), 2 usage, 3 the fleet is
not running, 127 tmux is missing.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import typing as t

import typer

from claude_shepherd.supervisor.env import FLEET_SOCKET_ENV, FLEET_START_WAIT_ENV, FLEET_STOP_GRACE_ENV
from claude_shepherd.supervisor.errors import ShepherdError, UsageError, run_main
from claude_shepherd.supervisor.printable import printable
from claude_shepherd.supervisor.tmux_names import FLEET_SOCKET

PROG = "fleet"

app = typer.Typer(
    name=PROG,
    help="tmux layouts of supervised Claude agents (tmuxinator YAML, one labelled agent per pane).",
    epilog="Example: fleet start tmuxinator/fleet-2x2.yml",
    add_completion=True,
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from claude_shepherd.supervisor import __version__

        typer.echo(f"{PROG} {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: t.Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """tmux layouts of supervised Claude agents (tmuxinator YAML, one labelled agent per pane)."""


LayoutArg = t.Annotated[
    str | None,
    typer.Argument(
        metavar="LAYOUT",
        help="A layout file, or a name in ./tmuxinator/, ~/.config/tmuxinator/, ~/.tmuxinator/ "
        "(default: $FLEET_LAYOUT, else 'fleet').",
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


def say(line: str = "") -> None:
    """One line for the operator; what agents named in it (processes, folders) cannot carry escapes."""
    typer.echo(printable(line))


class FleetFailure(ShepherdError):
    """The command did its work but something must be reported as a failure."""


# --------------------------------------------------------------------------- start


@app.command()
def start(
    layout: LayoutArg = None,
    no_attach: t.Annotated[
        bool, typer.Option("--no-attach", help="Do not attach, even from a terminal.")
    ] = False,
    socket: SocketOpt = None,
    wait: WaitOpt = None,
) -> None:
    """Build the layout's fleet, or reconcile the running one (respawn dead agent panes); say `running`
    only for agents seen running, and fail naming each one that is not.

    Example: fleet start tmuxinator/fleet-2x2.yml --no-attach
    """
    from claude_shepherd.fleet import builder, target

    where = target.resolve_layout(layout, socket, "start")
    spec = where.require_layout("start")
    server = where.server()
    builder.check_roots(spec)  # before a word about starting: a missing root starts nothing
    with _locked(where.socket, "fleet start"):
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
        failed = _report_started(server, result, wait)
        _refuse_left_alone(result, where.socket)
        _refuse_not_running(failed, layout)
        if running and not result.changed:
            say("Nothing to do: every agent is running.")
    _attach(where.socket, spec.name, spec.attach and not no_attach, server.tmux_bin)


def _locked(socket: str, verb: str) -> t.ContextManager[None]:
    """The fleet's lock for *verb*'s whole run (a second verb waits, saying for whom)."""
    from claude_shepherd.fleet.lock import fleet_lock

    return fleet_lock(socket, verb, waiting=say)


def _report_started(server: t.Any, result: t.Any, wait: float | None) -> list[str]:
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


def _refuse_not_running(failed: list[str], layout: str | None) -> None:
    if failed:
        again = f"fleet start {layout}" if layout else "fleet start"
        raise FleetFailure(
            f"{len(failed)} agent(s) not running: {', '.join(failed)} (their last lines are above); fix the cause "
            f"and run `{again}` again, which respawns them"
        )


def _refuse_left_alone(result: t.Any, socket: str) -> None:
    """Fail when a window was left alone: the person must say which pane is which."""
    if result.left_alone:
        raise FleetFailure(
            f"window {', '.join(result.left_alone)} was left alone (see above): an agent may have relabelled its "
            f"pane or renamed its window; give each pane its own label (tmux -L {socket} set-option -p -t %N "
            "@pane_label NAME) and each window its name, or stop the agent that runs elsewhere, and start again"
        )


def _attach(socket: str, session: str, wanted: bool, tmux: str, pane: str | None = None) -> None:
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


# --------------------------------------------------------------------------- stop


@app.command()
def stop(
    layout: LayoutArg = None,
    grace: GraceOpt = 10.0,
    socket: SocketOpt = None,
    pane: PaneOpt = None,
) -> None:
    """Stop every agent (SIGTERM, grace, SIGKILL) and close the fleet's tmux session; with --pane,
    only those agents (their panes stay, and `fleet start` resumes them).

    Example: fleet stop fleet-2x2 --pane SDK
    """
    from claude_shepherd.fleet import target

    try:
        where = target.resolve(layout, socket)
    except target.NotRunningError as exc:  # stopping what is stopped succeeds, as systemctl stop does
        say(f"{str(exc).split(';')[0].capitalize()}; nothing to stop.")
        return
    server = where.server()
    with _locked(where.socket, "fleet stop"):
        try:
            sessions = where.running_sessions(server)
        except target.NotRunningError as exc:
            _refuse_agents_elsewhere(where, server, str(exc))
            say(f"{str(exc)[:1].upper()}{str(exc)[1:]}; nothing to stop.")
            return
        _stop(where, server, sessions, grace, pane)
        if not pane and where.layout is not None:  # a decoy under the fleet's name is not the whole fleet
            _refuse_agents_elsewhere(where, server, f"stopped the session named {where.layout.name!r}")


def _refuse_agents_elsewhere(where: t.Any, server: t.Any, done: str) -> None:
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


def _stop(where: t.Any, server: t.Any, sessions: list[str], grace: float, labels: list[str] | None) -> None:
    """Stop the agents (all, or those labelled *labels*) and report each; raise on what survived."""
    from claude_shepherd.fleet.stop import stop as stop_fleet

    pane_ids: set[str] | None = None
    if labels:
        pane_ids = {found.pane_id for found in _labelled(where, server, sessions, labels)}
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


# --------------------------------------------------------------------------- attach / logs


def _labelled(where: t.Any, server: t.Any, sessions: list[str], labels: t.Sequence[str]) -> list[t.Any]:
    """The running fleet's pane for each of *labels*, or a one-line error.

    An agent can relabel its own pane, so a label on two panes is refused,
    naming both: no verb guesses which agent the person means.
    """
    from claude_shepherd.fleet.tmux import list_panes

    by_label: dict[str, list[t.Any]] = {}
    for info in list_panes(server):
        if info.session in sessions and info.label:
            by_label.setdefault(info.label, []).append(info)
    for label in labels:
        holders = by_label.get(label, [])
        if len(holders) > 1:
            raise ShepherdError(
                f"{len(holders)} panes ({', '.join(p.pane_id for p in holders)}) are labelled {label} in "
                f"{', '.join(sessions)}; an agent may have relabelled its pane: give the impostor its own "
                f"label (tmux -L {where.socket} set-option -p -t %N @pane_label NAME), then try again"
            )
    missing = sorted(set(labels) - set(by_label))
    if missing:
        raise ShepherdError(
            f"no pane labelled {', '.join(missing)} in {', '.join(sessions)} (socket {where.socket}); "
            f"labels: {', '.join(sorted(by_label)) or 'none'}"
        )
    return [by_label[label][0] for label in labels]


def _pane(where: t.Any, server: t.Any, sessions: list[str], label: str) -> t.Any:
    """The running fleet's pane labelled *label* (see :func:`_labelled`)."""
    return _labelled(where, server, sessions, [label])[0]


@app.command()
def attach(
    layout: LayoutArg = None,
    pane: t.Annotated[
        str | None, typer.Option("--pane", metavar="LABEL", help="Select this agent's pane.")
    ] = None,
    socket: SocketOpt = None,
) -> None:
    """Attach to the fleet (switch to it inside its tmux; nested inside another), with an agent's pane selected.

    Example: fleet attach fleet-2x2 --pane SDK
    """
    from claude_shepherd.fleet import target

    where = target.resolve(layout, socket)
    server = where.server()
    sessions = where.running_sessions(server)
    session, chosen = sessions[0], None
    if pane is not None:
        found = _pane(where, server, sessions, pane)
        session, chosen = found.session, found.pane_id
        server.cmd("select-window", "-t", found.window_id)
        server.cmd("select-pane", "-t", found.pane_id)  # asked for by the person: focus is theirs to move
    _attach(where.socket, session, True, server.tmux_bin, chosen)


@app.command()
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
) -> None:
    """An agent's claude-run log (its starts, resumes, restarts and exits, kept across restarts), then its screen.

    Example: fleet logs fleet-2x2 --pane SDK -n 200 -f
    """
    import time

    from claude_shepherd.fleet import target
    from claude_shepherd.fleet.tmux import new_lines, pane_history
    from claude_shepherd.supervisor.claude_run.run_log import log_path, tail

    where = target.resolve(layout, socket)
    server = where.server()
    sessions = where.running_sessions(server)
    found = _pane(where, server, sessions, pane)
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
        time.sleep(0.5)
        now_kept = tail(path, lines + 200)
        for line in new_lines(kept, now_kept):
            say(line)
        kept = now_kept
        now = history(lines + 200)
        for line in new_lines(shown, now):
            say(line)
        shown = now


# --------------------------------------------------------------------------- restart


@app.command()
def restart(
    layout: LayoutArg = None,
    grace: GraceOpt = 10.0,
    socket: SocketOpt = None,
    pane: PaneOpt = None,
    wait: WaitOpt = None,
) -> None:
    """Stop agents gracefully and resume their conversations; --pane LABEL (repeatable) for some, else all.

    Example: fleet restart fleet-2x2 --pane SDK
    """
    from claude_shepherd.fleet import builder, target

    where = target.resolve_layout(layout, socket, "restart")
    spec = where.require_layout("restart")
    server = where.server()
    with _locked(where.socket, "fleet restart"):
        sessions = where.running_sessions(server)
        labels = pane or [p.label for w in spec.windows for p in w.panes if p.label and p.runs_agent]
        blocked = builder.blockers(spec, server)
        if blocked:  # before anything is stopped: a restart must not end in agents it cannot start again
            raise FleetFailure(
                f"nothing restarted: {'; '.join(blocked)}; an agent may have relabelled its pane or "
                "renamed its window; fix that (see `fleet status`) and restart again"
            )
        _stop(where, server, sessions, grace, labels)
        result = builder.start(spec, server)
        failed = _report_started(server, _changed_only(result), wait)
        _refuse_left_alone(result, spec.socket_name)
        _refuse_not_running(failed, layout)


def _changed_only(result: t.Any) -> t.Any:
    """*result* without the panes a restart left running (they were not asked for)."""
    from dataclasses import replace

    return replace(result, panes=tuple(p for p in result.panes if p.action != "running"))


# --------------------------------------------------------------------------- status


@app.command()
def status(
    layout: LayoutArg = None,
    as_json: t.Annotated[bool, typer.Option("--json", help="One JSON object per pane, in a list.")] = False,
    socket: SocketOpt = None,
) -> None:
    """One row per pane: label, supervisor, Claude, session, skill, phase, lifecycle, context, cost, state.

    Example: fleet status fleet-2x2 --json
    """
    from claude_shepherd.fleet import status as st
    from claude_shepherd.fleet import target

    try:
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


# --------------------------------------------------------------------------- watch


@app.command()
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
    from claude_shepherd.fleet.watch_app import run as run_watch

    run_watch(interval=interval, grace=grace, only=fleet or ())


# --------------------------------------------------------------------------- pane-id


@app.command("pane-id")
def pane_id() -> None:
    """Print this pane's fleet identity session:window:label; exit 1 outside a fleet pane.

    Example: fleet pane-id   (from an agent's Bash tool: agents-2x2:agents:SDK)
    """
    from claude_shepherd.supervisor.session.identity import current_pane_id

    identity = current_pane_id()
    if identity is None:
        raise typer.Exit(1)
    say(identity)


# --------------------------------------------------------------------------- doctor


@app.command()
def doctor(
    layout: LayoutArg = None,
    fix: t.Annotated[bool, typer.Option("--fix", help="Repair what was found.")] = False,
    socket: SocketOpt = None,
) -> None:
    """Find orphaned agents, stale pane bindings, duplicate labels, missing hooks (a stale index is refreshed).

    Example: fleet doctor fleet-2x2 --fix
    """
    from claude_shepherd.fleet import doctor as dr
    from claude_shepherd.fleet import target

    try:
        where = target.resolve(layout, socket)
    except (target.NotRunningError, UsageError):  # none or several running: doctor looks at every fleet
        where = target.Target(FLEET_SOCKET)
    layouts = [where.layout] if where.layout else []
    servers = [where.server()]
    with contextlib.ExitStack() as held:
        if fix:  # what is repaired is decided under the locks of every fleet it may touch
            for name in _fleet_sockets(where.socket):
                held.enter_context(_locked(name, "fleet doctor --fix"))
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


def _fleet_sockets(mine: str) -> list[str]:
    """*mine* and every fleet socket with a server, in one order (two callers locking several never
    wait on each other in a circle)."""
    from claude_shepherd.fleet.live import live_fleets

    return sorted({mine, *(server.socket_name for server in live_fleets().servers.values())})


# --------------------------------------------------------------------------- entry point


def run(argv: list[str] | None = None) -> int:
    """Run the CLI; an expected failure is one line on stderr with its exit status."""

    def body() -> int:
        words = sys.argv[1:] if argv is None else argv
        if any(w == "--install-completion" or w.startswith("--install-completion=") for w in words):
            from claude_shepherd.supervisor.session.completion import refuse_agent

            refuse_agent(PROG)
        try:
            app(args=argv, prog_name=PROG, standalone_mode=True)
        except SystemExit as exc:  # typer's own exits: usage errors, --help, typer.Exit
            return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        return 0

    return run_main(PROG, body)


def main() -> None:
    sys.exit(run())
