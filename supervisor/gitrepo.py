"""A repository's worktrees as Claude Code places them, and the one lock on its shared refs.

``claude -w NAME`` keeps an agent's worktree at ``<repository>/.claude/worktrees/NAME`` on the
branch ``worktree-NAME`` (docs/FLEET.md, "Worktrees"). Everything that creates, removes or prunes
worktrees of a repository on our side — claude-run while its Claude makes one, ``fleet worktree
remove``, ``fleet doctor --fix`` — holds :func:`repo_lock` for it: ``lockf`` on a file in the
repository's common git directory, so two of them never race on ``index.lock`` or a ref's lock and
none has to retry. Standard library only; ``subprocess`` is imported where git is run, never by a hook.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
import typing as t
from pathlib import Path

from claude_shepherd.supervisor.session.paths import worktree_checkout

WORKTREES_DIR = Path(".claude") / "worktrees"
"""Where Claude Code puts ``-w NAME``'s worktree, relative to the repository's top."""
BRANCH_PREFIX = "worktree-"
"""Claude Code's branch for ``-w NAME`` is ``worktree-NAME``."""
LOCK_FILE = "claude-shepherd-worktrees.lock"
LOCK_TIMEOUT = 60.0
GIT_TIMEOUT = 20.0


class GitError(Exception):
    """A git command that failed, with git's own last line."""


def git(cwd: str | Path, *args: str, timeout: float = GIT_TIMEOUT) -> str:
    """Run ``git ARGS`` in *cwd* (prompts and pagers off); its stdout, or :class:`GitError`."""
    import subprocess

    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_PAGER="cat", LC_ALL="C")
    if not os.path.isdir(cwd):
        raise GitError(f"{cwd} is not a folder")
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError:
        raise GitError("git is not installed") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"git {' '.join(args)} ran over {timeout:g}s") from None
    except OSError as exc:
        raise GitError(f"cannot run git in {cwd}: {exc.strerror}") from None
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise GitError(lines[-1] if lines else f"git {args[0]} exited with status {done.returncode}")
    return done.stdout


def toplevel(cwd: str | Path) -> Path:
    """The top of the repository (this worktree's) that *cwd* is in; :class:`GitError` if none."""
    return Path(git(cwd, "rev-parse", "--show-toplevel").strip())


def common_dir(cwd: str | Path) -> Path:
    """The repository's common git directory (its main ``.git``), shared by all its worktrees."""
    return Path(git(cwd, "rev-parse", "--path-format=absolute", "--git-common-dir").strip())


def worktree_path(top: Path, name: str) -> Path:
    return top / WORKTREES_DIR / name


def branch_of(name: str) -> str:
    return BRANCH_PREFIX + name


def main_checkout(path: str | Path) -> Path | None:
    """The repository whose ``.claude/worktrees/NAME`` *path* is in (or is), by position alone."""
    return worktree_checkout(path)


def admin_dir(worktree: Path) -> Path | None:
    """The worktree's own folder in the common git directory (its ``.git`` file says where), if any."""
    try:
        text = (worktree / ".git").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    target = Path(text[len("gitdir:") :].strip())
    return target if target.is_absolute() else (worktree / target).resolve()


def registered(worktree: Path) -> bool:
    """Has git made *worktree* (its ``.git`` file points at an admin folder with a ``HEAD``)?"""
    admin = admin_dir(worktree)
    return admin is not None and (admin / "HEAD").is_file()


def acquire(
    common: Path, timeout: float = LOCK_TIMEOUT, cancelled: t.Callable[[], bool] = lambda: False
) -> int | None:
    """Take the repository's worktree lock: its descriptor (close it to release), or None when
    *timeout* passed (or *cancelled* said so) while another held it.

    A POSIX record lock (``lockf``), not ``flock``: it belongs to this process alone, so a child
    forked meanwhile (claude-run's watchdog) does not keep it held after we let it go."""
    fd = os.open(common / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except (BlockingIOError, PermissionError):  # EAGAIN or EACCES: another holds it
            if time.monotonic() >= deadline or cancelled():
                os.close(fd)
                return None
            time.sleep(0.05)


@contextlib.contextmanager
def repo_lock(common: Path, timeout: float = LOCK_TIMEOUT) -> t.Iterator[bool]:
    """Hold the repository's worktree lock; yields False when *timeout* passed without it (the caller
    decides whether to go on), True when held."""
    fd = acquire(common, timeout)
    try:
        yield fd is not None
    finally:
        if fd is not None:
            os.close(fd)  # closing the descriptor releases the lock
