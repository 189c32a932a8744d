"""``claude-run``: the supervised launcher of Claude Code.

    claude-run [--agent NAME] [--description TEXT] [--focus TEXT] [--] [CLAUDE ARGS...]

Runs Claude in the terminal's foreground and relaunches it when a session it
owns requests a restart (``session restart`` / ``session dehydrate``), resumes
a fleet pane's conversation when that is safe, backs off from crash loops, and
exits with Claude's status otherwise. Status lines go to stderr, prefixed
``[claude-run]``; errors are one line, ``claude-run: error: ...``.

Tuning (options, or the environment for fleets and tests):
``--kill-grace`` / ``CLAUDE_RUN_KILL_GRACE`` (seconds between SIGTERM and
SIGKILL, 3), ``--crash-limit`` / ``CLAUDE_RUN_CRASH_LIMIT`` (5) within
``--crash-window`` / ``CLAUDE_RUN_CRASH_WINDOW`` (60 s), ``--backoff`` /
``CLAUDE_RUN_BACKOFF`` (0.5 s, doubling up to ``--backoff-max`` /
``CLAUDE_RUN_BACKOFF_MAX``, 30 s), ``--min-uptime`` / ``CLAUDE_RUN_MIN_UPTIME``
(10 s: a Claude that ran this long was healthy), ``--resume-window`` /
``CLAUDE_RUN_RESUME_WINDOW`` (10 s: exit 1 this soon after ``--resume`` means the
conversation was refused), ``--restart-limit`` / ``CLAUDE_RUN_RESTART_LIMIT`` (5)
requested restarts within ``--restart-window`` / ``CLAUDE_RUN_RESTART_WINDOW``
(600 s) stop a restart loop, keeping the pending request.
"""

from __future__ import annotations

import errno
import os
import sys
import types
from pathlib import Path

from claude_shepherd.supervisor import __version__, gitrepo
from claude_shepherd.supervisor.claude_run import worktree
from claude_shepherd.supervisor.claude_run.agent_env import claude_environment
from claude_shepherd.supervisor.claude_run.claude_args import split_args
from claude_shepherd.supervisor.claude_run.claude_bin import find_claude
from claude_shepherd.supervisor.claude_run.crashloop import CrashPolicy
from claude_shepherd.supervisor.claude_run.fleet_pane import nudge_reaping, publish_restarts, restarts_before
from claude_shepherd.supervisor.claude_run.foreground import ForegroundRunner
from claude_shepherd.supervisor.claude_run.launch_plan import Owner
from claude_shepherd.supervisor.claude_run.prompt_additions import build
from claude_shepherd.supervisor.claude_run.run_budget import RunBudget, has_own_budget, headless
from claude_shepherd.supervisor.claude_run.run_log import RunLines
from claude_shepherd.supervisor.claude_run.subreaper import become_subreaper
from claude_shepherd.supervisor.claude_run.supervise import DEFAULT_RESUME_WINDOW, Settings, Supervisor
from claude_shepherd.supervisor.claude_run.watchdog import DEFAULT_GRACE
from claude_shepherd.supervisor.env import KILL_GRACE_ENV as GRACE_ENV
from claude_shepherd.supervisor.errors import (
    BudgetSpentError,
    CannotExecuteError,
    ExitStatusError,
    ProgramMissingError,
    UsageError,
    run_main,
)
from claude_shepherd.supervisor.printable import printable
from claude_shepherd.supervisor.session.identity import current_pane_id, fleet_socket, start_token
from claude_shepherd.supervisor.session.paths import sessions_root
from claude_shepherd.supervisor.session.records import Record
from claude_shepherd.supervisor.session.roots import register as register_root

TYPE_CHECKING = False
if TYPE_CHECKING:  # claude-run runs beside every agent: no typing at run time (docs/HOT_CORE.md)
    import argparse
    import typing as t

PROG = "claude-run"

LINES = RunLines()
"""Everything claude-run says, also appended to its fleet pane's log (see :mod:`.run_log`)."""


def _write(text: str) -> None:
    """One line on stderr; a hung-up terminal must not turn it into a crash."""
    try:
        os.write(2, f"{text}\n".encode("utf-8", "replace"))
    except OSError:
        pass


def _keep(text: str) -> None:
    """Append *text* to the pane's log; say once on the screen when that stops working."""
    log = LINES.log
    already = log is not None and log.failed is not None
    LINES.add(text)
    if log is not None and log.failed is not None and not already:
        _write(
            f"[{PROG}] WARNING: cannot write this pane's log ({printable(log.failed)}); only the screen has these lines"
        )


