"""One lock per fleet socket: the verbs that change a fleet never run twice at once.

``fleet start``, ``stop``, ``restart``, ``doctor --fix`` and the watch's keys
read the fleet, decide, then act; two of them interleaved can each act on a
fleet the other is half-way through changing (a second start that sees no
session yet, fails with "duplicate session", and removes the session the first
one just built). Each holds this lock for its whole run; a second caller waits,
says whom it waits for, and gives up after a bounded time.

The lock file lives next to tmux's own sockets (``$TMUX_TMPDIR/tmux-UID``, a
private directory of this user), never under the sessions root an agent writes.
Its name starts with a dot, so nothing takes it for a socket. The lock is
``flock`` (via filelock): the kernel releases it when its holder dies, however
it dies, so a killed ``fleet`` never leaves a fleet locked.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import typing as t
from pathlib import Path

from filelock import FileLock, Timeout

from claude_shepherd.fleet.live import own_socket_dir, socket_dir
from claude_shepherd.supervisor.env import FLEET_LOCK_TIMEOUT_ENV
from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.session.numbers import parse_pid, seconds_from

DEFAULT_TIMEOUT = 60.0
"""Seconds a verb waits for another one on the same fleet (a stop with its grace fits well inside)."""


class FleetBusyError(ShepherdError):
    """Another verb held the fleet's lock for longer than this one would wait."""


def lock_path(socket_name: str) -> Path:
    return socket_dir() / f".{socket_name}.lock"


def _holder_path(socket_name: str) -> Path:
    return socket_dir() / f".{socket_name}.holder"


def default_timeout(env: t.Mapping[str, str] | None = None) -> float:
    return seconds_from(os.environ if env is None else env, FLEET_LOCK_TIMEOUT_ENV, default=DEFAULT_TIMEOUT,
                        maximum=86400)  # fmt: skip


def holder_of(socket_name: str) -> str:
    """Who holds the lock, as its holder wrote it ("" when unknown): for the person who waits."""
    try:
        data = json.loads(_holder_path(socket_name).read_text(encoding="utf-8"))
        pid = parse_pid(str(data["pid"]))
        command = data["command"]
    except (
        OSError,
        ValueError,
        KeyError,
        TypeError,
        RecursionError,
    ):  # any process of this user may write it
        return ""
    return f"{str(command)[:60]} (pid {pid})" if pid is not None and isinstance(command, str) else ""


@contextlib.contextmanager
def fleet_lock(
    socket_name: str,
    command: str,
    *,
    timeout: float | None = None,
    waiting: t.Callable[[str], None] | None = None,
) -> t.Iterator[None]:
    """Hold the lock of fleet socket *socket_name* while the body runs.

    *command* names this verb for whoever waits on it; *waiting* is told once,
    with a line for the person, when another verb holds the lock.
    """
    timeout = default_timeout() if timeout is None else timeout
    own_socket_dir()  # a folder another user made first would let them hold or read our lock
    path = lock_path(socket_name)
    lock = FileLock(str(path), mode=0o600)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        holder = holder_of(socket_name) or "another fleet command"
        if waiting is not None:
            waiting(f"Waiting for {holder} to finish with socket {socket_name} (up to {timeout:g}s)...")
        started = time.monotonic()
        try:
            lock.acquire(timeout=timeout, poll_interval=0.05)
        except Timeout:
            raise FleetBusyError(
                f"{holder} has been changing the fleet on socket {socket_name} for over "
                f"{time.monotonic() - started:.0f}s; wait for it to finish (or set "
                f"{FLEET_LOCK_TIMEOUT_ENV} to wait longer) and try again"
            ) from None
    try:
        _write_holder(socket_name, command)
        yield
    finally:
        with contextlib.suppress(OSError):
            _holder_path(socket_name).unlink()
        lock.release()


def _write_holder(socket_name: str, command: str) -> None:
    path = _holder_path(socket_name)
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump({"pid": os.getpid(), "command": command, "argv": sys.argv[1:]}, out)
