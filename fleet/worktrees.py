"""Agents' worktrees: what is in each, and removing one only when nothing in it would be lost.

Claude Code makes an agent's worktree (``claude -w NAME``: ``.claude/worktrees/NAME`` on branch
``worktree-NAME``); nothing of ours removes one on its own — not ``fleet stop``, not a crash, not
``fleet doctor --fix`` unless it is provably empty. :func:`remove` is the one way, asked for by name
(``fleet worktree remove``), and it refuses a worktree holding any of :class:`Work` unless forced. Even
forced, commits stay reachable: a branch holding a commit on no other branch is never deleted, whether
its worktree's folder is there or gone. Every removal holds the repository's worktree lock
(:func:`claude_shepherd.supervisor.gitrepo.repo_lock`), the one claude-run holds while its Claude
creates a worktree. No git runs in a folder whose ``.git`` does not point into this repository
(:func:`claude_shepherd.supervisor.gitrepo.trusted_worktree`): an agent writes its worktree's files.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from claude_shepherd.supervisor import gitrepo
from claude_shepherd.supervisor.errors import ShepherdError, UsageError

STATUS_TIMEOUT = 5.0
"""Seconds one worktree's ``git status`` may take (a huge tree is *unknown*, never *clean*)."""
SIZE_TIMEOUT = 10.0


class WorktreeError(ShepherdError):
    """A worktree that cannot be removed, or found, in one line."""


@dataclass(frozen=True)
class Entry:
    """One ``git worktree list --porcelain`` entry."""

    path: Path
    head: str | None = None
    branch: str | None = None
    """Short branch name; None when detached."""
    locked: bool = False
    prunable: bool = False
    """Its folder is gone (git says so, or, for a locked one, it is not there): a stale entry."""

    @property
    def name(self) -> str:
        return self.path.name


@dataclass(frozen=True)
class Work:
    """What a worktree holds that its removal would lose; ``known`` is False when git could not say."""

    changed: tuple[str, ...] = ()
    untracked: tuple[str, ...] = ()
    unique_commits: int = 0
    stashes: tuple[str, ...] = ()
    known: bool = True
    problem: str = ""
    ignored: tuple[str, ...] = ()
    """Files and folders git ignores (an agent's notes, a build, a copied ``.env``): work too."""
    foreign: bool = False
    """Its ``.git`` does not point into this repository: git was not run in it (``problem`` says where)."""
    hidden: tuple[str, ...] = ()
    """Files git was told not to look at (``assume-unchanged``, ``skip-worktree``) that are there: their
    changes show in no ``git status``."""
    detached: str | None = None
    """The commit a detached HEAD is at when commits there are on no branch: removing the worktree (or
    pruning its entry) would leave them to gc."""

    @property
    def empty(self) -> bool:
        """Provably nothing to lose."""
        return self.known and not (
            self.changed
            or self.untracked
            or self.ignored
            or self.hidden
            or self.unique_commits
            or self.stashes
        )

    def describe(self) -> str:
        if not self.known:
            return f"unknown ({self.problem})"
        if self.empty:
            return "clean"
        parts = []
        if self.changed:
            parts.append(_count(len(self.changed), "uncommitted change") + _some(self.changed))
        if self.untracked:
            parts.append(_count(len(self.untracked), "untracked file") + _some(self.untracked))
        if self.ignored:
            parts.append(_count(len(self.ignored), "ignored file") + _some(self.ignored))
        if self.hidden:
            parts.append(_count(len(self.hidden), "file") + " git status does not show" + _some(self.hidden))
        if self.unique_commits and self.detached:
            parts.append(
                _count(self.unique_commits, "commit")
                + f" on no branch (its HEAD, detached at {self.detached[:12]})"
            )
        elif self.unique_commits:
            parts.append(_count(self.unique_commits, "commit") + " on no other branch")
        if self.stashes:
            parts.append(
                _count(len(self.stashes), "stash", "stashes") + f" made in it ({', '.join(self.stashes)})"
            )
        return "; ".join(parts)


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def _some(paths: tuple[str, ...], shown: int = 3) -> str:
    more = f", +{len(paths) - shown} more" if len(paths) > shown else ""
    named = (p.encode("utf-8", "surrogateescape").decode("utf-8", "replace") for p in paths[:shown])
    return f" ({', '.join(named)}{more})"