def say(line: str) -> None:
    """A status line on stderr, shown safe (it names sessions and phases agents wrote), and kept in the pane's log."""
    text = f"[{PROG}] {printable(line)}"
    _write(text)
    _keep(text)


def banner(agent: str | None, description: str | None) -> str:
    """``Starting (agent: NAME) [desc: first 30 chars...]...`` as the original printed it."""
    text = "Starting"
    if agent:
        text += f" (agent: {agent})"
    if description:
        text += f" [desc: {description[:30]}{'...' if len(description) > 30 else ''}]"
    return text + "..."


class Tunable(Record):
    """One numeric option: its flag, its environment variable, its default, its lower bound."""

    __slots__ = ("flag", "env", "default", "kind", "low", "help", "field")
    flag: str
    env: str
    default: float
    kind: type
    low: float
    help: str
    field: str

    def __init__(
        self, flag: str, env: str, default: float, kind: type, low: float, help: str, field: str
    ) -> None:
        self.flag = flag
        self.env = env
        self.default = default
        self.kind = kind
        self.low = low
        self.help = help
        self.field = field

    def convert(self, raw: str, where: str) -> float:
        try:
            value = self.kind(raw)
        except ValueError:
            kind = "a whole number" if self.kind is int else "a number"
            raise UsageError(f"{where} must be {kind}, not {raw!r}") from None
        if value < self.low or value != value:
            raise UsageError(f"{where} must be at least {self.low:g}, not {raw!r}")
        return value


_POLICY = CrashPolicy()
TUNABLES: tuple[Tunable, ...] = (
    Tunable("--kill-grace", GRACE_ENV, DEFAULT_GRACE, float, 0, "seconds between SIGTERM and SIGKILL", "grace"),
    Tunable("--crash-limit", "CLAUDE_RUN_CRASH_LIMIT", _POLICY.limit, int, 1, "give up after N crashes...", "limit"),
    Tunable("--crash-window", "CLAUDE_RUN_CRASH_WINDOW", _POLICY.window, float, 0, "...within S seconds", "window"),
    Tunable("--backoff", "CLAUDE_RUN_BACKOFF", _POLICY.backoff, float, 0,
            "first delay after a quick crash; doubles", "backoff"),
    Tunable("--backoff-max", "CLAUDE_RUN_BACKOFF_MAX", _POLICY.backoff_max, float, 0, "longest delay", "backoff_max"),
    Tunable("--min-uptime", "CLAUDE_RUN_MIN_UPTIME", _POLICY.min_uptime, float, 0,
            "a Claude up this long was healthy", "min_uptime"),
    Tunable("--resume-window", "CLAUDE_RUN_RESUME_WINDOW", DEFAULT_RESUME_WINDOW, float, 0,
            "exit 1 this soon after --resume: the conversation was refused", "resume_window"),
    Tunable("--restart-limit", "CLAUDE_RUN_RESTART_LIMIT", _POLICY.restart_limit, int, 1,
            "stop after N requested restarts...", "restart_limit"),
    Tunable("--restart-window", "CLAUDE_RUN_RESTART_WINDOW", _POLICY.restart_window, float, 0,
            "...within S seconds (a restart loop; the request is kept)", "restart_window"),
)  # fmt: skip
"""Every tuning knob, declared once: flag, environment variable, default (the policy's own), bound."""


def _columns() -> int:
    """The terminal's width as ``shutil.get_terminal_size()`` tells it ($COLUMNS, else stdout's, else 80)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


DESCRIPTION = """\
Run Claude Code supervised: relaunch it when its session requests a restart,
resume a fleet pane's conversation when safe, back off from crash loops.
Arguments that are not claude-run's own (or all after --) go to Claude on
every launch; --resume/--continue and a prompt only on the first."""
EXAMPLES = """examples:
  claude-run                                   # a supervised Claude in this terminal
  claude-run --agent reviewer -- --model opus  # agents/reviewer.md appended; Claude gets --model opus
  claude-run --budget-usd 2 -- -p "fix it"     # headless: stops for good once $2 is spent, exit 4
  CLAUDE_RUN_KILL_GRACE=5 claude-run           # every knob has an environment variable

