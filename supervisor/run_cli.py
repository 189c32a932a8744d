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
import re
import sys
import typing as t
from pathlib import Path

import typer
from typer.core import TyperCommand

from supervisor.agent_env import claude_environment
from supervisor.claude_args import split_args
from supervisor.claude_bin import EXIT_NOT_FOUND, ClaudeNotFoundError, find_claude
from supervisor.crashloop import CrashPolicy
from supervisor.errors import ShepherdError
from supervisor.foreground import ForegroundRunner
from supervisor.identity import current_pane_id, start_token
from supervisor.launch_plan import Owner
from supervisor.paths import sessions_root
from supervisor.prompt_additions import AgentNameError, build
from supervisor.subreaper import become_subreaper
from supervisor.supervise import DEFAULT_RESUME_WINDOW, Settings, Supervisor
from supervisor.watchdog import DEFAULT_GRACE, GRACE_ENV

PROG = "claude-run"
EXIT_USAGE = 2
EXIT_CANNOT_EXECUTE = 126

app = typer.Typer(
    name=PROG,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)

_PLAIN: dict[type, re.Pattern[str] | None] = {
    str: None,
    bool: None,
    int: re.compile(r"[0-9]+"),
    float: re.compile(r"[0-9]+(?:\.[0-9]+)?"),
}
"""Option types converted here, each with the strings it converts (None: only values already of the type)."""


class _PlainCoercion:
    """Converts a plain option value the way typer would, without typer's pydantic machinery.

    typer coerces every option value through a pydantic ``TypeAdapter``:
    importing pydantic and building one adapter per option is more CPU than
    the rest of claude-run's start-up, and a fleet starts a claude-run in
    every pane at once. A missing value, a value of the option's own type, or
    a decimal number (where ``int()``/``float()`` and pydantic agree) is
    converted here; any other value is handed to typer's own coercion, so
    results and error messages stay typer's.
    """

    def __init__(self, param: t.Any) -> None:
        self._param = param
        self._type = param.type_descriptor.annotation
        self._typer: t.Any = None

    def coerce(self, value: t.Any, param: t.Any, ctx: t.Any) -> t.Any:
        if value is None or type(value) is self._type:
            return value
        pattern = _PLAIN[self._type]
        if pattern is not None and isinstance(value, str) and pattern.fullmatch(value):
            return self._type(value)
        if self._typer is None:
            from typer._coercion import build_runtime_param

            self._typer = build_runtime_param(self._param.type_descriptor)
        return self._typer.coerce(value, param=param, ctx=ctx)


def _plain(param: t.Any) -> None:
    """Give *param* :class:`_PlainCoercion` when it is a plain single value (a typer without the hook: no-op)."""
    descriptor = getattr(param, "type_descriptor", None)
    if (
        descriptor is None
        or getattr(param, "_runtime_param", False) is not None
        or descriptor.annotation not in _PLAIN
        or descriptor.file_annotation is not None
        or descriptor.parameter_info.parser is not None
        or getattr(descriptor.parameter_info, "min", None) is not None
        or getattr(descriptor.parameter_info, "max", None) is not None
        or param.multiple
        or param.nargs != 1
    ):
        return
    param._runtime_param = _PlainCoercion(param)


class _Command(TyperCommand):
    """claude-run's command: plain options skip typer's pydantic coercion (see :class:`_PlainCoercion`)."""

    def get_params(self, ctx: t.Any) -> list[t.Any]:
        params = super().get_params(ctx)
        for param in params:  # the help option too: typer creates it here
            _plain(param)
        return params


def say(line: str) -> None:
    """A status line on stderr; a hung-up terminal must not turn it into a crash."""
    try:
        os.write(2, f"[{PROG}] {line}\n".encode("utf-8", "replace"))
    except OSError:
        pass


def error(message: str) -> None:
    try:
        os.write(2, f"{PROG}: error: {message}\n".encode("utf-8", "replace"))
    except OSError:
        pass


def _positive(value: float, name: str) -> float:
    if value < 0:
        raise typer.BadParameter(f"{name} must not be negative")
    return value


def banner(agent: str | None, description: str | None) -> str:
    """``Starting (agent: NAME) [desc: first 30 chars...]...`` as the original printed it."""
    text = "Starting"
    if agent:
        text += f" (agent: {agent})"
    if description:
        text += f" [desc: {description[:30]}{'...' if len(description) > 30 else ''}]"
    return text + "..."


