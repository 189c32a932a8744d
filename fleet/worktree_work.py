"""What a worktree holds that its removal would lose (:class:`Work`), said in one line.

It stands apart from git's list of worktrees (:mod:`claude_shepherd.fleet.worktrees`): ``fleet status``
says with it what is unsaved in an agent's worktree, and loads nothing more (docs/HOT_CORE.md).
"""

from __future__ import annotations

from dataclasses import dataclass

STATUS_TIMEOUT = 5.0
"""Seconds one worktree's ``git status`` may take (a huge tree is *unknown*, never *clean*)."""


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
            parts.append(plural(len(self.changed), "uncommitted change") + _some(self.changed))
        if self.untracked:
            parts.append(plural(len(self.untracked), "untracked file") + _some(self.untracked))
        if self.ignored:
            parts.append(plural(len(self.ignored), "ignored file") + _some(self.ignored))
        if self.hidden:
            parts.append(plural(len(self.hidden), "file") + " git status does not show" + _some(self.hidden))
        if self.unique_commits and self.detached:
            parts.append(
                plural(self.unique_commits, "commit")
                + f" on no branch (its HEAD, detached at {self.detached[:12]})"
            )
        elif self.unique_commits:
            parts.append(plural(self.unique_commits, "commit") + " on no other branch")
        if self.stashes:
            parts.append(
                plural(len(self.stashes), "stash", "stashes") + f" made in it ({', '.join(self.stashes)})"
            )
        return "; ".join(parts)


def plural(n: int, one: str, many: str | None = None) -> str:
    """``1 commit``, ``3 commits``."""
    return f"{n} {one if n == 1 else many or one + 's'}"


def _some(paths: tuple[str, ...], shown: int = 3) -> str:
    more = f", +{len(paths) - shown} more" if len(paths) > shown else ""
    named = (p.encode("utf-8", "surrogateescape").decode("utf-8", "replace") for p in paths[:shown])
    return f" ({', '.join(named)}{more})"