exit status: Claude's own (0 when it ended normally); 4 the --budget-usd is spent (a headless run,
every launch counted; or Claude ended paused at it); 2 a usage error; 127 no Claude Code found; 126 it cannot be run;
128+N stopped by signal N; 130 interrupted while no Claude ran"""


def parser() -> argparse.ArgumentParser:
    """The whole parser: for --help and --version, and every command line :func:`_quick` leaves to it."""
    import argparse  # only then: argparse, with gettext and locale, is half a MiB in every claude-run

    class _Parser(argparse.ArgumentParser):
        def error(self, message: str) -> t.NoReturn:
            raise UsageError(f"{message}; see `{PROG} --help`")

    class _Formatter(argparse.RawDescriptionHelpFormatter):
        """argparse's, sized without shutil: its own asks ``shutil.get_terminal_size()`` each time a parser
        is built, and shutil brings bz2 and lzma (over a megabyte in every claude-run, one per agent)."""

        def __init__(self, prog: str) -> None:
            super().__init__(prog, width=_columns() - 2)

    p = _Parser(
        prog=PROG, usage=f"{PROG} [OPTIONS] [--] [CLAUDE ARGS]...", description=DESCRIPTION, epilog=EXAMPLES,
        allow_abbrev=False, add_help=False, formatter_class=_Formatter,
    )  # fmt: skip
    p.add_argument("--help", action="help", help="show this help and exit (Claude's own: claude --help)")
    p.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    p.add_argument("--agent", metavar="NAME", help="append agents/NAME.md to the system prompt")
    p.add_argument("--description", metavar="TEXT", help="an 'Agent Description:' line")
    p.add_argument("--focus", metavar="TEXT", help="a 'Focus Areas:' line")
    p.add_argument(
        "--budget-usd",
        metavar="USD",
        help="pause this agent once it spent USD (its hooks refuse new work); a headless -p run stops "
        "there for good, what every launch spent counted, and claude-run exits 4",
    )
    p.add_argument(
        "--ignore-usage-limits",
        action="store_true",
        help="launch even while a usage window of Claude's credential is nearly spent ($CLAUDE_USAGE_IGNORE=1)",
    )
    for knob in TUNABLES:
        p.add_argument(
            knob.flag,
            metavar="N" if knob.kind is int else "S",
            help=f"{knob.help} (${knob.env}, default {knob.default:g})",
        )
    return p


VALUED = ("--agent", "--description", "--focus", "--budget-usd", *(knob.flag for knob in TUNABLES))
"""Our options that take a value; ``--ignore-usage-limits`` is the one switch."""
SWITCH = "--ignore-usage-limits"


def _quick(argv: list[str]) -> tuple[types.SimpleNamespace, list[str]] | None:
    """``parser().parse_known_args(argv)`` for the plain command lines a fleet writes, without argparse:
    our options as ``--flag VALUE`` or ``--flag=VALUE`` (a value that is not empty and does not start with
    ``-``) and the switch, every other word for Claude, in order, and all from ``--`` on. None for anything
    else (--help, --version, a value argparse would refuse or read its own way): the parser decides it."""
    ours = dict.fromkeys((flag[2:].replace("-", "_") for flag in VALUED), None)
    ours[SWITCH[2:].replace("-", "_")] = False
    rest: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "--":
            rest += argv[i:]
            break
        name, eq, value = token.partition("=")
        if name in VALUED:
            if not eq:
                if i + 1 == len(argv):
                    return None
                i += 1
                value = argv[i]
            if not value or value.startswith("-"):
                return None
            ours[name[2:].replace("-", "_")] = value
        elif token == SWITCH:
            ours[SWITCH[2:].replace("-", "_")] = True
        elif name in (SWITCH, "--help", "--version"):
            return None
        else:
            rest.append(token)
        i += 1
    return types.SimpleNamespace(**ours), rest


def parse(
    argv: list[str], env: t.Mapping[str, str]
) -> tuple[argparse.Namespace | types.SimpleNamespace, list[str], dict[str, t.Any]]:
    """Our options, Claude's arguments (in order), and every knob's value (option, else environment, else default)."""
    ours, claude_args = _quick(argv) or parser().parse_known_args(argv)
    if "--" in claude_args:
        claude_args.remove("--")
    values: dict[str, t.Any] = {}
    for knob in TUNABLES:
        given = getattr(ours, knob.flag[2:].replace("-", "_"))
        if given is not None:
            values[knob.field] = knob.convert(given, knob.flag)
        elif env.get(knob.env, "").strip():
            values[knob.field] = knob.convert(env[knob.env].strip(), knob.env)
        else:
            values[knob.field] = knob.default
    return ours, claude_args, values


def budget_of(raw: str | None) -> float | None:
    """``--budget-usd``'s amount, or None; a one-line error for anything but a positive number."""
    if raw is None:
        return None
    from claude_shepherd.supervisor.session.budgets import amount_problem
    from claude_shepherd.supervisor.session.numbers import parse_decimal

    value = parse_decimal(raw, maximum=1e6)
    if value is None or amount_problem(value) is not None:
        raise UsageError(
            f"--budget-usd takes USD as a whole number of cents above 0, like 5 or 2.50, not {raw!r} "
            "(to run without a budget, leave --budget-usd out)"
        )
    return value


