"""An agent's worktree as ``fleet status`` shows it: which one, its branch, what is unsaved in it.

One ``git status`` per agent, all of them within :data:`STATUS_BUDGET`: a status run in loops waits
for no huge tree, which it then calls *unknown*, never *clean*.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from claude_shepherd.fleet.worktree_work import Work
from claude_shepherd.supervisor import gitrepo

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
