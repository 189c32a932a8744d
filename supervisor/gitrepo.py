"""A repository's worktrees as Claude Code places them, the one lock on its shared refs, and git run
as the operator may run it in folders agents write.

``claude -w NAME`` keeps an agent's worktree at ``<repository>/.claude/worktrees/NAME`` on the
branch ``worktree-NAME`` (docs/FLEET.md, "Worktrees"). Everything that creates, removes or prunes
worktrees of a repository on our side — claude-run while its Claude makes one, ``fleet worktree
remove``, ``fleet doctor --fix`` — holds :func:`repo_lock` for it: ``lockf`` on a file in the
repository's common git directory, so two of them never race on ``index.lock`` or a ref's lock and
none has to retry.

Git reads its configuration from the repository it runs in, and that configuration can start
programs (``core.fsmonitor``, hooks, filters, a pager). An agent writes the files of its worktree, so
two things hold before we run git there: :func:`trusted_worktree` checks that the worktree's ``.git``
file points at the main repository's own ``.git/worktrees/<name>`` and that folder points back (else
:class:`Untrusted`, and git is never run in it), and :func:`git` runs every command with the settings
that start programs switched off (:data:`NEUTRALISED`). Standard library only; ``subprocess`` is
imported where git is run, never by a hook.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
import typing as t
from pathlib import Path

from claude_shepherd.supervisor.session.paths import git_pointer, worktree_checkout

WORKTREES_DIR = Path(".claude") / "worktrees"
"""Where Claude Code puts ``-w NAME``'s worktree, relative to the repository's top."""
BRANCH_PREFIX = "worktree-"
"""Claude Code's branch for ``-w NAME`` is ``worktree-NAME``."""
LOCK_FILE = "claude-shepherd-worktrees.lock"
LOCK_TIMEOUT = 60.0
GIT_TIMEOUT = 20.0

NEUTRALISED: tuple[tuple[str, str, str], ...] = (
    ("core.fsmonitor", "false", "the program git asks which files changed (status, add, worktree remove)"),
    ("core.hooksPath", os.devnull, "hooks: post-checkout (worktree add), reference-transaction (branch -D)"),
    ("core.pager", "cat", "the pager (with --no-pager and GIT_PAGER as well)"),
    ("core.editor", "true", "the editor a command may open"),
    ("sequence.editor", "true", "the editor of a rebase's todo list"),
    ("protocol.allow", "never", "every transport: ssh (core.sshCommand), ext::, http's credential helpers"),
    ("credential.helper", "", "credential helpers (an empty value clears the list)"),
    ("gc.auto", "0", "gc --auto, which runs the pre-auto-gc hook and may detach past our deadline"),
    ("maintenance.auto", "false", "maintenance --auto after a command, as for gc"),
    ("safe.bareRepository", "explicit", "a bare repository found by walking up (any folder an agent fills "
     "with HEAD, objects/, refs/ and a config is one): only the --git-dir we name is a repository"),
)  # fmt: skip
"""Settings that make git start a program, each overridden for every git we run: a ``-c`` on the command
line wins over every configuration file and reaches the git processes git itself starts (a submodule's
status, ``worktree remove``'s check), through ``GIT_CONFIG_PARAMETERS``.

What cannot be switched off by a setting of a known name, and how it is held instead:

* ``filter.<driver>.clean`` / ``smudge`` / ``process`` (``.gitattributes`` names the driver):
  :func:`git` reads which drivers the configuration defines and blanks each for the looking commands
  (``filters=False``); ``worktree add`` keeps them (it checks files out as Claude Code's own ``-w``
  would, with the operator's LFS and the like).
* ``diff.<driver>.textconv``, ``diff.external``, ``merge.<driver>.driver``: no command we run diffs or
  merges.
* ``include.path`` / ``includeIf``: an included file is configuration like any other, overridden above.
* A submodule's own configuration (its filters): read by the status git starts inside it. Its ``.git``
  file, like every ``.git`` and every folder one points to, is out of the file tools' reach
  (hooks/protected_paths.py).
"""


class GitError(Exception):
    """A git command that failed, with git's own last line."""


class Untrusted(GitError):
    """A folder in a worktree's place that is not a worktree of this repository: git is never run in it."""