@dataclass(frozen=True)
class Worktree:
    """An agent worktree of a repository, with what is in it."""

    entry: Entry
    repo: Path
    work: Work
    users: tuple[str, ...] = field(default=())
    """Processes running in it (``pid N (name)``)."""

    @property
    def name(self) -> str:
        return self.entry.name


def entries(repo: Path) -> list[Entry]:
    """Every worktree git knows of in *repo* (the main checkout first)."""
    text = gitrepo.git(repo, "worktree", "list", "--porcelain")
    found: list[Entry] = []
    for block in text.strip().split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            key, _, value = line.partition(" ")
            fields[key] = value
        if "worktree" not in fields:
            continue
        branch = fields.get("branch")
        found.append(
            Entry(
                path=Path(fields["worktree"]),
                head=fields.get("HEAD"),
                branch=branch.removeprefix("refs/heads/") if branch else None,
                locked="locked" in fields,
                prunable="prunable" in fields or not Path(fields["worktree"]).exists(),
            )
        )
    return found


def agent_entries(repo: Path) -> list[Entry]:
    """The worktrees Claude Code makes (under ``.claude/worktrees/``) of *repo*."""
    base = (repo / gitrepo.WORKTREES_DIR).resolve()
    return [
        e for e in entries(repo) if e.path.parent == base or e.path.parent == repo / gitrepo.WORKTREES_DIR
    ]


def work_in(repo: Path, entry: Entry, timeout: float = STATUS_TIMEOUT) -> Work:
    """What *entry* holds: uncommitted changes, untracked and ignored files, files git was told not to
    look at, commits on no other branch, stashes. Unknown, without running git in it, when it is not a
    worktree of *repo*; git runs in it through the folder checked (:func:`gitrepo.worktree_options`)."""
    changed: list[str] = []
    untracked: list[str] = []
    ignored: list[str] = []
    hidden: tuple[str, ...] = ()
    try:
        if not entry.prunable:
            within = gitrepo.worktree_options(entry.path)
            status = gitrepo.git(
                entry.path, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored=matching",
                timeout=timeout, within=within,
            )  # fmt: skip
            records = status.split("\0")
            i = 0
            while i < len(records):
                record = records[i]
                i += 1
                if len(record) < 4:
                    continue
                code, path = record[:2], record[3:]
                if code[0] in "RC":
                    i += 1  # the rename's source path follows
                {"??": untracked, "!!": ignored}.get(code, changed).append(path)
            hidden = _hidden(entry.path, within, timeout)
        unique = unique_commits(repo, entry)
        stashes = _stashes_of(repo, entry)
    except gitrepo.Untrusted as exc:
        return Work(known=False, problem=str(exc), foreign=True)
    except gitrepo.GitError as exc:
        return Work(known=False, problem=str(exc))
    detached = entry.head if unique and not entry.branch else None
    return Work(tuple(changed), tuple(untracked), unique, tuple(stashes), ignored=tuple(ignored),
                hidden=hidden, detached=detached)  # fmt: skip


def _hidden(path: Path, within: list[str], timeout: float) -> tuple[str, ...]:
    """Files there that no ``git status`` shows: those git was told not to look at (``update-index
    --assume-unchanged`` shows as a lowercase tag, ``--skip-worktree`` as ``S``; a sparse checkout's are
    not there and lose nothing), and those in a submodule's folder that is no repository (a worktree's
    submodules start uninitialised: git sees the folder as the submodule, never what is in it)."""
    listed = gitrepo.git(path, "ls-files", "-s", "-v", "-z", timeout=timeout, within=within)
    found: list[str] = []
    for record in listed.split("\0"):
        head, _, name = record.partition("\t")
        tag, _, rest = head.partition(" ")
        if not name:
            continue
        if rest.startswith("160000 "):
            found += _in_bare_submodule(path, name)
        elif (tag.islower() or tag == "S") and os.path.lexists(path / name):
            found.append(name)
    return tuple(found)


