"""May the session gate let a Read through before a session is active?

Only to load standards and session material: ``~/.claude/`` (and
``$CLAUDE_CONFIG_DIR``), the project's ``.claude/``, the sessions root, or a
file named ``CLAUDE.md`` / ``MEMORY.md``. The bash original matched the raw
string, so ``/etc/.claude/../passwd`` passed (docs/DESIGN.md appendix A). Here the
path is made absolute against the hook's ``cwd`` and symlink-resolved, and
only then compared by whole path components.
Standard library only.
"""

from __future__ import annotations

import os

from claude_shepherd.supervisor.env import CONFIG_DIR_ENV, PROJECT_DIR_ENV
from claude_shepherd.supervisor.session.paths import project_root

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

STANDARD_FILE_NAMES = frozenset({"CLAUDE.md", "MEMORY.md"})


def resolve(path: str, cwd: str, home: str) -> str | None:
    """The real absolute path the Read tool would open, or None for a non-path."""
    if not isinstance(path, str) or not path or "\0" in path:
        return None
    if path == "~" or path.startswith("~/"):
        path = home + path[1:]  # Claude Code expands a leading ~ itself
    return os.path.realpath(os.path.join(cwd, path))


def is_under(path: str, root: str) -> bool:
    """Component-wise containment; a root of ``/`` whitelists nothing, not everything."""
    if not root or root == os.sep:
        return False
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def user_config_dirs(env: t.Mapping[str, str]) -> list[str]:
    """``~/.claude`` and ``$CLAUDE_CONFIG_DIR``, symlink-resolved."""
    home = env.get("HOME") or os.path.expanduser("~")
    dirs = [os.path.realpath(os.path.join(home, ".claude"))]
    configured = env.get(CONFIG_DIR_ENV, "").strip()
    if configured and os.path.isabs(configured):
        dirs.append(os.path.realpath(configured))
    return dirs


def allowed_roots(cwd: str, sessions_root: str, env: t.Mapping[str, str]) -> list[str]:
    roots = user_config_dirs(env)
    projects = {str(project_root(cwd))}
    project_dir = env.get(PROJECT_DIR_ENV, "").strip()
    if project_dir and os.path.isabs(project_dir):
        projects.add(project_dir)
    roots.extend(os.path.realpath(os.path.join(p, ".claude")) for p in sorted(projects))
    roots.append(os.path.realpath(sessions_root))
    return roots


def read_allowed(file_path: t.Any, *, cwd: str, sessions_root: str, env: t.Mapping[str, str]) -> bool:
    """True when reading *file_path* is loading standards or session material."""
    home = env.get("HOME") or os.path.expanduser("~")
    real = resolve(file_path, cwd, home)
    if real is None:
        return False
    if os.path.basename(real) in STANDARD_FILE_NAMES:
        return True
    return any(is_under(real, root) for root in allowed_roots(cwd, sessions_root, env))
