"""Which processes are the hooks' typists: recorded by pid and start token when a hook leaves one.

A typist (``claude-hook budget-renews`` / ``resume-at``) waits, detached, to type a resume prompt into
its agent's pane; claude-run, its subreaper, lets it be across a relaunch of Claude and ends it when it
stops for good. A command line proves nothing (any program can write its own, or be started with
``exec -a``): a process is a typist only when the hook that spawned it recorded its pid and start token
in ``$XDG_STATE_HOME/claude-shepherd/typists/`` (private, out of the file tools' reach like the rest of
that folder), so code an agent left behind is ended with the rest. Standard library only.
"""

from __future__ import annotations

import contextlib
import os

from claude_shepherd.supervisor.session.identity import start_token
from claude_shepherd.supervisor.session.private_dir import is_private_dir
from claude_shepherd.supervisor.session.roots import registry_dir

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t

TYPISTS_DIRNAME = "typists"
RECORD_LIMIT = 256


def _folder(env: t.Mapping[str, str]) -> str:
    return os.path.join(registry_dir(env), TYPISTS_DIRNAME)


def record(pid: int, env: t.Mapping[str, str]) -> bool:
    """Record *pid* (just spawned by a hook) as a typist; False when it could not be."""
    token = start_token(pid)
    folder = _folder(env)
    if token is None or not is_private_dir(folder, within=os.path.dirname(folder)):
        return False
    try:
        fd = os.open(os.path.join(folder, str(pid)), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
                     | os.O_CLOEXEC, 0o600)  # fmt: skip
    except OSError:
        return False
    try:
        os.write(fd, token.encode())
    finally:
        os.close(fd)
    return True


def recorded(pid: int, env: t.Mapping[str, str]) -> bool:
    """Did a hook record *pid*, this very process (its start token), as a typist?"""
    try:
        fd = os.open(os.path.join(_folder(env), str(pid)), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
                     | os.O_CLOEXEC)  # fmt: skip
    except OSError:
        return False
    try:
        text = os.read(fd, RECORD_LIMIT).decode("ascii", "replace")
    except OSError:
        return False
    finally:
        os.close(fd)
    return bool(text) and text == start_token(pid)


def forget(pid: int, env: t.Mapping[str, str]) -> None:
    """Drop *pid*'s record (the typist ends, or was ended)."""
    with contextlib.suppress(OSError):
        os.unlink(os.path.join(_folder(env), str(pid)))


def forget_gone(env: t.Mapping[str, str]) -> None:
    """Drop the records of typists that are gone (a pid whose start token no longer matches)."""
    folder = _folder(env)
    with contextlib.suppress(OSError):
        for name in os.listdir(folder)[:4096]:
            if name.isdigit() and not recorded(int(name), env):
                forget(int(name), env)
