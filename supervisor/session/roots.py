"""Every sessions root of this user, so the hooks protect each one from every agent.

An agent whose sessions root differs from another's could otherwise Write that
root's handovers (``DEHYDRATED_CONTEXT.md`` lands in its agent's restart prompt)
or pane records. ``claude-run`` (every supervised agent, so every fleet pane)
and ``session activate`` append their root, symlink-resolved, to
``$XDG_STATE_HOME/claude-shepherd/roots`` (one path a line); the PreToolUse hook
reads it for Claude's file-writing tools only. Appending only adds protection;
the file tools cannot write the registry (it is a protected path), so an agent
cannot take a root out of it. Reading stops at ``MAX_BYTES``: the roots recorded
first stay protected. Best effort on both sides: a registry that cannot be
written or read never fails a command or a hook. Standard library only.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

REGISTRY_DIRNAME = "claude-shepherd"
REGISTRY_FILE = "roots"
MAX_BYTES = 1024 * 1024
"""Far beyond any user's roots (about 10,000 paths)."""


def registry_dir(env: t.Mapping[str, str]) -> str:
    """``$XDG_STATE_HOME/claude-shepherd`` (default ``~/.local/state/claude-shepherd``)."""
    state = env.get("XDG_STATE_HOME", "").strip()
    if not state or not os.path.isabs(state):
        home = env.get("HOME") or os.path.expanduser("~")
        state = os.path.join(home, ".local", "state")
    return os.path.join(state, REGISTRY_DIRNAME)


def _read(path: str) -> bytes:
    """Up to MAX_BYTES of a regular file, never through a symlink nor from a FIFO."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        chunks: list[bytes] = []
        size = 0
        while size < MAX_BYTES:
            chunk = os.read(fd, MAX_BYTES - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def known_roots(env: t.Mapping[str, str]) -> frozenset[str]:
    """The recorded roots: absolute, symlink-resolved paths as :func:`register` wrote them."""
    try:
        raw = _read(os.path.join(registry_dir(env), REGISTRY_FILE))
    except OSError:
        return frozenset()
    lines = raw.decode("utf-8", errors="replace").split("\n")
    return frozenset(
        line for line in lines if line.startswith(os.sep) and line != os.sep and "\0" not in line
    )


def register(root: str | os.PathLike[str], env: t.Mapping[str, str] | None = None) -> None:
    """Record *root* (symlink-resolved) once; never fails its caller."""
    env = os.environ if env is None else env
    real = os.path.realpath(root)
    if "\n" in real or "\0" in real or real == os.sep or real in known_roots(env):
        return
    directory = registry_dir(env)
    from claude_shepherd.supervisor.session.private_dir import is_private_dir

    if not is_private_dir(directory, within=directory):
        return
    try:
        fd = os.open(
            os.path.join(directory, REGISTRY_FILE),
            os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
            0o600,
        )
    except OSError:
        return
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.write(fd, (real + "\n").encode())  # one O_APPEND write: concurrent appends do not interleave
    except OSError:
        pass
    finally:
        os.close(fd)
