"""How ``fleet`` reaches a host: one interface, two ways (this machine, OpenSSH).

A :class:`Host` runs a program there and says what came back, or why the host
did not answer, within a deadline. Every verb talks to hosts through this
seam only, so another transport (``kubectl exec``, a container) is one more
class with the same three methods.

Over SSH, one connection per host is shared by every call (OpenSSH's
ControlMaster, its control socket in the user's private tmux directory, kept
for ten minutes after the last call): a call costs a channel on that
connection, not a handshake. What crosses the network is the command line,
a layout document on stdin and JSON on stdout; nothing else.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import re
import selectors
import shlex
import signal
import subprocess
import time
import typing as t
from dataclasses import dataclass
from pathlib import Path

from claude_shepherd.fleet.environment import scripts_dir
from claude_shepherd.fleet.hosts import LOCAL, answer
from claude_shepherd.fleet.hosts.answer import MAX_ANSWER
from claude_shepherd.fleet.live import own_socket_dir
from claude_shepherd.supervisor.env import (
    FLEET_HOST_TIMEOUT_ENV,
    FLEET_REMOTE_HOME_ENV,
    FLEET_SSH_COMMAND_ENV,
    FLEET_SSH_REUSE_ENV,
)
from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.session.numbers import parse_decimal
from claude_shepherd.supervisor.session.private_dir import private_dir

DEFAULT_TIMEOUT = 10.0
"""Seconds a host has to answer (connect and reply) before it is reported unreachable."""
REMOTE_HOME = ".local/share/claude-shepherd"
"""Where ``fleet host add`` installs on a host, relative to its login's home."""
CONTROL_PERSIST = 600
"""Seconds a shared SSH connection stays open after its last call."""
SSH_UNREACHABLE = 255
"""ssh's own exit status when it could not connect (or the connection dropped)."""
_DESTINATION = re.compile(
    r"^(?:(?P<user>[^@\s]+)@)?(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<name>[^:@\s\[\]]+))(?::(?P<port>[0-9]{1,5}))?$"
)


class HostError(ShepherdError):
    """A host answered, but not with what ``fleet`` asked for."""


@dataclass(frozen=True)
class Reply:
    """What one call on a host came back with."""

    host: str
    status: int | None
    """The program's exit status; None when the host did not answer."""
    stdout: str
    stderr: str
    seconds: float
    problem: str | None = None
    """Why the host did not answer (unreachable, no answer in time); None when it did."""
    ran: bool = True
    """False when the program certainly did not run there (no connection could be made); a host that
    did not answer may still have run it."""
    overflowed: bool = False
    """It said more than :data:`~.answer.MAX_ANSWER` bytes on stdout or stderr: it was ended there, and
    what it said is cut there and not believed as an answer."""

    @property
    def reached(self) -> bool:
        return self.problem is None

    def last_error(self) -> str:
        """The last line the program said on stderr (``fleet: error: ...`` without its prefix)."""
        lines = [line.strip() for line in self.stderr.splitlines() if line.strip()]
        return lines[-1].removeprefix("fleet: error: ") if lines else f"exit status {self.status}"

    def json(self) -> t.Any:
        """stdout as JSON within the bounds of :mod:`.answer`, or a :class:`HostError` that says what
        came instead: every reader of a host's answer fails with it alone."""
        if self.overflowed:
            raise HostError(f"{self.host}: its fleet said over {MAX_ANSWER} bytes; not believed")
        try:
            return answer.parse(self.stdout)
        except answer.BadAnswer as exc:
            raise HostError(f"{self.host}: its fleet's answer {exc}; not believed") from None
        except answer.NotJson:
            said = (self.stderr.strip() or self.stdout.strip() or "nothing").splitlines()[-1][:200]
            raise HostError(
                f"{self.host}: its fleet did not answer in JSON (exit status {self.status}): {said}; "
                f"is the same claude-shepherd installed there? `fleet host add {self.host}`"
            ) from None


