"""A problem ``fleet doctor`` found, and the fix that repairs it (run only with ``--fix``).

Each check of the doctor (``doctor_*.py``) makes these; :mod:`claude_shepherd.fleet.doctor` applies them.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass


@dataclass
class Finding:
    kind: str  # unanswered | orphan | dead-agent | stale-binding | duplicate-binding | duplicate-pane | not-in-layout | hooks | claude | index | worktree
    message: str
    fix: t.Callable[[], str] | None = None
    fixed: str | None = None
    info: bool = False
    """Not a problem: something that heals itself, fixed on every run and reported as information."""
