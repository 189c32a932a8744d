"""Agents' worktrees: git's entries of them, and what each holds.

Claude Code makes an agent's worktree (``claude -w NAME``: ``.claude/worktrees/NAME`` on branch
``worktree-NAME``). No git runs in a folder whose ``.git`` does not point into this repository
(:func:`claude_shepherd.supervisor.gitrepo.trusted_worktree`): an agent writes its worktree's files.
Removing one is :mod:`claude_shepherd.fleet.worktree_removal`'s alone.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from claude_shepherd.fleet.worktree_work import STATUS_TIMEOUT, Work
from claude_shepherd.supervisor import gitrepo
from claude_shepherd.supervisor.errors import ShepherdError, UsageError

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