class Host(t.Protocol):
    """A machine that runs its own fleet."""

    name: str

    def run(
        self, argv: t.Sequence[str], *, stdin: bytes | None = None, timeout: float | None = None
    ) -> Reply:
        """Run *argv* there; its output, or why the host did not answer within *timeout* seconds."""
        ...

    def fleet_argv(self, args: t.Sequence[str]) -> list[str]:
        """The argv that runs that host's ``fleet ARGS`` (for :meth:`run`)."""
        ...

    def terminal(self, argv: t.Sequence[str], *, tty: bool = True) -> list[str]:
        """An argv to run here that runs *argv* there on this terminal (``fleet attach``); with *tty*
        False, never on a terminal there: what it says is read here (``fleet logs``)."""
        ...

    def disconnect(self) -> None:
        """Close what :meth:`run` keeps open to reach the host (its agents run on)."""
        ...


SLACK = 30.0
"""Seconds a host gets beyond what the verb itself may take (a start's wait, a stop's grace)."""


def host_timeout(env: t.Mapping[str, str] | None = None) -> float:
    """``$FLEET_HOST_TIMEOUT``, else :data:`DEFAULT_TIMEOUT` (a bad value is the default, not a crash)."""
    raw = (os.environ if env is None else env).get(FLEET_HOST_TIMEOUT_ENV, "")
    value = parse_decimal(raw.strip(), maximum=3600.0) if raw.strip() else None
    return value if value else DEFAULT_TIMEOUT


def _run(host: str, argv: list[str], stdin: bytes | None, timeout: float) -> Reply:
    """*argv* as a child in its own process group, killed whole at *timeout*, or once it has said more
    than :data:`~.answer.MAX_ANSWER` bytes (a host is never read whole)."""
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        return Reply(host, None, "", "", 0.0, f"cannot run {argv[0]}: {exc.strerror or exc}", ran=False)
    deadline = started + timeout
    out, err, ended = _collect(proc, stdin, deadline)
    if ended == "done":
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            ended = "late"
    if ended != "done":
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        # Never read to the end: an ssh client hands its pipes to the shared connection, which
        # outlives the kill and would hold us until the remote command ended.
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        proc.wait()
    seconds = time.monotonic() - started
    if ended == "late":
        return Reply(host, None, "", "", seconds, f"no answer within {timeout:g} s")
    return Reply(
        host, proc.returncode, out[:MAX_ANSWER].decode(errors="replace"),
        err[:MAX_ANSWER].decode(errors="replace"), seconds, overflowed=ended == "over",
    )  # fmt: skip


def _collect(
    proc: subprocess.Popen[bytes], stdin: bytes | None, deadline: float
) -> tuple[bytes, bytes, t.Literal["done", "late", "over"]]:
    """What *proc* says on stdout and stderr while it is given *stdin*: until both end (``done``), until
    *deadline* (``late``), or until either is over :data:`~.answer.MAX_ANSWER` bytes (``over``)."""
    assert proc.stdout is not None and proc.stderr is not None
    said = {proc.stdout.fileno(): bytearray(), proc.stderr.fileno(): bytearray()}
    pending = memoryview(stdin or b"")
    with selectors.DefaultSelector() as selector:
        for fd in said:
            selector.register(fd, selectors.EVENT_READ)
        if proc.stdin is not None:
            if pending:
                os.set_blocking(proc.stdin.fileno(), False)
                selector.register(proc.stdin.fileno(), selectors.EVENT_WRITE)
            else:
                proc.stdin.close()
        while selector.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return bytes(said[proc.stdout.fileno()]), bytes(said[proc.stderr.fileno()]), "late"
            for key, _ in selector.select(left):
                if key.fd in said:
                    chunk = os.read(key.fd, 64 * 1024)
                    if not chunk:
                        selector.unregister(key.fd)
                    said[key.fd] += chunk
                    if len(said[key.fd]) > MAX_ANSWER:
                        return bytes(said[proc.stdout.fileno()]), bytes(said[proc.stderr.fileno()]), "over"
                    continue
                try:
                    pending = pending[os.write(key.fd, pending[: 64 * 1024]) :]
                except BlockingIOError:
                    continue
                except BrokenPipeError:
                    pending = pending[:0]  # it reads no more of its input: what it says still counts
                if not pending:
                    selector.unregister(key.fd)
                    assert proc.stdin is not None
                    proc.stdin.close()
    return bytes(said[proc.stdout.fileno()]), bytes(said[proc.stderr.fileno()]), "done"


