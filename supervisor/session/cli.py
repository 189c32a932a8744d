"""``session``: the commands agents run from their Bash tool — the parser and the dispatch only.

Each subcommand is a module of :mod:`claude_shepherd.supervisor.session.commands` whose ``run``
returns the exit status; only the chosen one is imported, so every subcommand pays the start-up of
what it uses and nothing more (agents call this all day and every fleet pane pays it: standard
library only, ``argparse``). Errors are one line on stderr from :func:`run_main` and its status
(2 for usage); nothing on disk changes when a command fails.
"""

from __future__ import annotations

import argparse
import sys

from claude_shepherd.supervisor.errors import EXIT_USAGE, UsageError, run_main
from claude_shepherd.supervisor.session import completion

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds; session runs at every agent step
    import typing as t

    Argument = tuple[str, dict[str, t.Any]]

PROG = "session"
COMMANDS_PACKAGE = "claude_shepherd.supervisor.session.commands"

DIR_HELP = "session folder, e.g. sessions/2026_02_07_TOPIC"
PANE_HELP = "fleet pane id (default: the pane this agent runs in, read from tmux)"
APPROVED_HELP = "override a guard; the user's reason is recorded"


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors that say where to look (exit 2)."""

    def error(self, message: str) -> t.NoReturn:
        raise UsageError(f"{message}; see `{self.prog} --help`")


_DIR = ("dir", {"metavar": "DIR", "help": DIR_HELP})
_OWN_PANE = (
    "--fleet-pane",
    {"metavar": "ID", "help": "this agent's fleet pane id (only its own is accepted)"},
)
_APPROVED = ("--user-approved", {"metavar": "REASON", "help": APPROVED_HELP})

COMMAND_LINE: tuple[tuple[str, str, str, tuple[Argument, ...]], ...] = (
    ("activate", "claim DIR for this agent (creating it); a JSON object on stdin is merged in",
     "session activate sessions/2026_02_07_TOPIC implement",
     (_DIR, ("skill", {"metavar": "SKILL", "help": "the skill this session runs, e.g. implement"}), _OWN_PANE,
      ("--target-file", {"metavar": "FILE", "help": "the file the status line links to"}), _APPROVED)),
    ("find", "print this agent's session (fleet pane first, then supervisor PID); exit 1 if none",
     "session find", (("--fleet-pane", {"metavar": "ID", "help": PANE_HELP}),)),
    ("phase", "enter phase LABEL (in order when the skill declared phases); proof lines on stdin",
     "session phase sessions/2026_02_07_TOPIC '3: Build'",
     (_DIR, ("label", {"metavar": "LABEL", "help": "e.g. '3: Build' or '3.1: Tests'"}), _APPROVED)),
    ("deactivate", "mark the session completed; a 1-3 line description on stdin",
     "session deactivate sessions/2026_02_07_TOPIC --keywords auth,gate <<'EOF' ... EOF",
     (_DIR, ("--keywords", {"metavar": "a,b", "help": "search keywords"}))),
    ("restart", "request a fresh Claude that continues this session (the watchdog ends this one)",
     "session restart sessions/2026_02_07_TOPIC", (_DIR,)),
    ("dehydrate", "save the handover on stdin to DEHYDRATED_CONTEXT.md, then restart",
     "session dehydrate sessions/2026_02_07_TOPIC <<'EOF' ... EOF",
     (_DIR, ("--no-restart", {"action": "store_true", "help": "only save the handover"}))),
    ("continue", "re-activate DIR and print everything needed to pick the work up",
     "session continue sessions/2026_02_07_TOPIC", (_DIR, _OWN_PANE)),
    ("update", "set one field (VALUE is parsed as JSON when it is JSON); lifecycle fields are refused",
     "session update sessions/2026_02_07_TOPIC toolUseWithoutLogsBlockAfter 20",
     (_DIR, ("field", {"metavar": "FIELD"}), ("value", {"metavar": "VALUE", "help": "parsed as JSON when it is JSON"}))),
    ("target", "set the file the status line links to",
     "session target sessions/2026_02_07_TOPIC IMPLEMENTATION_LOG.md", (_DIR, ("file", {"metavar": "FILE"}))),
    ("log", "append stdin to the session's log as a timestamped entry",
     "session log sessions/2026_02_07_TOPIC <<'EOF' ... EOF", (_DIR,)),
    ("list", "list the sessions of the root: name, lifecycle, skill, phase, owner (read only; for people)",
     "session list", ()),
    ("show", "print a session's state, one field a line (read only; for people)",
     "session show sessions/2026_02_07_TOPIC", (_DIR,)),
)  # fmt: skip
"""Every subcommand: name, summary, an example, and its arguments (argparse's own options)."""


def command_module(name: str) -> str:
    """The module of subcommand *name* (``continue`` is a keyword: its module is ``continue_``)."""
    return f"{COMMANDS_PACKAGE}.{name}_" if name == "continue" else f"{COMMANDS_PACKAGE}.{name}"


def parser() -> argparse.ArgumentParser:
    from claude_shepherd.supervisor import __version__

    top = _Parser(
        prog=PROG,
        description="Manage the session an agent works in (sessions/NAME/.state.json).",
        epilog="example:\n  session activate sessions/2026_02_07_TOPIC implement\n\n"
        "Run `session COMMAND --help` for one command.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    completion.add_options(top)
    sub = top.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, summary, example, arguments in COMMAND_LINE:
        command = sub.add_parser(
            name, help=summary, description=summary, epilog=f"example:\n  {example}",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )  # fmt: skip
        for flag, options in arguments:
            command.add_argument(flag, **options)
    return top


def _dispatch(argv: list[str] | None) -> int:
    if argv is None and completion.requested():
        completion.complete(parser())  # the shell asks for candidates: answered, and exits
    args = vars(parser().parse_args(argv))
    name = args.pop("command")
    if name is None:
        parser().print_help()
        return EXIT_USAGE
    from claude_shepherd.supervisor.session.person import refuse_a_person

    refuse_a_person(name)
    command = __import__(command_module(name), fromlist=["run"])  # the C import: -X importtime sees it
    status: int = command.run(**args)
    return status


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; an expected failure is one line on stderr and its exit status."""
    return run_main(PROG, lambda: _dispatch(argv))


def entry() -> None:
    sys.exit(main())
