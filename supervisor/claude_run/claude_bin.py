"""Finding the Claude Code executable the supervisor launches.

Order: ``$CLAUDE_BIN`` (an explicit choice is never second-guessed: if it does
not name an executable file that is an error, not a silent fallback), then
``claude`` on ``PATH``, then the places the installers put it. The bash
original exited 1 when nothing was found; a missing command is exit 127 by
shell convention, which is what we use.
"""

from __future__ import annotations

import os
from pathlib import Path

from claude_shepherd.supervisor.env import CLAUDE_BIN_ENV
from claude_shepherd.supervisor.errors import ProgramMissingError

TYPE_CHECKING = False
if TYPE_CHECKING:  # claude-run runs beside every agent: no typing at run time (docs/HOT_CORE.md)
    import typing as t


class ClaudeNotFoundError(ProgramMissingError):
    """No Claude executable could be found (exit 127)."""


def which(name: str, path: str | None) -> str | None:
    """The first executable file *name* on *path* (``shutil.which`` without importing shutil's
    archive modules into every claude-run); a name with a slash is checked as it is."""
    if os.sep in name:
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    for directory in (path if path is not None else os.defpath).split(os.pathsep):
        candidate = os.path.join(directory or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def install_locations(home: Path) -> list[Path]:
    """Where the native installer, the legacy local install, npm and Homebrew put ``claude``."""
    return [
        home / ".claude" / "local" / "claude",
        home / ".local" / "bin" / "claude",
        home / ".npm-global" / "bin" / "claude",
        Path("/usr/local/bin/claude"),
        Path("/opt/homebrew/bin/claude"),
    ]


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_claude(env: t.Mapping[str, str] | None = None) -> Path:
    """The absolute path of the Claude executable, or :class:`ClaudeNotFoundError`."""
    env = os.environ if env is None else env
    configured = env.get(CLAUDE_BIN_ENV, "").strip()
    if configured:
        given = Path(configured).expanduser()
        if not given.is_absolute() and os.sep not in configured:
            found = which(configured, env.get("PATH"))
            if found:
                return Path(found).absolute()
        elif _executable(given):
            return given.absolute()
        raise ClaudeNotFoundError(
            f"{CLAUDE_BIN_ENV}={configured} is not an executable file; fix it or unset it to search PATH"
        )
    found = which("claude", env.get("PATH"))
    if found:
        return Path(found).absolute()
    home = Path(env.get("HOME") or Path.home())
    for candidate in install_locations(home):
        if _executable(candidate):
            return candidate
    raise ClaudeNotFoundError(
        f"claude not found on PATH nor in {home}/.claude/local, {home}/.local/bin, /usr/local/bin; "
        f"install Claude Code or set {CLAUDE_BIN_ENV}=/path/to/claude"
    )