def _in_bare_submodule(path: Path, name: str, limit: int = 1000) -> list[str]:
    """The files in submodule folder *name* when it is not a repository (no ``.git``), up to *limit*."""
    folder = path / name
    if not folder.is_dir() or folder.is_symlink() or os.path.lexists(folder / ".git"):
        return []
    found: list[str] = []
    for top, _dirs, files in os.walk(folder):
        found += [os.path.relpath(os.path.join(top, f), path) for f in files]
        if len(found) >= limit:
            break
    return found[:limit]


def unique_commits(repo: Path, entry: Entry) -> int:
    """Commits of the worktree's HEAD and branch on no other branch, tag or remote (asked of *repo*: the
    worktree's folder may be gone, and its HEAD is still in git's list)."""
    if entry.head and not gitrepo.OBJECT_ID.fullmatch(entry.head):
        raise gitrepo.GitError(f"git lists no commit id as the HEAD of {entry.path}")
    tips = [entry.head] if entry.head and set(entry.head) != {"0"} else []
    tips += [f"refs/heads/{entry.branch}"] if entry.branch else []
    if not tips:
        return 0
    exclude = [f"--exclude={entry.branch}"] if entry.branch else []
    text = gitrepo.git(
        repo, "rev-list", "--count", "--not", *exclude, "--branches", "--tags", "--remotes", "--not",
        "--end-of-options", *tips,
    )  # fmt: skip
    return int(text.strip() or 0)


def _stashes_of(repo: Path, entry: Entry) -> list[str]:
    """Stash entries made on the worktree's branch (their reflog says ``WIP on BRANCH:`` / ``On BRANCH:``).

    The stash is one list for every worktree of a repository; these are the ones made in this one."""
    if not entry.branch:
        return []
    text = gitrepo.git(repo, "stash", "list", "--format=%gd%x00%gs")
    mine = []
    for line in text.splitlines():
        ref, _, subject = line.partition("\0")
        if subject.startswith((f"WIP on {entry.branch}:", f"On {entry.branch}:")):
            mine.append(ref)
    return mine


def users_of(path: Path) -> tuple[str, ...]:
    """Processes whose working directory is in *path* (an agent, its tools, a person's shell), but
    this one and its ancestors (the person asking from there)."""
    import psutil  # only here, where every process is scanned (docs/HOT_CORE.md): not on fleet status's path

    real = os.path.realpath(path)
    mine = {os.getpid(), *(p.pid for p in psutil.Process().parents())}
    found = []
    for proc in psutil.process_iter(["pid", "name", "cwd"]):
        if proc.info["pid"] in mine:
            continue
        cwd = proc.info.get("cwd")
        if cwd and (cwd == real or cwd.startswith(real + os.sep)):
            found.append(f"pid {proc.info['pid']} ({proc.info.get('name') or '?'})")
    return tuple(found)


def size_of(path: Path, timeout: float = SIZE_TIMEOUT) -> str:
    """``du -sh`` of *path*, or ``?`` when it takes too long or fails."""
    try:
        done = subprocess.run(
            ["du", "-sh", "--", str(path)], capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return done.stdout.split("\t", 1)[0] if done.returncode == 0 and done.stdout else "?"


def repository(where: Path) -> Path:
    """The main checkout of the repository *where* is in: the checkout holding ``.claude/worktrees/NAME``
    when *where* is inside one (by position: git is not run in an agent's folder to ask), else git's
    answer from *where*."""
    top = gitrepo.main_checkout(where)
    if top is not None:
        return top
    try:
        common = gitrepo.common_dir(where)
    except gitrepo.GitError as exc:
        raise UsageError(f"{where} is not in a git repository ({exc}); use --repo DIR") from None
    return common.parent if common.name == ".git" else common


def inspect(repo: Path, *, users: bool = True) -> list[Worktree]:
    return [
        Worktree(e, repo, work_in(repo, e), users_of(e.path) if users else ()) for e in agent_entries(repo)
    ]


def find(repo: Path, name: str) -> Entry:
    for entry in agent_entries(repo):
        if entry.name == name:
            return entry
    names = ", ".join(e.name for e in agent_entries(repo)) or "none"
    raise WorktreeError(f"{repo} has no agent worktree {name!r} (it has: {names}); see fleet worktree ls")


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
            f"; its branch {entry.branch} is kept: it holds {_count(work.unique_commits, 'commit')} on no "
            f"other branch (claude-run -w {entry.name} goes on from it)"
        )
    try:
        gitrepo.git(repo, "branch", "-D", entry.branch)
    except gitrepo.GitError as exc:
        return f"; its branch {entry.branch} is kept ({exc})"
    return ""


