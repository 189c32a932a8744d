"""``fleet``: tmux layouts of supervised Claude agents.

    fleet start [LAYOUT] [--no-attach]   build the layout, or reconcile a running fleet
    fleet stop [LAYOUT] [--grace S]      stop every agent; no process is left
    fleet status [LAYOUT] [--json]       one row per pane
    fleet budget [LAYOUT] [--pane P | --window W] [--set USD | --add USD]
                                         budgets and spend; raise one, and paused agents go on
    fleet usage [LAYOUT] [--clear CRED]  usage windows per credential; forget a reading and its waits
    fleet ls                             the fleets started here, running or stopped
    fleet pane-id                        this pane's identity (session:window:label)
    fleet doctor [LAYOUT] [--fix]        orphans, stale bindings, duplicate labels, hooks
    fleet forget NAME [--host HOST]      forget a stopped fleet's name, or a host gone for good
    fleet watch                          every agent of every fleet, live; attach, restart, stop
    fleet web [--bind ADDR] [--port N]   the same as a page for a phone, with what needs you first
    fleet host add HOST                  install this claude-shepherd on HOST, for layouts that name it
    fleet worktree ls|remove NAME        agents' git worktrees; remove refuses one holding work
    fleet drain [LAYOUT] [--dehydrate]   agents reach a safe point, then stop; back at `start --all`
    fleet start --all                    every fleet that was running, not those a person stopped
    fleet boot enable|disable|status     run `fleet start --all` at boot (systemd user unit, launchd)

Errors are one line, ``fleet: error: ...``. Exit status: 0 done, 1 failed (or
``stop`` had to kill an agent that ignored SIGTERM), 2 usage, 3 the fleet is
not running, 127 tmux is missing.

This module is the typer app: each verb is a function of its own module in
:mod:`claude_shepherd.fleet.commands`, wired here in the order ``--help`` lists them, and the
run's one :class:`~claude_shepherd.fleet.output.Printer` (each verb's ``--json`` switches it).
The app is made on first use: ``fleet status`` with plain words runs without it
(:mod:`claude_shepherd.fleet.commands.quick`), and a read-only verb that succeeded ends
without the interpreter's teardown (:func:`main`).
"""

from __future__ import annotations

import os
import sys
import typing as t

from claude_shepherd.fleet.output import PROG, Printer
from claude_shepherd.supervisor.errors import run_main

if t.TYPE_CHECKING:
    import typer

READ_ONLY = ("status", "ls", "pane-id", "--help", "--version")
"""Verbs (and options) that change nothing: once they succeeded, the process may end at once."""


def __getattr__(name: str) -> t.Any:
    """``app``, the typer app, made when first asked for (``fleet status`` runs without it)."""
    if name == "app":
        return _app()
    raise AttributeError(name)


_made: list[typer.Typer] = []


def _app() -> typer.Typer:
    if _made:
        return _made[0]
    import typer

    from claude_shepherd.fleet.commands import (
        attach,
        boot,
        budget,
        doctor,
        drain,
        forget,
        host,
        logs,
        ls,
        options,
        pane_id,
        restart,
        start,
        status,
        stop,
        usage,
        watch,
        web,
        worktree,
    )

    app = typer.Typer(
        name=PROG,
        help="tmux layouts of supervised Claude agents (tmuxinator YAML, one labelled agent per pane).",
        epilog="Example: fleet start tmuxinator/fleet-2x2.yml",
        add_completion=True,
        no_args_is_help=True,
        rich_markup_mode=None,
        pretty_exceptions_enable=False,
    )

    app.callback()(options.root)
    app.command()(start.start)
    app.command()(stop.stop)
    app.command()(drain.drain)
    app.command()(attach.attach)
    app.command()(logs.logs)
    app.command()(restart.restart)
    app.command()(status.status)
    app.command()(budget.budget)
    app.command()(usage.usage)
    app.command()(ls.ls)
    app.command()(watch.watch)
    app.command()(web.web)
    app.command("pane-id")(pane_id.pane_id)
    app.command()(doctor.doctor)
    app.command()(forget.forget)
    app.add_typer(host.app, name="host")
    app.add_typer(worktree.app, name="worktree")
    app.add_typer(boot.app, name="boot")
    _made.append(app)
    return app


# --------------------------------------------------------------------------- entry point


def run(argv: list[str] | None = None) -> int:
    """Run the CLI; an expected failure is one line on stderr with its exit status."""
    printer = Printer()
    words = sys.argv[1:] if argv is None else argv

    def body() -> int:
        from claude_shepherd.fleet.commands.quick import show, status_words

        plain = status_words(words)
        if plain is not None:
            return show(printer, plain.layout, plain.socket, plain.as_json)
        if any(w == "--install-completion" or w.startswith("--install-completion=") for w in words):
            # only for this option: the completion module and its argparse stay off every other run
            from claude_shepherd.supervisor.session.completion import refuse_agent

            refuse_agent(PROG)
        try:
            _app()(args=argv, prog_name=PROG, standalone_mode=True, obj=printer)
        except SystemExit as exc:  # typer's own exits: usage errors, --help, typer.Exit
            return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        return 0

    errors: list[str] = []
    status = run_main(PROG, body, keep=errors.append)
    answer = printer.envelope(status, errors[-1].removeprefix(f"{PROG}: error: ") if errors else None)
    if answer is not None:
        sys.stdout.write(answer + "\n")
        sys.stdout.flush()
    return status


def main() -> None:
    words = sys.argv[1:]
    status = run()
    if status == 0 and words and words[0] in READ_ONLY:
        # Nothing is left to do or to keep: skip the interpreter's teardown of every module loaded
        # (tens of ms), once what was said is out. A stream that cannot be flushed exits the usual way.
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            sys.exit(status)
        os._exit(0)
    sys.exit(status)
