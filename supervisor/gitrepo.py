"""A repository's worktrees as Claude Code places them, the one lock on its shared refs, and git run
as the operator may run it in folders agents write.

``claude -w NAME`` keeps an agent's worktree at ``<repository>/.claude/worktrees/NAME`` on the
branch ``worktree-NAME`` (docs/WORKTREES.md). Everything that creates, removes or prunes
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
import re
import time
from pathlib import Path

from claude_shepherd.supervisor.session.paths import git_pointer, worktree_checkout

TYPE_CHECKING = False
if TYPE_CHECKING:  # claude-run imports this module, and runs beside every agent (docs/HOT_CORE.md)
    import typing as t

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
    ("core.sshCommand", "false", "ssh, were a transport ever let through (GIT_ALLOW_PROTOCOL lets none)"),
    ("credential.helper", "", "credential helpers (an empty value clears the list)"),
    ("log.showSignature", "false", "signature checks (gpg.program) of the commits a log shows: stash list"),
    ("gpg.program", "false", "gpg, were a signature ever checked"),
    ("gpg.openpgp.program", "false", "as gpg.program"),
    ("gpg.x509.program", "false", "as gpg.program"),
    ("gpg.ssh.program", "false", "as gpg.program"),
    ("gc.auto", "0", "gc --auto, which runs the pre-auto-gc hook and may detach past our deadline"),
    ("maintenance.auto", "false", "maintenance --auto after a command, as for gc"),
    ("safe.bareRepository", "explicit", "a bare repository found by walking up (any folder an agent fills "
     "with HEAD, objects/, refs/ and a config is one): only the --git-dir we name is a repository"),
)  # fmt: skip
"""Settings that make git start a program, each overridden for every git we run. They are given as
``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_<n>``/``GIT_CONFIG_VALUE_<n>`` (git 2.31): above every configuration
file, passed on to the gits git itself starts (a submodule's status, ``worktree remove``'s check), and
a key is never split at an ``=`` in its name, as ``-c KEY=VALUE`` would be.

Transports (``ssh`` and its ``core.sshCommand``, ``ext::``, remote helpers, a promisor remote's lazy
fetch) are all refused by ``GIT_ALLOW_PROTOCOL`` set empty, which git puts above ``protocol.allow`` and
every ``protocol.<name>.allow``: no command of ours fetches. ``trace2.*`` ignores the command line's
scope, so ``GIT_TRACE2``, ``GIT_TRACE2_EVENT`` and ``GIT_TRACE2_PERF`` set to 0 keep git from appending
to a file the configuration names.

What cannot be switched off by a setting of a known name, and how it is held instead:

* ``filter.<driver>.clean`` / ``smudge`` / ``process`` (``.gitattributes`` names the driver):
  :func:`git` reads which drivers the configuration defines (whatever their names) and blanks each for
  the looking commands (``filters=False``); ``worktree add`` keeps them (it checks files out as Claude
  Code's own ``-w`` would, with the operator's LFS and the like).
* ``diff.<driver>.textconv``, ``diff.external``, ``merge.<driver>.driver``: no command we run diffs or
  merges.
* ``include.path`` / ``includeIf``: an included file is configuration like any other, overridden above;
  the file tools cannot write the files a repository's configuration includes (hooks/protected_paths.py).
* A submodule's own configuration (its filters): read by the status git starts inside it. Its ``.git``
  file, like every ``.git`` and every folder one points to, is out of the file tools' reach.
"""


class GitError(Exception):
    """A git command that failed, with git's own last line."""


class Untrusted(GitError):
    """A folder in a worktree's place that is not a worktree of this repository: git is never run in it."""


