"""An agent in its own git worktree, made and entered by Claude Code itself (``claude -w NAME``).

Claude Code's ``--worktree NAME`` creates ``.claude/worktrees/NAME`` on the branch ``worktree-NAME``
(running the user's ``WorktreeCreate`` hook, ``worktree.baseRef``, ``.worktreeinclude`` and
``sparsePaths`` as it does for anyone), locks it, runs the agent's tools there, keeps the
conversation under that folder's project, and finds the same worktree again for the same NAME. So
claude-run only passes ``--worktree NAME`` on *every* launch (a restart, a crash relaunch and a resume
stay in it) and adds two things:

* the transcript of a conversation to resume is looked for under the worktree's project, where
  Claude keeps it (:attr:`Worktree.path` is the launch's ``cwd`` for that question);
* while a launch's Claude creates the worktree, claude-run holds the repository's worktree lock
  (:func:`claude_shepherd.supervisor.gitrepo.repo_lock`), so agents starting together, and our own
  verbs, create and remove worktrees one at a time;
* before a launch, a folder in the worktree's place must be a worktree of this repository
  (:func:`claude_shepherd.supervisor.gitrepo.trusted_worktree`), or Claude is not started in it; and
  when the branch ``worktree-NAME`` is there without its worktree (removed with its commits kept),
  claude-run makes the worktree again on that branch: Claude Code's ``-w NAME`` would reset the branch
  to HEAD, leaving its commits in the reflog only, and reuses a worktree it finds;
* the repository's ``.git/info/exclude`` gets ``/.claude/worktrees/``, so the worktrees never show in
  the project's ``git status`` and nothing is committed into the user's files for it.

The fleet asks for a worktree through ``$CLAUDE_RUN_WORKTREE`` (the pane's command exports it); a
user's own ``-w NAME`` / ``--worktree NAME`` works the same. claude-run never removes a worktree.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path

from claude_shepherd.supervisor import gitrepo
from claude_shepherd.supervisor.claude_run.claude_args import ClaudeArgs
from claude_shepherd.supervisor.env import WORKTREE_ENV
from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.session.records import Record

TYPE_CHECKING = False
if TYPE_CHECKING:  # claude-run runs beside every agent: no typing at run time (docs/HOT_CORE.md)
    import typing as t

WORKTREE_OPTIONS = ("--worktree", "-w")
CREATE_DEADLINE = 30.0
"""Seconds the lock is held for a Claude that has not made its worktree yet (it may never: a
``WorktreeCreate`` hook can put it elsewhere)."""
LOCKED_GRACE = 2.0
"""Seconds, once git made the worktree, to wait for Claude to lock it (its last step)."""


class WorktreeError(ShepherdError):
    """A worktree that cannot be used, in one line."""


class Worktree(Record):
    __slots__ = ("name", "path", "common")
    name: str
    path: Path
    common: Path
    """The repository's common git directory (where its lock lives)."""

    def __init__(self, name: str, path: Path, common: Path) -> None:
        self.name = name
        self.path = path
        self.common = common


def _user_name(user: ClaudeArgs) -> str | None:
    tokens = user.every_launch
    for i, token in enumerate(tokens):
        name, eq, value = token.partition("=")
        if name in WORKTREE_OPTIONS:
            if eq:
                return value or None
            if i + 1 < len(tokens) and not tokens[i + 1].startswith("-"):
                return tokens[i + 1]
    return None


def requested(user: ClaudeArgs, env: t.Mapping[str, str]) -> tuple[str | None, ClaudeArgs]:
    """The worktree this claude-run's Claude runs in (the user's ``-w NAME``, else
    ``$CLAUDE_RUN_WORKTREE``), and the arguments that ask Claude for it on every launch."""
    own = _user_name(user)
    if own is not None:
        return own, user
    name = env.get(WORKTREE_ENV, "").strip()
    if not name:
        return None, user
    return name, ClaudeArgs(
        (*user.every_launch, "--worktree", name), user.first_launch_selectors, user.prompt
    )


def locate(name: str, cwd: Path) -> Worktree:
    """Where Claude will make (or find) worktree *name* for a Claude started in *cwd*."""
    if "/" in name or name in {".", ".."} or name.startswith("-"):
        raise WorktreeError(f"worktree {name!r} is not a plain name; use letters, digits, - and _")
    try:
        top = gitrepo.toplevel(cwd)
        common = gitrepo.common_dir(cwd)
    except gitrepo.GitError as exc:
        raise WorktreeError(
            f"worktree {name}: {cwd} is not in a git repository ({exc}); run `git init` there, or run "
            f"this agent without a worktree"
        ) from None
    place = Worktree(name, gitrepo.worktree_path(top, name), common)
    with contextlib.suppress(OSError):
        gitrepo.exclude_worktrees(common)
    return place


