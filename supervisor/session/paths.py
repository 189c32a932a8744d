"""Where sessions live, and which directory a ``DIR`` argument names.

The sessions root is ``$CLAUDE_SESSIONS_DIR`` when set (``claude-run`` exports
it, so hooks, the status line and Bash tools agree even after a ``cd``), else
``sessions/`` of the project: the nearest directory at or above the working
directory that has ``sessions/``, ``.claude/`` or ``.git`` (the original only
looked in ``$PWD``, so running from a subdirectory found nothing, G8); from an
agent's worktree (``PROJECT/.claude/worktrees/NAME/...``), PROJECT's.

A session is a directory directly inside the root. A ``DIR`` that resolves
anywhere else — through ``..``, an absolute path or a symlink — is refused.
Standard library only.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from claude_shepherd.supervisor.env import SESSIONS_DIR_ENV
from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.session.fields import RESERVED_FILES, F

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

SESSIONS_DIRNAME = "sessions"
PROJECT_MARKERS = (SESSIONS_DIRNAME, ".claude", ".git")


class SessionPathError(ShepherdError):
    """A DIR argument that does not name a session directory inside the root."""


WORKTREES_PARTS = (".claude", "worktrees")
"""Where Claude Code keeps ``claude -w NAME``'s worktrees, under the project."""


def project_root(start: str | Path) -> Path:
    """The nearest directory at or above *start* carrying a project marker, else *start*."""
    start = Path(os.path.abspath(start))
    for candidate in (start, *start.parents):
        if any((candidate / marker).exists() for marker in PROJECT_MARKERS):
            return candidate
    return start


def worktree_checkout(start: str | Path) -> Path | None:
    """The checkout whose agent worktree (``CHECKOUT/.claude/worktrees/NAME``, where ``claude -w NAME``
    puts it) *start* is in, by position alone (no git process); None outside one."""
    parts = Path(os.path.abspath(start)).parts
    for i in range(len(parts) - 3, 0, -1):
        if parts[i] == WORKTREES_PARTS[0] and parts[i + 1] == WORKTREES_PARTS[1]:
            return Path(*parts[:i])
    return None


GITFILE_LIMIT = 4096
"""Bytes read of a ``.git`` file (``gitdir: PATH``) or a git folder's ``commondir``/``gitdir`` file."""


def git_pointer(file: str | Path, prefix: str = "") -> str | None:
    """The folder a ``.git`` file (*prefix* ``"gitdir: "``), a ``commondir`` or an admin folder's
    ``gitdir`` names, read as git reads it (the prefix exactly, only line ends stripped, a relative path
    joined to the file's folder) and not resolved: the caller resolves it with ``os.path.realpath``, which
    follows a link before a ``..`` as the kernel does. None when *file* is no small regular file of that
    form (a link, a FIFO, a folder are none)."""
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        text = os.read(fd, GITFILE_LIMIT).decode("utf-8", "surrogateescape")
    except OSError:
        return None
    finally:
        os.close(fd)
    if not text.startswith(prefix):
        return None
    value = text[len(prefix) :].rstrip("\r\n")
    if not value or "\n" in value or "\0" in value:
        return None
    return os.path.join(os.path.dirname(os.path.abspath(file)), value)


def sessions_root(cwd: str | Path | None = None, env: t.Mapping[str, str] | None = None) -> Path:
    """The absolute sessions root (it may not exist yet)."""
    env = os.environ if env is None else env
    configured = env.get(SESSIONS_DIR_ENV, "").strip()
    base = Path(cwd) if cwd else Path.cwd()
    if configured:
        root = Path(configured).expanduser()
        return Path(os.path.abspath(base / root))
    # One sessions root per project, whichever agent worktree of it we are in (docs/DESIGN_FLEET.md §12).
    return project_root(worktree_checkout(base) or base) / SESSIONS_DIRNAME