def kept_branches(repo: Path) -> list[tuple[str, int]]:
    """Claude's ``worktree-NAME`` branches that have no worktree and hold commits on no other branch, with
    how many: a plain ``claude -w NAME`` would reset such a branch to HEAD (claude-run makes its worktree
    again first)."""
    live = {e.branch for e in entries(repo) if e.branch and not e.prunable}
    heads = gitrepo.git(
        repo, "for-each-ref", "--format=%(refname:short)", f"refs/heads/{gitrepo.BRANCH_PREFIX}*"
    )
    kept = []
    for branch in heads.split():
        if branch in live:
            continue
        name = branch.removeprefix(gitrepo.BRANCH_PREFIX)
        count = unique_commits(repo, Entry(repo / gitrepo.WORKTREES_DIR / name, branch=branch, prunable=True))
        if count:
            kept.append((branch, count))
    return kept


def stale_entries(repo: Path) -> list[Entry]:
    """git's entries of worktrees of *repo* whose folder is gone (never the main checkout)."""
    return [e for e in entries(repo)[1:] if e.prunable]


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


# --------------------------------------------------------------------------- an agent's, for fleet status

STATUS_BUDGET = 3.0
"""Seconds all of one ``fleet status``'s ``git status`` calls may take together; past it, *unknown*."""


@dataclass(frozen=True)
class AgentTree:
    name: str
    path: Path
    branch: str | None = None
    unsaved: str | None = None
    """``""``: nothing unsaved; a description of the uncommitted changes and untracked files; None: unknown."""


def agent_tree(
    name: str | None, claude_cwd: str | None, supervisor_cwd: str | None
) -> tuple[str, Path] | None:
    """The worktree an agent runs in: where its Claude is (``.claude/worktrees/NAME``), else where the
    name its pane asked for (``$CLAUDE_RUN_WORKTREE``) puts it, beside its supervisor's repository."""
    if claude_cwd:
        top = gitrepo.main_checkout(claude_cwd)
        if top is not None:
            rest = Path(claude_cwd).relative_to(top / gitrepo.WORKTREES_DIR)
            return rest.parts[0], top / gitrepo.WORKTREES_DIR / rest.parts[0]
    if name and supervisor_cwd:
        for candidate in (Path(supervisor_cwd), *Path(supervisor_cwd).parents):
            if (candidate / ".git").exists():
                return name, gitrepo.worktree_path(candidate, name)
    return None


def unsaved_in(name: str, path: Path, timeout: float) -> AgentTree:
    """One ``git status`` of *path*: its branch, and what is not committed (within *timeout*); unknown,
    without running git there, when *path* is not a worktree of the repository holding it."""
    if timeout <= 0 or not path.is_dir():
        return AgentTree(name, path)
    try:
        out = gitrepo.git(
            path, "status", "--porcelain=v1", "-z", "--branch", "--untracked-files=all",
            timeout=timeout, within=gitrepo.worktree_options(path),
        )  # fmt: skip
    except gitrepo.GitError:
        return AgentTree(name, path)
    records = out.split("\0")
    head = records[0][3:] if records and records[0].startswith("## ") else ""
    branch = (
        head.split("...", 1)[0] if head and not head.startswith(("HEAD ", "No commits yet on ")) else None
    )
    if head.startswith("No commits yet on "):
        branch = head.removeprefix("No commits yet on ")
    changed: list[str] = []
    untracked: list[str] = []
    skip = False
    for record in records[1:]:
        if skip or len(record) < 4:
            skip = False
            continue
        code, file = record[:2], record[3:]
        skip = code[0] in "RC"
        (untracked if code == "??" else changed).append(file)
    work = Work(tuple(changed), tuple(untracked))
    return AgentTree(name, path, branch, "" if work.empty else work.describe())
