"""The programs the hooks run, from places an agent cannot plant them.

In a fleet pane the hooks run ``tmux`` on every tool call. Found on ``PATH``,
that could be anything an agent wrote into an early ``PATH`` directory (say
``~/.local/bin``) — run by every agent's hooks, outside any sandbox. So the
hooks use the tmux ``fleet start`` itself ran (``$CLAUDE_SHEPHERD_TMUX``,
exported into every pane's environment, which an agent cannot change for its
own Claude), else the first tmux in the system's own directories; never
``PATH``. Standard library only.
"""

from __future__ import annotations

import os
import sys
import time

from claude_shepherd.supervisor.env import TMUX_ENV

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t

SYSTEM_DIRS = ("/usr/local/bin", "/usr/bin", "/bin", "/opt/homebrew/bin")
HOOKS_MAIN = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "hooks",
                          "__main__.py")  # fmt: skip
"""The program every hook of ours runs as installed (``python -I -S …/hooks/__main__.py EVENT``, what
``claude-hook install`` writes into Claude's settings), and every process the hooks leave behind (an
alert, a typist): named by path, so nothing below the hooks imports them."""
SCRIPTS = ("claude-run", "session", "fleet", "claude-hook")
"""Our console scripts, installed side by side in one folder."""
HOOK_TIMEOUT = 10
"""Seconds Claude Code lets one of our hooks run (the ``timeout`` ``claude-hook install`` writes); each
answers well inside it (its lock wait is 3 s)."""

_cache: dict[str, str | None] = {}


def _executable(path: str) -> bool:
    return os.path.isabs(path) and os.path.isfile(path) and os.access(path, os.X_OK)


TMUX_TIMEOUT = 1.0
"""Seconds a hook waits for tmux (a wedged server must not stall every tool call)."""


class Finished:
    """What a finished program left: its exit status (negative: the signal) and its output, as text."""

    __slots__ = ("args", "returncode", "stdout", "stderr")

    def __init__(self, args: list[str], returncode: int, stdout: str, stderr: str) -> None:
        self.args = args
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr


def run(
    argv: list[str],
    *,
    timeout: float,
    env: t.Mapping[str, str] | None = None,
    errors: str = "replace",
    strict: bool = False,
) -> Finished | None:
    """Run *argv* (an absolute path first) with stdin from /dev/null; None when it cannot start or overruns.

    ``subprocess`` would do, but importing it costs ~7 ms on every hook call in
    a fleet pane; ``os.posix_spawn`` and ``select.poll`` are built in. A
    program still running at the deadline is killed and reaped. *env*: the
    program's environment (default ours); *errors*: how undecodable output is
    shown. *strict*: raise instead of returning None — the ``OSError`` of a
    program that cannot start, :class:`TimeoutError` for one that overran.
    """
    import select

    deadline = time.monotonic() + timeout
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    if min(out_w, err_w) <= 2:  # the caller's own stdio was closed: dup2 would not clear close-on-exec
        for fd in (out_r, out_w, err_r, err_w):
            os.close(fd)
        return None
    try:
        pid = os.posix_spawn(argv[0], argv, dict(os.environ if env is None else env), file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, out_w, 1),
            (os.POSIX_SPAWN_DUP2, err_w, 2),
        ])  # fmt: skip
    except OSError:
        for fd in (out_r, err_r):
            os.close(fd)
        if strict:
            raise
        return None
    finally:
        os.close(out_w)
        os.close(err_w)
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    poller = select.poll()
    for fd in chunks:
        poller.register(fd, select.POLLIN)
    open_fds = set(chunks)
    status: int | None = None
    try:
        while open_fds:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            for fd, _ in poller.poll(left * 1000):
                data = os.read(fd, 65536)
                if data:
                    chunks[fd].append(data)
                else:
                    poller.unregister(fd)
                    open_fds.discard(fd)
        while status is None and time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done == 0:
                status = None
                time.sleep(0.001)
    finally:
        for fd in chunks:
            os.close(fd)
        if status is None:
            try:
                os.kill(pid, 9)
            except OSError:
                pass
            os.waitpid(pid, 0)
    if status is None:
        if strict:
            raise TimeoutError(f"{argv[0]} did not finish within {timeout:g}s")
        return None
    return Finished(
        argv, os.waitstatus_to_exitcode(status), _text(chunks[out_r], errors), _text(chunks[err_r], errors)
    )