def _environment() -> dict[str, str]:
    """The caller's environment without git's own variables (``GIT_DIR``, ``GIT_CONFIG_*``,
    ``GIT_EXEC_PATH``, ``GIT_SSH_COMMAND``, ``GIT_EXTERNAL_DIFF``… would each point git elsewhere or start a
    program), with prompts and pagers off."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_PAGER="cat", GIT_EDITOR="true", LC_ALL="C")
    return env


def _options(extra: t.Iterable[tuple[str, str]] = ()) -> list[str]:
    options = ["--no-pager"]
    for key, value, *_ in (*NEUTRALISED, *extra):
        options += ["-c", f"{key}={value}"]
    return options


_DRIVERS: dict[str, tuple[str, ...]] = {}


def _filter_drivers(cwd: str | Path, timeout: float) -> tuple[str, ...]:
    """The filter drivers the configuration git reads in *cwd* defines (reading runs nothing)."""
    key = os.path.realpath(cwd)
    if key not in _DRIVERS:
        try:
            text = _run(cwd, ["config", "--name-only", "--get-regexp", r"^filter\..*\.(clean|smudge|process)$"],
                        timeout, _options())  # fmt: skip
        except GitError:  # exit 1: no such setting
            text = ""
        _DRIVERS[key] = tuple(
            sorted({line[len("filter.") :].rsplit(".", 1)[0] for line in text.splitlines()})
        )
    return _DRIVERS[key]


def _run(cwd: str | Path, args: list[str], timeout: float, options: list[str]) -> str:
    import subprocess

    try:
        done = subprocess.run(
            ["git", *options, *args],
            cwd=cwd,
            env=_environment(),
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


def git(cwd: str | Path, *args: str, timeout: float = GIT_TIMEOUT, filters: bool = False) -> str:
    """Run ``git ARGS`` in *cwd* with every setting that starts a program off (:data:`NEUTRALISED`);
    its stdout, or :class:`GitError`. *filters*: keep the configured filter drivers (a checkout)."""
    if not os.path.isdir(cwd):
        raise GitError(f"{cwd} is not a folder")
    blanks: list[tuple[str, str]] = []
    if not filters:
        for driver in _filter_drivers(cwd, timeout):
            blanks += [(f"filter.{driver}.{part}", "") for part in ("clean", "smudge", "process")]
            blanks.append((f"filter.{driver}.required", "false"))
    return _run(cwd, list(args), timeout, _options(blanks))


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


def _pointer(file: Path, prefix: str = "") -> Path | None:
    found = git_pointer(file, prefix)
    return Path(found) if found is not None else None


def checkout_common(top: Path) -> Path | None:
    """The common git directory of the main checkout *top*, from its files alone (no git process):
    ``top/.git`` itself, or where a ``.git`` file sends it (``--separate-git-dir``, a submodule) and that
    folder's ``commondir``."""
    dot_git = top / ".git"
    if dot_git.is_dir() and not dot_git.is_symlink():
        return Path(os.path.realpath(dot_git))
    target = _pointer(dot_git, "gitdir:")
    if target is None or not target.is_dir():
        return None
    common = _pointer(target / "commondir")
    return Path(os.path.realpath(common if common is not None else target))


def trusted_worktree(path: Path, common: Path | None = None) -> Path:
    """The admin folder (``COMMON/worktrees/<name>``) of the worktree at *path*, once its files say it is
    one of the repository whose common git directory is *common* (default: that of the checkout holding
    ``.claude/worktrees/``); :class:`Untrusted`, in one line, when they do not.

    Git trusts a ``.git`` file wherever it points, and the configuration of the folder it points to runs
    programs: an agent that rewrote its worktree's ``.git`` would run code as whoever runs git there next.
    So the file must point into this repository's own ``worktrees/`` folder, and that folder's ``gitdir``
    must point back at the file (git's own check before ``worktree remove``)."""
    where = f"{path}: not a worktree of this repository"
    if common is None:
        top = main_checkout(path)
        common = checkout_common(top) if top is not None else None
        if common is None:
            raise Untrusted(f"{where}: no main checkout holds it")
    dot_git = path / ".git"
    if dot_git.is_dir() and not dot_git.is_symlink():
        raise Untrusted(f"{where}: its .git is a repository of its own")
    admin = _pointer(dot_git, "gitdir:")
    if admin is None:
        raise Untrusted(f"{where}: its .git is no gitdir file" if os.path.lexists(dot_git) else
                        f"{where}: it has no .git")  # fmt: skip
    real = Path(os.path.realpath(admin))
    if real.parent != Path(os.path.realpath(common / "worktrees")) or not real.is_dir():
        raise Untrusted(f"{where}: its .git points to {admin}")
    back = _pointer(real / "gitdir")
    if back is None or os.path.realpath(back) != os.path.realpath(dot_git):
        raise Untrusted(f"{where}: its .git points to {admin}, which belongs to {back or 'no worktree'}")
    shared = _pointer(real / "commondir")
    if shared is not None and os.path.realpath(shared) != os.path.realpath(common):
        raise Untrusted(f"{where}: its git folder {real} names another repository ({shared})")
    return real


def admin_dir(worktree: Path) -> Path | None:
    """The worktree's own folder in the common git directory, when it is a worktree of its repository."""
    try:
        return trusted_worktree(worktree)
    except Untrusted:
        return None


def registered(worktree: Path) -> bool:
    """Has git made *worktree* as a worktree of the repository holding it (its ``.git`` file and its admin
    folder point at each other, and the admin folder has a ``HEAD``)?"""
    admin = admin_dir(worktree)
    return admin is not None and (admin / "HEAD").is_file()


def stale_entries_at(common: Path, path: Path) -> list[Path]:
    """The admin folders in *common* of a worktree at *path* whose folder is gone (git's stale entries),
    read from the files alone."""
    found = []
    with contextlib.suppress(OSError):
        for admin in (common / "worktrees").iterdir():
            back = _pointer(admin / "gitdir")
            if back is not None and back.parent == path and not os.path.lexists(back):
                found.append(admin)
    return found


EXCLUDE_LINE = "/.claude/worktrees/"
"""The line of ``info/exclude`` that keeps agents' worktrees out of the project's ``git status``."""


def exclude_worktrees(common: Path) -> bool:
    """Add :data:`EXCLUDE_LINE` to the repository's ``info/exclude`` (git's place for what one clone
    ignores, never committed) unless it is there; True when it was added."""
    exclude = common / "info" / "exclude"
    try:
        text = exclude.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        text = ""
    if EXCLUDE_LINE in text.splitlines():
        return False
    exclude.parent.mkdir(exist_ok=True)
    fd = os.open(exclude, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX)
        now = os.pread(fd, 1 << 20, 0).decode("utf-8", "replace") if os.fstat(fd).st_size else ""
        if EXCLUDE_LINE in now.splitlines():
            return False
        lead = "" if not now or now.endswith("\n") else "\n"
        os.write(
            fd,
            f"{lead}# agents' worktrees (claude -w NAME), kept out of git status\n{EXCLUDE_LINE}\n".encode(),
        )
    finally:
        os.close(fd)
    return True


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