class LocalHost:
    """This machine: programs run directly; ``fleet`` is this installation's."""

    name = LOCAL

    def run(
        self, argv: t.Sequence[str], *, stdin: bytes | None = None, timeout: float | None = None
    ) -> Reply:
        return _run(self.name, list(argv), stdin, host_timeout() if timeout is None else timeout)

    def fleet_argv(self, args: t.Sequence[str]) -> list[str]:
        folder = scripts_dir()
        return [str(folder / "fleet") if folder else "fleet", *args]

    def terminal(self, argv: t.Sequence[str], *, tty: bool = True) -> list[str]:
        return list(argv)

    def disconnect(self) -> None:
        """Nothing to close: this machine needs no connection."""


class SshHost:
    """Another machine, through OpenSSH: ``name`` is the layout's ``host:``, ``[user@]name[:port]``."""

    def __init__(self, name: str, env: t.Mapping[str, str] | None = None) -> None:
        env = os.environ if env is None else env
        match = _DESTINATION.fullmatch(name)
        if not match or name.startswith("-"):
            raise ShepherdError(f"host {name!r} is not [user@]name[:port]")
        self.name = name
        user = f"{match['user']}@" if match["user"] else ""
        self.destination = user + (match["v6"] or match["name"])
        self.port = match["port"]
        try:
            self.ssh = shlex.split(env.get(FLEET_SSH_COMMAND_ENV, "").strip() or "ssh")
        except ValueError as exc:
            raise ShepherdError(
                f"${FLEET_SSH_COMMAND_ENV} cannot be split ({exc}); quote it as for a shell"
            ) from None
        self.reuse = env.get(FLEET_SSH_REUSE_ENV, "1").strip() != "0"
        self.home = env.get(FLEET_REMOTE_HOME_ENV, "").strip() or REMOTE_HOME
        self._control: Path | t.Literal[False] | None = None
        """The control socket once ssh named it; False when it could not."""

    # ----------------------------------------------------------------- the connection

    def _options(self, timeout: float) -> list[str]:
        options = [
            "-o", "BatchMode=yes",
            "-o", f"ConnectTimeout={max(1, int(timeout))}",
            "-o", "ServerAliveInterval=5",
            "-o", "ServerAliveCountMax=2",
        ]  # fmt: skip
        if self.port:
            options += ["-p", self.port]
        control = self.control_path() if self.reuse else None
        if control is not None:
            options += ["-o", f"ControlPath={control}"]
        else:
            options += ["-o", "ControlMaster=no", "-o", "ControlPath=none"]
        return options

    def control_path(self) -> Path | None:
        """The shared connection's socket, as ssh names it (``%C``: a hash of user, host and port, so two
        names of one host share one connection); in a private folder of this user, made and checked
        before ssh is asked (another user's folder there would hand them our calls: a listener of theirs
        on the socket's name). None when ssh cannot say (no connection is shared then)."""
        if self._control is None:
            folder = Path(private_dir(own_socket_dir() / "ssh"))
            asked = [
                *self.ssh,
                "-G",
                "-o",
                f"ControlPath={folder}/%C",
                *(["-p", self.port] if self.port else []),
            ]
            reply = _run(self.name, [*asked, self.destination], None, 5)
            found = [
                line.split(None, 1)[1].strip()
                for line in reply.stdout.splitlines()
                if line.lower().startswith("controlpath ")
            ]
            path = Path(found[0]) if reply.status == 0 and found else None
            self._control = path if path is not None and path.parent == folder else False
        return self._control or None

    def connect(self, timeout: float) -> Reply | None:
        """Open the shared connection unless it is open; a Reply saying why when the host does not answer.

        It is started in the background (``-f``) with its output in a file,
        never a pipe of ours, so no call waits on it; a lock per connection
        makes two callers (two names of one host) open one, and a socket left
        by a connection that died is removed first (ssh would otherwise open a
        plain connection that never ends).
        """
        control = self.control_path() if self.reuse else None
        if control is None:
            return None
        if self._check(timeout):
            return None
        deadline = time.monotonic() + timeout
        lock = os.open(control.parent / f".{control.name}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            while True:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        return None  # another caller is still connecting: this call goes on its own
                    time.sleep(0.05)
            if self._check(timeout):
                return None
            with contextlib.suppress(FileNotFoundError):
                control.unlink()  # a socket whose connection died
            return self._start_master(timeout)
        finally:
            os.close(lock)

    def _start_master(self, timeout: float) -> Reply | None:
        argv = [*self.ssh, *self._options(timeout), "-o", "ControlMaster=yes",
                "-o", f"ControlPersist={CONTROL_PERSIST}", "-N", "-f", self.destination]  # fmt: skip
        import tempfile  # only where a connection is opened: not on `fleet status`'s path (docs/HOT_CORE.md)

        started = time.monotonic()
        with tempfile.TemporaryFile() as said:
            try:
                proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=said,
                                        start_new_session=True)  # fmt: skip
            except OSError as exc:
                return Reply(self.name, None, "", "", 0.0, f"cannot run {argv[0]}: {exc.strerror or exc}")
            try:
                status = proc.wait(timeout + 2)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return Reply(
                    self.name, None, "", "", time.monotonic() - started, f"no answer within {timeout:g} s"
                )
            said.seek(0)
            stderr = said.read(64 * 1024).decode(errors="replace")
        if status != 0:
            return _unreachable(Reply(self.name, status, "", stderr, time.monotonic() - started))
        return None

    def _check(self, timeout: float) -> bool:
        reply = _run(
            self.name, [*self.ssh, *self._options(timeout), "-O", "check", self.destination], None, timeout
        )
        return reply.status == 0

    def disconnect(self) -> None:
        """Let the shared connection end: it takes no new calls and closes once those under way (another
        fleet's ``attach`` or ``logs -f``) are done. The agents there run on: they are that host's own."""
        if self.reuse and self.control_path() is not None:
            _run(self.name, [*self.ssh, *self._options(5), "-O", "stop", self.destination], None, 5)

    # ----------------------------------------------------------------- Host

    def run(
        self, argv: t.Sequence[str], *, stdin: bytes | None = None, timeout: float | None = None
    ) -> Reply:
        timeout = host_timeout() if timeout is None else timeout
        failed = self.connect(min(timeout, host_timeout()))  # connecting has a deadline of its own
        if failed is not None:
            return dataclasses.replace(failed, ran=False)  # no connection: nothing was sent
        command = [*self.ssh, *self._options(timeout), "-T", self.destination, "--", shlex.join(argv)]
        reply = _run(self.name, command, stdin, timeout)
        return _unreachable(reply) if reply.status == SSH_UNREACHABLE and not reply.stdout else reply

    def fleet_argv(self, args: t.Sequence[str]) -> list[str]:
        return [f"{self.home}/venv/bin/fleet", *args]

    def terminal(self, argv: t.Sequence[str], *, tty: bool = True) -> list[str]:
        pty = "-t" if tty and os.isatty(0) else "-T"  # a pty there only for a terminal here (attach)
        return [*self.ssh, *self._options(host_timeout()), pty, self.destination, "--", shlex.join(argv)]


def _unreachable(reply: Reply) -> Reply:
    """*reply* as a host that did not answer, with ssh's own reason."""
    if reply.problem is not None:
        return reply
    lines = [line.strip() for line in reply.stderr.splitlines() if line.strip()]
    why = lines[-1] if lines else f"ssh exited with status {reply.status}"
    return Reply(reply.host, None, reply.stdout, reply.stderr, reply.seconds, why)


def host_named(name: str | None) -> Host:
    """The host a layout's ``host:`` names (None: this machine)."""
    return LocalHost() if name is None else SshHost(name)