def _run(argv: list[str]) -> int:
    ours, claude_args, values = parse(argv, os.environ)
    budget = budget_of(ours.budget_usd)
    policy = CrashPolicy(**{name: values[name] for name in CrashPolicy.__slots__})
    # Ctrl-C while no Claude runs (e.g. during a back-off): run_main says "interrupted", exit 130.
    return supervise(
        claude_args,
        agent=ours.agent,
        description=ours.description,
        focus=ours.focus,
        grace=values["grace"],
        policy=policy,
        resume_window=values["resume_window"],
        budget=budget,
        ignore_usage=ours.ignore_usage_limits,
    )


def supervise(
    claude_args: list[str],
    *,
    agent: str | None,
    description: str | None,
    focus: str | None,
    grace: float,
    policy: CrashPolicy,
    resume_window: float,
    budget: float | None = None,
    ignore_usage: bool = False,
) -> int:
    """Set everything up, run the loop, and return the exit status."""
    env = dict(os.environ)
    first_pane = [current_pane_id(env)]
    LINES.bind(fleet_socket(env), first_pane[0], env)

    def pane_of() -> str | None:
        """The pane looked up above answers the first question (at the first launch); later ones ask tmux."""
        return first_pane.pop() if first_pane else current_pane_id(env)

    claude = find_claude(env)  # ClaudeNotFoundError: run_main says it, exit 127
    additions = build(agent=agent, description=description, focus=focus, env=env)  # AgentNameError: exit 2
    me = Owner(os.getpid(), start_token(os.getpid()))
    root = sessions_root()
    register_root(root, env)  # every agent's hooks protect this root's sessions too
    claude_env, warnings = claude_environment(env, supervisor_pid=me.pid, sessions_root=root, budget=budget)
    for line in [*additions.notes, *warnings]:
        say(line)
    user_args = split_args(claude_args)
    name, user_args = worktree.requested(user_args, env)
    place = worktree.locate(name, Path.cwd()) if name else None  # WorktreeError: exit 1, said in one line
    if place is not None:
        say(f"Worktree: {place.path} (branch {gitrepo.branch_of(place.name)})")
    become_subreaper()  # orphans of Claude's tree become ours to end (see claude_shepherd.supervisor.claude_run.subreaper)
    runner = ForegroundRunner(supervisor_pid=me.pid, grace=grace, say=say)
    runner.install()
    places = (place.path, Path.cwd()) if place is not None else (Path.cwd(),)
    run_budget = None
    if budget is not None and headless(claude_args):
        run_budget = RunBudget(
            budget, root, (me.pid, me.token), places, claude_env, own_flag=has_own_budget(claude_args)
        )
    settings = Settings(
        claude=str(claude),
        user_args=user_args,
        system_prompt=additions.text or None,
        root=root,
        cwd=places if place is not None else Path.cwd(),
        worktree=place,
        env=claude_env,
        policy=policy,
        resume_window=resume_window,
        ignore_usage=ignore_usage,
        budget=run_budget,
    )
    before = restarts_before(env)  # the pane's relaunches before this claude-run (a respawn is one more)
    supervisor = Supervisor(
        settings,
        runner,
        me=me,
        pane_of=pane_of,
        say=say,
        banner=banner(agent, description),
        on_launch=lambda launches: publish_restarts(before + launches, env),
    )
    try:
        status = supervisor.run()
    except OSError as exc:
        if exc.filename == str(claude) or exc.errno in (errno.ENOENT, errno.EACCES, errno.ENOEXEC):
            why = f"cannot execute {claude}: {exc.strerror}"
            raise ProgramMissingError(why) if exc.errno == errno.ENOENT else CannotExecuteError(why) from None
        raise
    finally:
        runner.end_kept()  # it exits for good: nothing of the hooks waits on to type into the pane
    if supervisor.spent_out and run_budget is not None:
        raise BudgetSpentError(run_budget.line())
    if supervisor.give_up is not None:
        raise ExitStatusError(supervisor.give_up.message, status)
    return status


def main(argv: list[str] | None = None) -> int:
    status = run_main(PROG, lambda: _run(sys.argv[1:] if argv is None else argv), keep=_keep)
    nudge_reaping(os.environ)  # in a fleet pane: tmux learns how this pane's process ended
    return status


def entry() -> None:
    """Console-script entry point: one-line errors, conventional exit codes."""
    sys.exit(main())