@app.command(
    cls=_Command,
    context_settings={
        "allow_extra_args": True,
        "ignore_unknown_options": True,
        "help_option_names": ["--help"],
    },
    options_metavar="[OPTIONS] [--] [CLAUDE ARGS]...",
    help=(
        "Run Claude Code supervised: relaunch it when its session requests a restart, resume a fleet "
        "pane's conversation when safe, back off from crash loops. Arguments after the options "
        "(or after --) go to Claude on every launch; --resume/--continue and a prompt only on the first."
    ),
)
def main(
    ctx: typer.Context,
    agent: t.Annotated[
        str | None,
        typer.Option("--agent", metavar="NAME", help="Append agents/NAME.md to the system prompt."),
    ] = None,
    description: t.Annotated[
        str | None, typer.Option("--description", metavar="TEXT", help="An 'Agent Description:' line.")
    ] = None,
    focus: t.Annotated[
        str | None, typer.Option("--focus", metavar="TEXT", help="A 'Focus Areas:' line.")
    ] = None,
    kill_grace: t.Annotated[
        float,
        typer.Option(
            "--kill-grace", envvar=GRACE_ENV, metavar="S", help="Seconds between SIGTERM and SIGKILL."
        ),
    ] = DEFAULT_GRACE,
    crash_limit: t.Annotated[
        int,
        typer.Option(
            "--crash-limit", envvar="CLAUDE_RUN_CRASH_LIMIT", metavar="N", help="Give up after N crashes..."
        ),
    ] = 5,
    crash_window: t.Annotated[
        float,
        typer.Option(
            "--crash-window", envvar="CLAUDE_RUN_CRASH_WINDOW", metavar="S", help="...within S seconds."
        ),
    ] = 60.0,
    backoff: t.Annotated[
        float,
        typer.Option(
            "--backoff",
            envvar="CLAUDE_RUN_BACKOFF",
            metavar="S",
            help="First delay after a quick crash; doubles.",
        ),
    ] = 0.5,
    backoff_max: t.Annotated[
        float,
        typer.Option("--backoff-max", envvar="CLAUDE_RUN_BACKOFF_MAX", metavar="S", help="Longest delay."),
    ] = 30.0,
    min_uptime: t.Annotated[
        float,
        typer.Option(
            "--min-uptime",
            envvar="CLAUDE_RUN_MIN_UPTIME",
            metavar="S",
            help="A Claude up this long was healthy.",
        ),
    ] = 10.0,
    resume_window: t.Annotated[
        float,
        typer.Option(
            "--resume-window",
            envvar="CLAUDE_RUN_RESUME_WINDOW",
            metavar="S",
            help="Exit 1 this soon after --resume: the conversation was refused.",
        ),
    ] = DEFAULT_RESUME_WINDOW,
    restart_limit: t.Annotated[
        int,
        typer.Option(
            "--restart-limit",
            envvar="CLAUDE_RUN_RESTART_LIMIT",
            metavar="N",
            help="Stop after N requested restarts...",
        ),
    ] = 5,
    restart_window: t.Annotated[
        float,
        typer.Option(
            "--restart-window",
            envvar="CLAUDE_RUN_RESTART_WINDOW",
            metavar="S",
            help="...within S seconds (a restart loop; the request is kept).",
        ),
    ] = 600.0,
) -> None:
    for value, name in (
        (kill_grace, "--kill-grace"),
        (crash_window, "--crash-window"),
        (backoff, "--backoff"),
        (backoff_max, "--backoff-max"),
        (min_uptime, "--min-uptime"),
        (resume_window, "--resume-window"),
        (restart_window, "--restart-window"),
    ):
        _positive(value, name)
    if crash_limit < 1:
        raise typer.BadParameter("--crash-limit must be at least 1")
    if restart_limit < 1:
        raise typer.BadParameter("--restart-limit must be at least 1")
    policy = CrashPolicy(
        backoff=backoff,
        backoff_max=backoff_max,
        limit=crash_limit,
        window=crash_window,
        min_uptime=min_uptime,
        restart_limit=restart_limit,
        restart_window=restart_window,
    )
    try:
        status = supervise(
            list(ctx.args),
            agent=agent,
            description=description,
            focus=focus,
            grace=kill_grace,
            policy=policy,
            resume_window=resume_window,
        )
    except KeyboardInterrupt:  # Ctrl-C while no Claude runs (e.g. during a back-off)
        error("interrupted")
        status = 130
    raise typer.Exit(status)


def supervise(
    claude_args: list[str],
    *,
    agent: str | None,
    description: str | None,
    focus: str | None,
    grace: float,
    policy: CrashPolicy,
    resume_window: float,
) -> int:
    """Set everything up, run the loop, and return the exit status."""
    env = dict(os.environ)
    try:
        claude = find_claude(env)
    except ClaudeNotFoundError as exc:
        error(str(exc))
        return EXIT_NOT_FOUND
    try:
        additions = build(agent=agent, description=description, focus=focus, env=env)
    except AgentNameError as exc:
        error(str(exc))
        return EXIT_USAGE
    me = Owner(os.getpid(), start_token(os.getpid()))
    root = sessions_root()
    claude_env, warnings = claude_environment(env, supervisor_pid=me.pid, sessions_root=root)
    for line in [*additions.notes, *warnings]:
        say(line)
    become_subreaper()  # orphans of Claude's tree become ours to end (see supervisor.subreaper)
    runner = ForegroundRunner(supervisor_pid=me.pid, grace=grace, say=say)
    runner.install()
    settings = Settings(
        claude=str(claude),
        user_args=split_args(claude_args),
        system_prompt=additions.text or None,
        root=root,
        cwd=Path.cwd(),
        env=claude_env,
        policy=policy,
        resume_window=resume_window,
    )
    supervisor = Supervisor(
        settings,
        runner,
        me=me,
        pane_of=lambda: current_pane_id(env),
        say=say,
        banner=banner(agent, description),
    )
    try:
        status = supervisor.run()
    except OSError as exc:
        if exc.filename == str(claude) or exc.errno in (errno.ENOENT, errno.EACCES, errno.ENOEXEC):
            error(f"cannot execute {claude}: {exc.strerror}")
            return EXIT_NOT_FOUND if exc.errno == errno.ENOENT else EXIT_CANNOT_EXECUTE
        raise
    if supervisor.give_up is not None:
        error(supervisor.give_up.message)
    return status


def entry() -> None:
    """Console-script entry point: one-line errors, conventional exit codes."""
    try:
        app(prog_name=PROG)
    except ShepherdError as exc:
        error(str(exc))
        sys.exit(1)
    except KeyboardInterrupt:
        error("interrupted")
        sys.exit(130)
    except OSError as exc:
        error(f"{exc.strerror or exc} ({exc.filename or 'I/O'})")
        sys.exit(1)
