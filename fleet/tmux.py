"""The fleet's own tmux server: tmux on a private socket, every call with a deadline.

libtmux runs tmux through ``subprocess`` without a timeout, so a wedged server
would hang ``fleet`` forever (peers hit exactly that: orphaned tmux clients that
spin), and importing it cost ``fleet start`` more than the tmux calls that
build a whole fleet. :class:`FleetServer` runs every command with a deadline,
and one ``list-panes -a -F`` call gives the whole fleet, much cheaper than
walking libtmux's objects.

Only sockets named ``fleet`` or ``fleet-*`` are fleets: the hooks and the pane
identity ignore every other tmux server, and so do we — the user's default
server is never touched.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import time
import typing as t
from dataclasses import dataclass
from pathlib import Path

from claude_shepherd.supervisor.env import FLEET_TMUX_TIMEOUT_ENV as TIMEOUT_ENV
from claude_shepherd.supervisor.errors import EXIT_FAILURE, EXIT_NOT_FOUND, ProgramMissingError, ShepherdError
from claude_shepherd.supervisor.session.numbers import PID_MAX, parse_count, parse_decimal
from claude_shepherd.supervisor.session.private_dir import private_dir
from claude_shepherd.supervisor.session.programs import run, run_tmux
from claude_shepherd.supervisor.session.roots import registry_dir
from claude_shepherd.supervisor.session.store import write_atomic
from claude_shepherd.supervisor.tmux_names import (
    AGENT_OPTION,
    CLAUDE_OPTION,
    CONTEXT_OPTION,
    COST_OPTION,
    FIELD_SEP,
    FLEET_SOCKET,
    LABEL_OPTION,
    PANE_OPTION,
    REAP_NUDGE,
    RESTARTS_OPTION,
    is_fleet_socket,
    one_line_field,
)

DEFAULT_TIMEOUT = 5.0
MAX_TIMEOUT = 600.0
MIN_VERSION = (3, 2)


class TmuxError(ShepherdError):
    """A tmux command failed or did not answer in time."""

    exit_code = EXIT_FAILURE


class TmuxMissingError(TmuxError, ProgramMissingError):
    """No usable tmux binary (exit 127, the shell's 'command not found')."""

    exit_code = EXIT_NOT_FOUND


class _Separator(str):
    """The ``;`` between commands of one tmux invocation (any other trailing ``;`` is escaped)."""


NEXT = _Separator(";")
"""Put between two commands in one :meth:`FleetServer.cmd` call: tmux runs them in one go."""


def _arg(value: object) -> str:
    if isinstance(value, _Separator):
        return ";"
    text = str(value)
    # tmux splits commands at an argument ending in ';' — a script or label ending so must not be cut.
    return text[:-1] + "\\;" if text.endswith(";") else text


def _lines(text: str) -> list[str]:
    """*text* split into lines as text-mode pipes read them (``\\r\\n`` and ``\\r`` end a line too)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def default_timeout() -> float:
    value = parse_decimal(os.environ.get(TIMEOUT_ENV, "").strip(), maximum=MAX_TIMEOUT)
    return value if value else DEFAULT_TIMEOUT


@functools.cache
def find_tmux(tmux_bin: str | None = None) -> str:
    """The absolute path of tmux, checked to be recent enough for the formats the fleet reads."""
    name = tmux_bin or "tmux"
    path = shutil.which(name)
    if path is None:
        raise TmuxMissingError(
            f"{name} not found on PATH; install tmux {MIN_VERSION[0]}.{MIN_VERSION[1]} or newer"
        )
    binary = _binary(path)
    if binary is not None and binary in _checked():
        return path
    try:
        out = run([path, "-V"], timeout=default_timeout(), strict=True)
    except OSError as exc:  # TimeoutError included
        raise TmuxMissingError(f"{path} -V failed ({exc}); is it a working tmux?") from None
    assert out is not None  # strict: a failure raised
    match = re.search(r"(\d+)\.(\d+)", out.stdout)
    if match and (int(match.group(1)), int(match.group(2))) < MIN_VERSION:
        raise TmuxMissingError(
            f"{path} is {out.stdout.strip()}; the fleet needs tmux {MIN_VERSION[0]}.{MIN_VERSION[1]} or newer"
        )
    if binary is not None:
        _remember_checked(binary)
    return path


# A tmux binary found recent enough is not asked again (``tmux -V`` is a process, as much as the one call
# `fleet status` makes): the file it was, by inode, size and modification time, is kept in the private
# state folder; a binary replaced or upgraded since is asked afresh.

_CHECKED_KEPT = 8


def _binary(path: str) -> str | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return f"{os.path.realpath(path)}\x00{found.st_ino}\x00{found.st_size}\x00{found.st_mtime_ns}"


def _checked_file() -> str:
    top = registry_dir(os.environ)
    return os.path.join(private_dir(os.path.join(top, "parsed"), within=top), "tmux-checked")


def _checked() -> list[str]:
    try:
        with open(_checked_file(), encoding="utf-8", errors="surrogateescape") as kept:
            return kept.read(64 * 1024).split("\n")
    except (OSError, ShepherdError):
        return []


def _remember_checked(binary: str) -> None:
    try:
        kept = [line for line in _checked() if line and line != binary][-(_CHECKED_KEPT - 1) :]
        write_atomic(Path(_checked_file()), "\n".join([*kept, binary]) + "\n")
    except (OSError, ShepherdError):
        pass


@dataclass
class TmuxResult:
    """One tmux invocation's outcome: its status and its output lines."""

    cmd: list[str]
    returncode: int
    stdout: list[str]
    stderr: list[str]


class FleetServer:
    """A tmux server on a fleet socket whose every command has a deadline."""

    def __init__(
        self,
        socket_name: str,
        *,
        config_file: str | None = None,
        tmux_bin: str | None = None,
        colors: int | None = None,
        timeout: float | None = None,
    ) -> None:
        if not is_fleet_socket(socket_name):
            raise TmuxError(
                f"socket {socket_name!r} is not a fleet socket; name it {FLEET_SOCKET} or {FLEET_SOCKET}-SOMETHING"
            )
        self.socket_name = socket_name
        self.config_file = config_file
        self.colors = colors
        self.tmux_bin = find_tmux(tmux_bin)
        self.timeout = default_timeout() if timeout is None else timeout

    def cmd(
        self,
        cmd: str,
        *args: t.Any,
        target: str | int | None = None,
        path: str | None = None,
        env: t.Mapping[str, str] | None = None,
    ) -> TmuxResult:
        """Run one tmux invocation with the deadline.

        *path*: the ``PATH`` a pane this invocation creates or respawns runs with. tmux gives such a
        pane the PATH of the client that asked (not the session's), so the client gets it. *env*: the
        client's whole environment (a server this invocation starts keeps it as its own).
        """
        options = [f"-f{self.config_file}"] if self.config_file else []
        options += {256: ["-2"], 88: ["-8"]}.get(self.colors or 0, [])
        args_out = [cmd, *(["-t", str(target)] if target is not None else []), *(_arg(a) for a in args)]
        process_env = (
            None
            if path is None and env is None
            else {**(os.environ if env is None else env), **({"PATH": path} if path else {})}
        )
        try:
            done = run_tmux(
                self.socket_name,
                args_out,
                tmux=self.tmux_bin,
                options=options,
                timeout=self.timeout,
                process_env=process_env,
                errors="backslashreplace",
                strict=True,
            )
        except TimeoutError:
            raise TmuxError(
                f"tmux did not answer `{cmd}` within {self.timeout:g}s (socket {self.socket_name}); "
                f"is the server wedged? `tmux -L {self.socket_name} kill-server` ends it"
            ) from None
        except OSError:
            raise TmuxMissingError(f"{self.tmux_bin} disappeared; install tmux") from None
        assert done is not None  # strict: a failure raised
        out = _lines(done.stdout)
        while out and out[-1] == "":
            out.pop()
        return TmuxResult(done.args, done.returncode, out, [line for line in _lines(done.stderr) if line])

    def run(
        self,
        cmd: str,
        *args: t.Any,
        target: str | int | None = None,
        path: str | None = None,
        env: t.Mapping[str, str] | None = None,
    ) -> list[str]:
        """Run a command, return its stdout lines, or raise :class:`TmuxError` with tmux's reason."""
        result = self.cmd(cmd, *args, target=target, path=path, env=env)
        if result.returncode != 0 or result.stderr:
            reason = result.stderr[0] if result.stderr else f"exit status {result.returncode}"
            raise TmuxError(f"tmux {cmd} failed on socket {self.socket_name}: {reason}")
        return list(result.stdout)

    def session_names(self) -> list[str]:
        result = self.cmd("list-sessions", "-F", "#{session_name}")
        return list(result.stdout) if result.returncode == 0 else []

    def has_fleet_session(self, name: str) -> bool:
        return name in self.session_names()

    def session_path(self, target: str) -> str | None:
        """The ``PATH`` in the environment of *target*'s session (a session or a pane), if it has one."""
        result = self.cmd("show-environment", "-t", target, "PATH")
        line = result.stdout[0] if result.returncode == 0 and result.stdout else ""
        return line[len("PATH=") :] if line.startswith("PATH=") else None

    def socket_file(self) -> str | None:
        """The server's socket path (to tell its panes' processes apart from other servers')."""
        result = self.cmd("display-message", "-p", "#{socket_path}")
        return result.stdout[0] if result.returncode == 0 and result.stdout else None


PANE_FIELDS = (
    "session_name",
    "window_id",
    "window_name",
    "window_index",
    "pane_id",
    "pane_index",
    LABEL_OPTION,
    AGENT_OPTION,
    "pane_pid",
    "pane_dead",
    "pane_dead_status",
    "pane_dead_signal",
    PANE_OPTION,
    CONTEXT_OPTION,
    COST_OPTION,
    RESTARTS_OPTION,
    CLAUDE_OPTION,
    "pane_current_path",
    "pane_active",
    "window_active",
    "socket_path",
)


@dataclass(frozen=True)
class PaneInfo:
    """One pane as tmux sees it (one row of ``list-panes -a``)."""

    session: str
    window_id: str
    window: str
    window_index: int
    pane_id: str
    pane_index: int
    label: str
    agent: bool
    pid: int
    dead: bool
    dead_status: str
    dead_signal: str
    notify: str
    context: str
    cost: str
    restarts: str
    current_path: str
    active: bool
    window_active: bool
    socket_path: str = ""
    """Its server's socket (to tell its processes apart from other servers'), as ``socket_file`` says it."""
    claude_up: str = ""
    """The pid of the Claude whose SessionStart hook marked the pane (:data:`CLAUDE_OPTION`), as written."""

    @property
    def death(self) -> str:
        """How a dead pane's process ended, for a person: ``exited with status 127``, ``killed by SIGKILL``."""
        return f"exited with status {self.dead_status}" if self.dead_status else \
            f"killed by {_signal_name(self.dead_signal)}" if self.dead_signal else "exited"  # fmt: skip

    @property
    def exit_code(self) -> str:
        """The dead pane's status in a column: ``127``, ``SIGKILL`` or ""."""
        return self.dead_status or (_signal_name(self.dead_signal) if self.dead_signal else "")

    @property
    def identity(self) -> str | None:
        """The fleet pane id ``session:window:label`` (None for an unlabelled pane)."""
        if not self.label:
            return None
        return f"{self.session}:{self.window}:{self.label}"


REAP_TRIES = 3
"""How often :func:`list_panes` has tmux reap before it shows a dead pane without its exit status."""


def list_panes(server: FleetServer, session: str | None = None) -> list[PaneInfo]:
    """Every pane of the server (or of one session); a dead pane with its exit status or signal.

    tmux at times misses a pane process's exit (see :data:`REAP_NUDGE`): where a dead pane shows
    neither status nor signal, a job of tmux's own makes it reap, and the panes are listed again.
    """
    panes = _list_panes(server, session)
    for _ in range(REAP_TRIES):
        if not any(p.dead and not (p.dead_status or p.dead_signal) for p in panes):
            break
        server.cmd(*REAP_NUDGE)
        time.sleep(0.05)
        panes = _list_panes(server, session)
    return panes


def _list_panes(server: FleetServer, session: str | None) -> list[PaneInfo]:
    """Every pane of the server (or of one session) in one tmux call."""
    fmt = FIELD_SEP.join(one_line_field(name) for name in PANE_FIELDS)
    args = ["-s", "-t", f"={session}"] if session else ["-a"]
    result = server.cmd("list-panes", *args, "-F", fmt)
    if result.returncode != 0:
        return []
    panes: list[PaneInfo] = []
    for line in result.stdout:
        parts = line.split(FIELD_SEP)
        if len(parts) != len(PANE_FIELDS):
            # Each field is one line without separators: a row that does not parse means a tmux that
            # cannot say so (before 2.9); a pane must never silently go missing (doctor would end it).
            raise TmuxError(
                f"tmux {server.socket_name} listed a pane fleet cannot read: {line[:80]!r}; "
                "fleet needs tmux 3.0 or later"
            )
        row = dict(zip(PANE_FIELDS, parts))
        panes.append(
            PaneInfo(
                session=row["session_name"],
                window_id=row["window_id"],
                window=row["window_name"],
                window_index=_int(row["window_index"]),
                pane_id=row["pane_id"],
                pane_index=_int(row["pane_index"]),
                label=row[LABEL_OPTION],
                agent=row[AGENT_OPTION] == "1",
                pid=_int(row["pane_pid"]),
                dead=row["pane_dead"] == "1",
                dead_status=row["pane_dead_status"],
                dead_signal=row["pane_dead_signal"],
                notify=row[PANE_OPTION],
                context=row[CONTEXT_OPTION],
                cost=row[COST_OPTION],
                restarts=row[RESTARTS_OPTION],
                current_path=row["pane_current_path"],
                active=row["pane_active"] == "1",
                window_active=row["window_active"] == "1",
                socket_path=row["socket_path"],
                claude_up=row[CLAUDE_OPTION],
            )
        )
    return panes


def _signal_name(number: str) -> str:
    value = parse_count(number, maximum=255)
    try:
        return signal.Signals(value).name if value is not None else f"signal {number}"
    except ValueError:
        return f"signal {number}"


def _int(raw: str) -> int:
    """An index or PID tmux printed; 0 (no process, first place) when it is not one."""
    value = parse_count(raw, maximum=PID_MAX)
    return 0 if value is None else value


def pane_history(server: FleetServer, pane_id: str, count: int) -> list[str]:
    """The last *count* lines of a pane (its history and screen), without the empty rows below the cursor."""
    out = server.cmd("capture-pane", "-p", "-J", "-t", pane_id, "-S", f"-{count}")
    lines = list(out.stdout) if out.returncode == 0 else []
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def new_lines(before: list[str], after: list[str]) -> list[str]:
    """The lines of *after* (a pane's history now) that *before* (as last read) did not have.

    The history scrolls (lines leave at the top, arrive at the bottom) and a
    program redraws its last rows in place (a spinner, a status line, an input
    box); what it printed above stays. So the lines of *after* that do not line
    up with *before* in order are the new output and the redrawn rows — never
    the whole history again because a row at the bottom changed.
    """
    import difflib  # `fleet logs -f` alone: not on `fleet status`'s path (docs/HOT_CORE.md)

    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    return [
        line
        for tag, _, _, j1, j2 in matcher.get_opcodes()
        if tag in ("insert", "replace")
        for line in after[j1:j2]
    ]
