"""Sessions related to one that ends: the others sharing its keywords or description words, best first."""

from __future__ import annotations

import re
from pathlib import Path

from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.session.fields import F
from claude_shepherd.supervisor.session.store import read_state

KEYWORD_WEIGHT = 3
"""A shared keyword counts as much as this many shared description words."""

_WORD = re.compile(r"[a-z0-9][a-z0-9_-]{3,}")


def words(text: str) -> set[str]:
    """The words of *text* worth comparing: lower case, four characters or more."""
    return set(_WORD.findall(text.lower()))


def related_sessions(session_dir: Path, keywords: list[str], description: str, limit: int = 5) -> list[str]:
    """Other sessions sharing keywords or description words, best first, one line each."""
    mine_kw = {k.lower() for k in keywords}
    mine_words = words(description)
    scored: list[tuple[int, str]] = []
    for entry in sorted(session_dir.parent.iterdir()):
        if entry == session_dir or entry.name.startswith(".") or entry.is_symlink() or not entry.is_dir():
            continue
        try:
            state = read_state(entry)
        except ShepherdError:
            continue
        theirs_kw = {str(k).lower() for k in state.get(F.SEARCH_KEYWORDS) or [] if isinstance(k, str)}
        listed = state.get(F.KEYWORDS)
        if isinstance(listed, str):
            theirs_kw |= {k.strip().lower() for k in listed.split(",") if k.strip()}
        raw_desc = state.get(F.SESSION_DESCRIPTION)
        desc = raw_desc if isinstance(raw_desc, str) else ""
        score = KEYWORD_WEIGHT * len(mine_kw & theirs_kw) + len(mine_words & words(desc))
        if score:
            first = desc.strip().splitlines()[0] if desc.strip() else ""
            scored.append((score, f"- {entry.name} (skill: {state.get(F.SKILL) or '?'}) {first}".rstrip()))
    scored.sort(key=lambda item: -item[0])
    return [line for _, line in scored[:limit]]