def _environment(overrides: t.Sequence[tuple[str, str]]) -> dict[str, str]:
    """The caller's environment without git's own variables (``GIT_DIR``, ``GIT_CONFIG_*``,
    ``GIT_EXEC_PATH``, ``GIT_SSH_COMMAND``, ``GIT_EXTERNAL_DIFF``… would each point git elsewhere or start a
    program), with prompts and pagers off, no transport, and *overrides* above every configuration file."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_PAGER="cat", GIT_EDITOR="true", GIT_ALLOW_PROTOCOL="", LC_ALL="C",
               GIT_TRACE2="0", GIT_TRACE2_EVENT="0", GIT_TRACE2_PERF="0")  # fmt: skip
    env["GIT_CONFIG_COUNT"] = str(len(overrides))
    for n, (key, value) in enumerate(overrides):
        env[f"GIT_CONFIG_KEY_{n}"] = key
        env[f"GIT_CONFIG_VALUE_{n}"] = value
    return env


NEUTRAL: tuple[tuple[str, str], ...] = tuple((key, value) for key, value, _ in NEUTRALISED)


def _filter_blanks(cwd: str | Path, where: list[str], timeout: float) -> list[tuple[str, str]]:
    """Every filter driver the configuration git reads there defines, blanked (reading runs nothing).
    Read anew for every command: a driver added meanwhile is blanked too."""
    try:
        text = _run(cwd, [*where, "config", "-z", "--name-only", "--get-regexp", r"^filter\..*\.(clean|smudge|process)$"],
                    timeout, NEUTRAL)  # fmt: skip
    except GitError:  # exit 1: no such setting
        return []
    drivers = {
        name[len("filter.") :].rsplit(".", 1)[0] for name in text.split("\0") if name.startswith("filter.")
    }
    blanks: list[tuple[str, str]] = []
    for driver in sorted(drivers):
        blanks += [(f"filter.{driver}.{part}", "") for part in ("clean", "smudge", "process")]
        blanks.append((f"filter.{driver}.required", "false"))
    return blanks


def _run(cwd: str | Path, args: list[str], timeout: float, overrides: t.Sequence[tuple[str, str]]) -> str:
    import subprocess

    try:
        done = subprocess.run(
            ["git", "--no-pager", *args],
            cwd=cwd,
            env=_environment(overrides),
            capture_output=True,
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
    # A file name need not be UTF-8: its bytes are kept (surrogateescape), never a decoding error.
    out, err = (b.decode("utf-8", "surrogateescape") for b in (done.stdout, done.stderr))
    if done.returncode != 0:
        lines = (err or out).strip().splitlines()
        raise GitError(lines[-1] if lines else f"git {args[0]} exited with status {done.returncode}")
    return out


def git(
    cwd: str | Path,
    *args: str,
    timeout: float = GIT_TIMEOUT,
    filters: bool = False,
    within: t.Sequence[str] = (),
) -> str:
    """Run ``git ARGS`` in *cwd* with every setting that starts a program off (:data:`NEUTRALISED`);
    its stdout, or :class:`GitError`. *within*: the ``--git-dir``/``--work-tree`` of a checked worktree
    (:func:`worktree_options`). *filters*: keep the configured filter drivers (a checkout)."""
    if not os.path.isdir(cwd):
        raise GitError(f"{cwd} is not a folder")
    where = list(within)
    blanks = [] if filters else _filter_blanks(cwd, where, timeout)
    return _run(cwd, [*where, *args], timeout, (*NEUTRAL, *blanks))


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


OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
"""A commit id as a HEAD file holds it (SHA-1 or SHA-256)."""
GITFILE_PREFIX = "gitdir: "
"""What a ``.git`` file starts with, exactly as git requires it."""


def _pointer(file: Path, prefix: str = "") -> Path | None:
    found = git_pointer(file, prefix)
    return Path(found) if found is not None else None


def checkout_common(top: Path) -> Path | None:
    """The common git directory of the main checkout *top*, from its files alone (no git process):
    ``top/.git`` itself, or where a ``.git`` file sends it (``--separate-git-dir``, a submodule) and that
    folder's ``commondir``."""
    dot_git = top / ".git"
    if dot_git.is_dir():
        return Path(os.path.realpath(dot_git))
    target = _pointer(dot_git, GITFILE_PREFIX)
    if target is None or not os.path.isdir(target):
        return None
    common = _pointer(Path(os.path.realpath(target)) / "commondir")
    return Path(os.path.realpath(common if common is not None else target))