def check(worktree: Worktree) -> None:
    """Refuse, in one line, a folder in the worktree's place that is not a worktree of this repository:
    Claude would run git there, and so would we."""
    if os.path.lexists(worktree.path / ".git"):
        try:
            gitrepo.trusted_worktree(worktree.path, worktree.common)
        except gitrepo.Untrusted as exc:
            raise WorktreeError(
                f"worktree {worktree.name}: {exc}; Claude is not started in it. Look at what it points "
                f"to, then point it back with git -C {worktree.path.parents[2]} worktree repair {worktree.path}"
            ) from None


def restore(worktree: Worktree, say: t.Callable[[str], None]) -> None:
    """Make the worktree again on its branch when the branch is there and the worktree is not (held under
    the repository's lock): Claude Code's ``-w NAME`` would reset the branch to HEAD, and it reuses a
    worktree it finds. Its stale entry in git's list (a folder deleted by hand) is dropped first, that one
    alone, unless a detached HEAD there holds commits on no branch (then the agent is refused)."""
    if gitrepo.registered(worktree.path):
        return
    top = worktree.path.parents[2]
    branch = gitrepo.branch_of(worktree.name)
    try:
        gitrepo.git(top, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}")
    except gitrepo.GitError:
        return  # no branch: Claude makes both
    if os.path.lexists(worktree.path):
        raise WorktreeError(
            f"worktree {worktree.name}: {worktree.path} is in the way of its branch {branch}, which Claude "
            f"Code would reset; move that folder away, then start this agent again"
        )
    try:
        kept = gitrepo.drop_stale(top, worktree.common, worktree.path)
        if kept:
            raise WorktreeError(f"worktree {worktree.name}: {kept[0]}; then start this agent again")
        gitrepo.git(top, "worktree", "add", "--quiet", str(worktree.path), branch, filters=True)
    except gitrepo.GitError as exc:
        raise WorktreeError(
            f"worktree {worktree.name}: cannot make it again on its branch {branch} ({exc}); Claude Code "
            f"would reset that branch, so this agent is not started: fix the worktree, then start it again"
        ) from None
    say(f"Worktree {worktree.name}: made again on its branch {branch} (kept when its worktree went)")


def _made(worktree: Worktree, deadline: float, ended: threading.Event) -> None:
    """Return once git made the worktree and Claude locked it (or *deadline* passed, or the launch ended)."""
    while not gitrepo.registered(worktree.path):
        if ended.wait(0.05) or time.monotonic() >= deadline:
            return
    grace = min(deadline, time.monotonic() + LOCKED_GRACE)
    admin = gitrepo.admin_dir(worktree.path)
    while admin is not None and not (admin / "locked").exists():
        if ended.wait(0.05) or time.monotonic() >= grace:
            return


@contextlib.contextmanager
def creating(
    worktree: Worktree | None, say: t.Callable[[str], None], cancelled: t.Callable[[], bool] = lambda: False
) -> t.Iterator[None]:
    """Around one launch: when its Claude is to create the worktree, hold the repository's lock until it
    has (or the launch ended), so that creations and our verbs' removals take turns. A stop while we
    wait for the lock (*cancelled*) ends the wait."""
    if worktree is not None:
        check(worktree)
    if worktree is None or gitrepo.registered(worktree.path):
        yield
        return
    try:
        fd = gitrepo.acquire(worktree.common, cancelled=cancelled)
    except OSError as exc:
        say(f"WARNING: cannot take the worktree lock in {worktree.common} ({exc.strerror}); going on")
        fd = None
    else:
        if fd is None and not cancelled():
            say(
                f"WARNING: the worktree lock in {worktree.common} stayed busy; Claude makes {worktree.name} now"
            )
    ended = threading.Event()
    try:
        restore(worktree, say)
    except BaseException:
        if fd is not None:
            os.close(fd)
        raise

    def hold() -> None:
        deadline = time.monotonic() + CREATE_DEADLINE
        _made(worktree, deadline, ended)
        if fd is not None:
            os.close(fd)

    holder = threading.Thread(target=hold, name="worktree-lock", daemon=True)
    holder.start()
    try:
        yield
    finally:
        ended.set()
        holder.join(timeout=1.0)