def resolve_session_dir(arg: str, root: Path, cwd: str | Path | None = None) -> Path:
    """Turn a user's DIR into ``root/NAME``, refusing anything outside the root.

    ``sessions/NAME``, ``NAME``, ``./sessions/NAME`` from the project and an
    absolute path inside the root all name the same session.
    """
    if not arg or not arg.strip():
        raise SessionPathError("the session DIR is empty; give a folder like sessions/2026_02_07_TOPIC")
    if "\0" in arg:
        raise SessionPathError("the session DIR contains a NUL byte")
    base = Path(cwd) if cwd else Path.cwd()
    given = Path(arg).expanduser()
    if ".." in given.parts:
        raise SessionPathError(f"{arg} contains '..'; name the session folder directly, like sessions/NAME")
    candidates = [given] if given.is_absolute() else [base / given, root.parent / given, root / given]
    real_root = Path(os.path.realpath(root))
    for candidate in candidates:
        lexical = Path(os.path.normpath(candidate))
        if lexical.parent != root and Path(os.path.realpath(lexical.parent)) != real_root:
            continue
        name = lexical.name
        if not name or name.startswith(".") or name in {"..", "."}:
            break
        if not name.isprintable() or name != name.strip():
            raise SessionPathError(
                f"{arg!r} has invisible or control characters in its name; use letters, digits and _ "
                f"(like 2026_02_07_TOPIC), so no session can pass for another"
            )
        if not name.isascii() and _looks_like_another(name):
            raise SessionPathError(
                f"{arg!r} has characters that stand for others (fullwidth or compatibility forms), so it "
                f"could pass for another session; use plain letters, digits and _ (like 2026_02_07_TOPIC)"
            )
        if name.startswith("-") or display_name(Path(name)).startswith("-"):
            raise SessionPathError(
                f"{arg!r}: a session name cannot start with '-' (after its date either), as it would read "
                f"as an option to the commands it is passed to; use a name like 2026_02_07_TOPIC"
            )
        if (root / name).exists() and not (root / name).is_dir():
            raise SessionPathError(f"{root / name} exists and is not a folder; choose another session name")
        # A symlink could make two names one session, or lead out of the root.
        if (root / name).is_symlink():
            raise SessionPathError(f"{arg} is a symlink; a session must be a real folder inside {root}")
        return root / name
    raise SessionPathError(
        f"{arg} is not a folder directly inside the sessions root {root}; "
        f"use sessions/NAME (set {SESSIONS_DIR_ENV} to use another root)"
    )


def _looks_like_another(name: str) -> bool:
    """Does *name* change under NFKC (``Ｓ1`` is ``S1``)? Such a name can pose as another in a list."""
    import unicodedata  # only for names beyond ASCII: the common path imports nothing

    return unicodedata.normalize("NFKC", name) != name


def display_name(session_dir: Path) -> str:
    """The session's name without its ``YYYY_MM_DD_`` date prefix (for status lines)."""
    name = session_dir.name
    parts = name.split("_", 3)
    if len(parts) == 4 and all(p.isdigit() for p in parts[:3]) and len(parts[0]) == 4:
        return parts[3]
    return name


TEMPLATE_PREFIX = "TEMPLATE_"
_LOG_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,120}\.md")


def valid_log_name(name: str) -> bool:
    """A log file name ``session log`` may write: ``X.md``, never one of our own files."""
    return bool(_LOG_NAME.fullmatch(name)) and name not in RESERVED_FILES


def template_log_name(template: object) -> str | None:
    """The log file a template names (``TEMPLATE_X_LOG.md`` → ``X_LOG.md``), if it is a valid one."""
    if not isinstance(template, str) or not template.strip():
        return None
    name = os.path.basename(template.strip())
    name = name[len(TEMPLATE_PREFIX) :] if name.startswith(TEMPLATE_PREFIX) else name
    return name if valid_log_name(name) else None


def log_file_name(state: t.Mapping[str, object]) -> str:
    """The session log's file name: ``TEMPLATE_X_LOG.md`` → ``X_LOG.md``, else ``<SKILL>_LOG.md``.

    ``session log`` writes it and the heartbeat names it in its warnings. A
    template whose name would make the log anything but a plain ``.md`` file of
    its own (``.state.json``, the handover, a dot file) is ignored, so a log
    entry can never land in one of our files.
    """
    name = template_log_name(state.get(F.LOG_TEMPLATE))
    if name is not None:
        return name
    raw = state.get(F.SKILL)
    skill = raw if isinstance(raw, str) else "SESSION"
    return f"{re.sub(r'[^A-Za-z0-9]+', '_', skill).strip('_').upper()[:100] or 'SESSION'}_LOG.md"
