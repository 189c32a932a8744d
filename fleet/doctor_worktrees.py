"""``fleet doctor``'s look at agent worktrees no layout names and nothing runs in, and at git's entries of
worktrees whose folder is gone. ``--fix`` prunes those entries and removes only a worktree provably
empty; any other is said, with what it holds, for ``fleet worktree remove`` (docs/WORKTREES.md).
"""

from __future__ import annotations

import typing as t
from pathlib import Path

from claude_shepherd.fleet import worktrees as wt
from claude_shepherd.fleet.doctor_finding import Finding
from claude_shepherd.fleet.layout import Layout
from claude_shepherd.fleet.worktree_removal import prune_stale, remove
from claude_shepherd.supervisor import gitrepo
from claude_shepherd.supervisor.errors import ShepherdError


def _remove_empty(repo: Path, name: str) -> t.Callable[[], str]:
    def fix() -> str:
        return remove(repo, name)  # checks again under the repository's lock, never forced

    return fix


def _prune(repo: Path) -> t.Callable[[], str]:
    def fix() -> str:
        return "; ".join(prune_stale(repo)) or "nothing was stale any more"

    return fix


def find_worktrees(projects: t.Iterable[Path], layouts: t.Sequence[Layout]) -> list[Finding]:
    """Agent worktrees of the projects' repositories that no layout's pane names and nothing runs in,
    and stale worktree entries. Only what is provably empty gets a fix."""
    repos: set[Path] = set()
    for project in projects:
        if project.is_dir():
            try:
                repos.add(wt.repository(project))
            except ShepherdError:
                continue
    named = {p.worktree for layout in layouts for w in layout.windows for p in w.panes if p.worktree}
    findings: list[Finding] = []
    for repo in sorted(repos):
        try:
            trees = wt.inspect(repo)
        except gitrepo.GitError as exc:
            findings.append(Finding("worktree", f"{repo}: cannot list its worktrees ({exc})"))
            continue
        try:
            kept = wt.kept_branches(repo)
        except gitrepo.GitError as exc:
            kept = []
            findings.append(Finding("worktree", f"{repo}: cannot list its agents' branches ({exc})"))
        for branch, count in kept:
            name = branch.removeprefix(gitrepo.BRANCH_PREFIX)
            findings.append(
                Finding("worktree", f"branch {branch} of {repo} holds {count} commit{'s' * (count != 1)} on no "
                                    f"other branch and has no worktree: a plain claude -w {name} would reset "
                                    f"it to HEAD (claude-run and fleet start make its worktree again; or "
                                    f"git -C {repo} worktree add {gitrepo.WORKTREES_DIR / name} {branch})")
            )  # fmt: skip
        stale = wt.stale_entries(repo)
        if stale:
            findings.append(
                Finding(
                    "worktree",
                    f"{repo}: stale worktree entr{'y' if len(stale) == 1 else 'ies'} (folder gone): "
                    + ", ".join(str(entry.path) for entry in stale),
                    _prune(repo),
                )
            )
        for tree in trees:
            if tree.work.foreign:
                findings.append(
                    Finding("worktree", f"worktree {tree.name}: {tree.work.problem}; nothing of ours runs git "
                                        f"in it: look at what it points to, then point it back with "
                                        f"git -C {repo} worktree repair {tree.entry.path}")
                )  # fmt: skip
                continue
            if tree.entry.prunable or tree.name in named or tree.users:
                continue
            state = tree.work.describe()
            message = (
                f"worktree {tree.name} of {repo} ({tree.entry.branch or 'detached'}, {wt.size_of(tree.entry.path)}): "
                f"no agent of {'these layouts' if layouts else 'a layout'} uses it; {state}"
            )
            if tree.work.empty:
                findings.append(Finding("worktree", message, _remove_empty(repo, tree.name)))
            else:
                findings.append(
                    Finding("worktree", message + f" (kept; see fleet worktree ls --repo {repo})")
                )
    return findings
