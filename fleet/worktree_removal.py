"""Removing an agent's worktree, only when nothing in it would be lost.

Nothing of ours removes one on its own — not ``fleet stop``, not a crash, not ``fleet doctor --fix``
unless it is provably empty. :func:`remove` is the one way, asked for by name (``fleet worktree
remove``), and it refuses a worktree holding any of :class:`~claude_shepherd.fleet.worktree_work.Work`
unless forced. Even forced, commits stay reachable: a branch holding a commit on no other branch is
never deleted, whether its worktree's folder is there or gone. Every removal holds the repository's
worktree lock (:func:`claude_shepherd.supervisor.gitrepo.repo_lock`), the one claude-run holds while
its Claude creates a worktree.
"""

from __future__ import annotations

from pathlib import Path

from claude_shepherd.fleet.worktree_work import Work, plural
from claude_shepherd.fleet.worktrees import Entry, WorktreeError, find, stale_entries, users_of, work_in
from claude_shepherd.supervisor import gitrepo


def remove(repo: Path, name: str, *, force: bool = False) -> str:
    """Remove agent worktree *name* of *repo*, under the repository's lock; the line saying what was done.

    Refused while a process runs in it, when it is not a worktree of *repo* (even forced: nothing is run
    or deleted in it), and (unless *force*) while it holds any :class:`Work` or git cannot say what it
    holds. Its branch goes only when no commit of it would become unreachable.
    """
    common = gitrepo.common_dir(repo)
    with gitrepo.repo_lock(common) as held:
        if not held:
            raise WorktreeError(
                f"the worktree lock of {repo} stayed busy ({common / gitrepo.LOCK_FILE}); try again"
            )
        entry = find(repo, name)  # under the lock: what is decided on is what is removed
        if not entry.prunable:
            try:
                gitrepo.trusted_worktree(entry.path, common)
            except gitrepo.Untrusted as exc:
                raise WorktreeError(
                    f"{exc}; nothing was removed: look at what it points to, then point it back with "
                    f"git -C {repo} worktree repair {entry.path}"
                ) from None
        running = users_of(entry.path)
        if running:
            raise WorktreeError(
                f"worktree {name} is in use by {', '.join(running)}; stop the agent that runs in it "
                f"first (fleet status shows which), then remove it"
            )
        work = work_in(repo, entry)
        if work.detached:
            raise WorktreeError(
                f"worktree {name} ({entry.path}) holds {work.describe()}, which no branch keeps; keep them "
                f"first with git -C {repo} branch NAME {work.detached[:12]}, then remove it"
            )
        # A stale entry's folder is gone: dropping it loses nothing, and its branch stays if it holds work.
        at_stake = Work(known=work.known, problem=work.problem) if entry.prunable else work
        if not at_stake.empty and not force:
            raise WorktreeError(
                f"worktree {name} ({entry.path}) holds {at_stake.describe()}; commit or move that work, or "
                f"remove it anyway with fleet worktree remove {name} --repo {repo} --force"
            )
        if entry.locked and not entry.prunable:
            gitrepo.git(repo, "worktree", "unlock", str(entry.path))
        try:
            if entry.prunable:
                gitrepo.drop_stale(repo, common, entry.path)
            else:
                # Forced always: what it holds was judged above (work_in) by the git we run; git's own
                # check would start a status of its own, whose worktree configuration we never read.
                gitrepo.git(repo, "worktree", "remove", "--force", str(entry.path))
        except gitrepo.GitError as exc:
            if entry.locked and not entry.prunable:
                gitrepo.git(repo, "worktree", "lock", str(entry.path))
            raise WorktreeError(f"git would not remove worktree {name}: {exc}") from None
        kept = _branch_after_removal(repo, entry, work)
        dropped = Work(work.changed, work.untracked, ignored=work.ignored)  # commits keep their branch
        lost = f", discarding {dropped.describe()}" if not dropped.empty else ""
        gone = " (its folder was already gone)" if entry.prunable else ""
        return f"removed worktree {name} ({entry.path}){gone}{lost}{kept}"


def _branch_after_removal(repo: Path, entry: Entry, work: Work) -> str:
    """Delete the removed worktree's branch when no commit of it is on it alone; what was done with it."""
    if not entry.branch:
        return ""
    if entry.branch != gitrepo.branch_of(entry.name):
        return f"; its branch {entry.branch} is kept (not {gitrepo.branch_of(entry.name)}, the agent's own)"
    if not work.known:
        return f"; its branch {entry.branch} is kept (what is on it could not be told: {work.problem})"
    if work.unique_commits:
        return (
            f"; its branch {entry.branch} is kept: it holds {plural(work.unique_commits, 'commit')} on no "
            f"other branch (claude-run -w {entry.name} goes on from it)"
        )
    try:
        gitrepo.git(repo, "branch", "-D", entry.branch)
    except gitrepo.GitError as exc:
        return f"; its branch {entry.branch} is kept ({exc})"
    return ""


def prune_stale(repo: Path) -> list[str]:
    """Drop git's entries of worktrees whose folder is gone, under the lock, one by one: never one whose
    detached HEAD holds commits on no branch (each kept one says so)."""
    common = gitrepo.common_dir(repo)
    said: list[str] = []
    with gitrepo.repo_lock(common) as held:
        stale = stale_entries(repo)  # looked at under the lock
        if not held or not stale:
            return []
        # A lock is git's guard for a worktree on a drive not mounted now: lifted only for an agent's
        # (Claude locks every one it makes; its branch, and so its commits, stay).
        for entry in stale:
            if entry.locked and gitrepo.main_checkout(entry.path) is None:
                continue
            kept = gitrepo.drop_stale(repo, common, entry.path)
            said += kept or [f"pruned the stale entry of {entry.path} (its folder is gone)"]
    return said