def trusted_worktree(path: Path, common: Path | None = None) -> Path:
    """The admin folder (``COMMON/worktrees/<name>``, resolved) of the worktree at *path*, once its files
    say it is one of the repository whose common git directory is *common* (default: that of the checkout
    holding ``.claude/worktrees/``); :class:`Untrusted`, in one line, when they do not.

    Git trusts a ``.git`` file wherever it points, and the configuration of the folder it points to runs
    programs: an agent that rewrote its worktree's ``.git`` would run code as whoever runs git there next.
    So the file, read as git reads it, must point into this repository's own ``worktrees/`` folder, and
    that folder's ``gitdir`` must point back at the file (git's own check before ``worktree remove``).
    Run git there through :func:`worktree_options`, which names the folder checked here: git does not
    read the ``.git`` file again, so changing it after the check changes nothing."""
    where = f"{path}: not a worktree of this repository"
    if common is None:
        top = main_checkout(path)
        common = checkout_common(top) if top is not None else None
        if common is None:
            raise Untrusted(f"{where}: no main checkout holds it")
    dot_git = path / ".git"
    if dot_git.is_dir() and not dot_git.is_symlink():
        raise Untrusted(f"{where}: its .git is a repository of its own")
    admin = _pointer(dot_git, GITFILE_PREFIX)
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


def worktree_options(path: Path, common: Path | None = None) -> list[str]:
    """``--git-dir``/``--work-tree`` for running git in the worktree at *path*, once it is checked
    (:func:`trusted_worktree`; :class:`Untrusted` otherwise)."""
    return [f"--git-dir={trusted_worktree(path, common)}", f"--work-tree={path}"]


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
            if back is not None and Path(os.path.normpath(back)).parent == path and not os.path.lexists(back):
                found.append(admin)
    return found


def detached_commits(top: Path, admin: Path) -> tuple[str, int] | None:
    """The commit a worktree's detached HEAD (read from its admin folder) is at and how many commits there
    are on no branch, tag or remote; None when its HEAD is a branch (which stays) or holds none."""
    try:
        head = (admin / "HEAD").read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return None
    if head.startswith("ref:") or not head:
        return None
    if not OBJECT_ID.fullmatch(head):  # anything else would be read as an option or a range
        raise GitError(f"the HEAD of {admin} is no commit id")
    count = int(git(top, "rev-list", "--count", "--not", "--branches", "--tags", "--remotes", "--not",
                    "--end-of-options", head).strip() or 0)  # fmt: skip
    return (head, count) if count else None


def drop_stale(top: Path, common: Path, path: Path) -> list[str]:
    """Drop git's stale entries of a worktree at *path* (its folder gone) as ``git worktree prune`` does,
    but only those (prune would drop every stale entry of the repository, other agents' too) and only when
    no commit would go with them; the lines saying what was kept. Call under :func:`repo_lock`."""
    import shutil

    kept = []
    for admin in stale_entries_at(common, path):
        held = detached_commits(top, admin)
        if held is not None:
            kept.append(
                f"the stale entry of {path} is kept: its HEAD (detached at {held[0][:12]}) holds {held[1]} "
                f"commit{'s' * (held[1] != 1)} on no branch; keep them with git -C {top} branch NAME {held[0][:12]}"
            )
            continue
        shutil.rmtree(admin, ignore_errors=True)
    return kept


EXCLUDE_LINE = "/.claude/worktrees/"
"""The line of ``info/exclude`` that keeps agents' worktrees out of the project's ``git status``."""


def exclude_worktrees(common: Path) -> bool:
    """Add :data:`EXCLUDE_LINE` to the repository's ``info/exclude`` (git's place for what one clone
    ignores, never committed) unless it is there; True when it was added."""
    exclude = common / "info" / "exclude"
    if (common / "info").is_symlink():
        return False  # a link would send the lines elsewhere
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
