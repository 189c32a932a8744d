"""The skills an agent here can be told to pick: the gate names only skills that exist.

A skill is a folder with a ``SKILL.md`` in ``~/.claude/skills/`` (and ``$CLAUDE_CONFIG_DIR``'s) or in
the project's ``.claude/skills/``. ``/session`` is left out: it manages sessions, it is no kind of work.
The names come from folders an agent may have made, so only plain names are shown, and only a few.
Read only when a message needs them (a call the gate denies, a prompt with no session). Standard library only.
"""

from __future__ import annotations

import os
import re

from claude_shepherd.hooks.read_whitelist import project_dirs, user_config_dirs

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

SESSION_SKILL = "session"
DEFAULT_SKILL = "work"
"""What to activate with when no skill is installed: any plain name will do, this one says what it is."""
MAX_SHOWN = 12
MAX_ENTRIES = 200
"""Folders looked at per skills folder: a huge one costs the gate a bounded time."""
_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")


def skill_folders(cwd: str, env: t.Mapping[str, str]) -> list[str]:
    """The ``skills/`` folders Claude Code reads here: the user's and the project's."""
    bases = [*user_config_dirs(env), *(os.path.join(p, ".claude") for p in project_dirs(cwd, env))]
    return list(dict.fromkeys(os.path.join(base, "skills") for base in bases))


def installed_skills(cwd: str, env: t.Mapping[str, str]) -> list[str]:
    """The names of the work skills installed here (sorted, at most :data:`MAX_SHOWN`)."""
    found: set[str] = set()
    for folder in skill_folders(cwd, env):
        try:
            with os.scandir(folder) as entries:
                for n, entry in enumerate(entries):
                    if n >= MAX_ENTRIES:
                        break
                    name = entry.name
                    if name != SESSION_SKILL and _PLAIN.fullmatch(name) and _has_skill_file(entry.path):
                        found.add(name)
        except OSError:
            continue
    return sorted(found)[:MAX_SHOWN]


def _has_skill_file(folder: str) -> bool:
    return os.path.isfile(os.path.join(folder, "SKILL.md"))