def _text(chunks: list[bytes], errors: str) -> str:
    return b"".join(chunks).decode("utf-8", errors)


def tmux_argv(tmux: str, socket: str, args: t.Sequence[str] = (), options: t.Sequence[str] = ()) -> list[str]:
    """``TMUX [OPTIONS] -S PATH ARGS`` for a socket given as a path, ``-L NAME`` for one given by name:
    how every tmux command line is built (the runner's and ``fleet attach``'s ``exec``)."""
    return [tmux, *options, "-S" if "/" in socket else "-L", socket, *args]


def run_tmux(
    socket: str,
    args: list[str],
    env: t.Mapping[str, str] | None = None,
    *,
    tmux: str | None = None,
    options: t.Sequence[str] = (),
    timeout: float = TMUX_TIMEOUT,
    process_env: t.Mapping[str, str] | None = None,
    errors: str = "replace",
    strict: bool = False,
) -> Finished | None:
    """``TMUX -S SOCKET ARGS`` (``-L`` for a socket name) with a deadline: the one way tmux is run.

    The finished program, or None when there is no trusted tmux or it did not answer (with *strict*:
    the ``OSError`` or :class:`TimeoutError` of :func:`run`). *tmux*: the binary (default: the trusted
    one of :func:`tmux_path`, looked up in *env*); *options*: tmux's own before the socket;
    *process_env*: tmux's environment (default ours).
    """
    tmux = tmux or tmux_path(env)
    if tmux is None:
        return None
    return run(
        tmux_argv(tmux, socket, args, options), timeout=timeout, env=process_env, errors=errors, strict=strict
    )


def tmux_path(env: t.Mapping[str, str] | None = None) -> str | None:
    """The tmux the hooks may run, or None when there is no trusted one."""
    env = os.environ if env is None else env
    configured = env.get(TMUX_ENV, "").strip()
    key = configured or "-"
    if key not in _cache:
        if configured and _executable(configured):
            _cache[key] = configured
        else:
            _cache[key] = next(
                (p for p in (os.path.join(d, "tmux") for d in SYSTEM_DIRS) if _executable(p)), None
            )
    return _cache[key]


def spawn_later(argv: list[str], env: t.Mapping[str, str], delay: float) -> int | None:
    """Start *argv* *delay* seconds from now, in a session of its own with no input or output, and
    never wait for it; its pid (it execs *argv* after the sleep, in the same process), or None when
    it could not be started.

    posix_spawn rather than subprocess (importing subprocess costs a hook ~7 ms) and a shell's
    ``sleep`` rather than a timer of ours: the caller exits at once, and the new process outlives it
    (the alert of a hook; the reap nudge of a pane's last process).
    """
    later = f'/bin/sleep {delay:g}; exec "$0" "$@"'
    full = ["/bin/sh", "-c", later, *argv]
    nowhere = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
    try:
        return os.posix_spawn(full[0], full, dict(env), file_actions=nowhere, setsid=True)
    except NotImplementedError:  # no POSIX_SPAWN_SETSID on this system
        import subprocess

        try:
            return subprocess.Popen(full, env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, start_new_session=True).pid  # fmt: skip
        except OSError:
            return None
    except OSError:
        return None


def own_scripts_folder(names: t.Collection[str] = SCRIPTS, argv0: str | None = None) -> str | None:
    """The folder the running console script of ours really is in (links followed), or None when
    *argv0* (``sys.argv[0]``) is none of *names*: ``python -c`` gives ``-c``, which must never be
    looked up in the current folder (an agent's)."""
    first = sys.argv[0] if argv0 is None and sys.argv else argv0
    real = os.path.realpath(first) if first else ""
    return os.path.dirname(real) if os.path.basename(real) in names and os.path.isfile(real) else None
