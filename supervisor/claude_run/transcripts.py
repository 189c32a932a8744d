"""Does Claude Code still have the conversation we are about to ``--resume``?

Claude keeps each conversation in
``$CLAUDE_CONFIG_DIR/projects/<cwd with / replaced by ->/<session id>.jsonl``
(``~/.claude`` when the variable is unset). ``claude --resume ID`` for an id it
cannot find prints ``No conversation found with session ID: ID`` and exits 1,
which in a supervisor looks exactly like a crash. Checking first turns that into
a decision we can explain ("starting fresh: no transcript ...").

Newer Claude versions also replace other non-alphanumeric characters of the
directory name (``.``, ``_``) with ``-``; both spellings are checked, for the
working directory as given and with symlinks resolved.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from claude_shepherd.supervisor.env import CONFIG_DIR_ENV

TYPE_CHECKING = False
if TYPE_CHECKING:  # claude-run runs beside every agent: no typing at run time (docs/HOT_CORE.md)
    import typing as t

PROJECTS_DIRNAME = "projects"

_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")


def config_dir(env: t.Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    configured = env.get(CONFIG_DIR_ENV, "").strip()
    if configured:
        return Path(configured).expanduser()
    home = env.get("HOME") or str(Path.home())
    return Path(home) / ".claude"


def project_slugs(cwd: str | Path) -> list[str]:
    """The directory names Claude may use for *cwd* under ``projects/``, most likely first."""
    seen: list[str] = []
    for path in (os.path.abspath(cwd), os.path.realpath(cwd)):
        for slug in (path.replace("/", "-"), _NOT_ALNUM.sub("-", path)):
            if slug not in seen:
                seen.append(slug)
    return seen


def transcript_candidates(
    session_id: str, cwd: str | Path, env: t.Mapping[str, str] | None = None
) -> list[Path]:
    projects = config_dir(env) / PROJECTS_DIRNAME
    return [projects / slug / f"{session_id}.jsonl" for slug in project_slugs(cwd)]


def find_transcript(session_id: str, cwd: str | Path, env: t.Mapping[str, str] | None = None) -> Path | None:
    """The transcript of *session_id* for a Claude started in *cwd*, or None."""
    if not session_id or "/" in session_id or session_id in {".", ".."}:
        return None
    for candidate in transcript_candidates(session_id, cwd, env):
        if candidate.is_file():
            return candidate
    return None
