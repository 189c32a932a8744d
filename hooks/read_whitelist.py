"""May the session gate let a Read through before a session is active?

Only to load standards and session material: the standards of ``~/.claude/``
(and ``$CLAUDE_CONFIG_DIR``) — its top-level markdown (``CLAUDE.md``, …) and
the folders ``agents/``, ``commands/``, ``skills/``, ``plugins/``,
``output-styles/``, ``.directives/`` and ``docs/`` but no ``.git`` in them, the
same in ``engine/`` (the bash era's install keeps its directives, docs and skills
there) — the project's ``.claude/`` and every ``.directives/`` folder in the
project (the bash era looked them up from each file's folder to the project
root), the sessions root, or a file named ``CLAUDE.md`` / ``MEMORY.md``.
Everything else in ``~/.claude`` is secret or conversation data
(``.credentials.json``, ``settings.json``'s ``env`` and ``apiKeyHelper``, a
plugin checkout's ``.git/config`` tokens, ``history.jsonl``, ``projects/``'
transcripts, ``todos/``, shell snapshots …) and is not read before a session is active; credential files
(``.credentials*``, ``.env*``, ``*.pem``, ``*.key``, SSH keys, ``.netrc`` …) and whatever lies in a
credential folder (``.ssh``, ``.gnupg``, ``.aws`` …) are never whitelisted anywhere, and a sessions
root that holds the home directory (a ``sessions`` linked to ``~``) lends nothing.
The bash original matched the raw string, so ``/etc/.claude/../passwd`` passed
(docs/DESIGN.md appendix A). Here the path is made absolute against the hook's
``cwd`` and symlink-resolved, and only then compared by whole path components.
Standard library only.
"""

from __future__ import annotations

import os
import stat

from claude_shepherd.hooks.process_paths import process_relative
from claude_shepherd.supervisor.env import CONFIG_DIR_ENV, PROJECT_DIR_ENV
from claude_shepherd.supervisor.session.paths import TEMPLATE_PREFIX, project_root

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

STANDARD_FILE_NAMES = frozenset({"CLAUDE.md", "MEMORY.md"})
STANDARD_FOLDERS = ("agents", "commands", "skills", "plugins", "output-styles", ".directives", "docs")
"""The folders of a Claude config dir that hold standards (``.directives`` and ``docs`` are the bash era's)."""
ENGINE = "engine"
"""The bash era's install in a config dir (a checkout of its repository): its standards folders and
top-level markdown are standards too — ``.directives`` is often a link into it — its scripts and hooks not."""
DIRECTIVES = ".directives"
"""A project keeps directives in such folders at any depth (seed 004's walk-up discovery)."""
GIT_DIR = ".git"
"""Never a standard: a checkout's ``.git/config`` may hold the token it was cloned with."""
SECRET_PREFIXES = (".credentials", ".env", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519")
SECRET_SUFFIXES = (".pem", ".key", ".p12", ".pfx", ".kdbx")
SECRET_NAMES = frozenset(
    {".netrc", ".git-credentials", ".pgpass", ".pypirc", ".npmrc", ".vault-token", ".boto", ".s3cfg"}
)
SECRET_FOLDERS = frozenset({".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".password-store"})
"""Folders whose every file is a credential or keys to one: ``~/.ssh``'s private keys, GnuPG's, the
clouds' and Docker's logins. A component anywhere in the path refuses it."""


def resolve(path: object, cwd: str, home: str) -> str | None:
    """The real absolute path the Read tool would open, or None for a non-path (or one through
    ``/proc/self``, ``/dev/fd`` …, which Claude opens as its own and the hook would judge as the hook's)."""
    if not isinstance(path, str) or not path or "\0" in path or process_relative(path, cwd, home):
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


def is_secret(real: str) -> bool:
    """A credential file by its name or its folder: never whitelisted, wherever it is."""
    parts = real.split(os.sep)
    name = parts[-1]
    if name.startswith(SECRET_PREFIXES) or name.endswith(SECRET_SUFFIXES) or name in SECRET_NAMES:
        return True
    return not SECRET_FOLDERS.isdisjoint(parts[:-1])


def _standard_entry(relative: str) -> bool:
    """Is *relative* (to a config dir) one of its standards?"""
    parts = relative.split(os.sep)
    if parts[0] == ENGINE and len(parts) > 1:
        parts = parts[1:]
    if GIT_DIR in parts:
        return False
    if len(parts) > 1:
        return parts[0] in STANDARD_FOLDERS
    return parts[0] in STANDARD_FOLDERS or parts[0].endswith(".md")


def _standard_places(config: str) -> t.Iterator[str]:
    """The standards folders of *config*, its own and its engine's."""
    for base in (config, os.path.join(config, ENGINE)):
        for name in STANDARD_FOLDERS:
            yield os.path.join(base, name)


def standards_verdict(real: str, env: t.Mapping[str, str]) -> bool | None:
    """For a real path in or linked from a Claude config dir: is it a standard? None: neither.

    Inside a config dir only its standards pass. A standards folder that is a symlink (to a dotfiles
    checkout, say) passes where it points, except for what lies inside a config dir.
    """
    if is_secret(real):
        return False
    configs = user_config_dirs(env)
    for config in configs:
        if is_under(real, config):
            return real != config and _standard_entry(os.path.relpath(real, config))
    for config in configs:
        for place in _standard_places(config):
            target = os.path.realpath(place)
            if target != place and is_under(real, target):  # reached through a link
                return GIT_DIR not in os.path.relpath(real, target).split(os.sep)
    return None


def is_standard(real: str, env: t.Mapping[str, str]) -> bool:
    """Is the real path *real* one of the standards of a Claude config dir?"""
    return standards_verdict(real, env) is True


def project_dirs(cwd: str, env: t.Mapping[str, str]) -> list[str]:
    """The project (by *cwd* and ``$CLAUDE_PROJECT_DIR``), symlink-resolved."""
    projects = {str(project_root(cwd))}
    project_dir = env.get(PROJECT_DIR_ENV, "").strip()
    if project_dir and os.path.isabs(project_dir):
        projects.add(project_dir)
    return [os.path.realpath(p) for p in sorted(projects)]


def project_standard(real: str, project: str) -> bool:
    """Is *real* in *project*'s ``.claude/`` (wherever it links to) or in one of its ``.directives/``
    folders (no ``.git`` in the way)? An agent worktree in ``.claude/worktrees/`` is a checkout, not
    standards: only its own ``.claude/`` and ``.directives/`` are (it is a project of its own)."""
    claude_dir = os.path.realpath(os.path.join(project, ".claude"))
    if is_under(real, os.path.join(claude_dir, "worktrees")):
        return False
    if is_under(real, claude_dir):
        return True
    if not is_under(real, project):
        return False
    parts = os.path.relpath(real, project).split(os.sep)
    return DIRECTIVES in parts[:-1] and GIT_DIR not in parts


def read_allowed(file_path: object, *, cwd: str, sessions_root: str, env: t.Mapping[str, str]) -> bool:
    """True when reading *file_path* is loading standards or session material."""
    home = env.get("HOME") or os.path.expanduser("~")
    real = resolve(file_path, cwd, home)
    if real is None or is_secret(real) or _hard_linked(real):
        return False
    if os.path.basename(real) in STANDARD_FILE_NAMES:
        return True
    # decisive in a config dir, even when it is the project's .claude or a sessions root linked into one
    verdict = standards_verdict(real, env)
    if verdict is not None:
        return verdict
    if _sessions_material(real, os.path.realpath(sessions_root), home):
        return True
    return any(project_standard(real, project) for project in project_dirs(cwd, env))


def _sessions_material(real: str, sessions: str, home: str) -> bool:
    """Is *real* in the sessions root, and is that root a sessions folder? One that holds the home
    directory (``sessions`` linked to ``~`` or ``/``) would lend every dotfile its trust: it lends none."""
    return is_under(real, sessions) and not is_under(os.path.realpath(home), sessions)


def readable_template(template: object, cwd: str, env: t.Mapping[str, str]) -> str | None:
    """The real path of a session's declared log template when reading it is safe, else None.

    The heartbeat tells a blocked agent to read its template, so that one file is let through
    uncounted. The agent declared it, so it could name anything: only an existing template file
    (``TEMPLATE_*.md``, as the bash era let through) passes — never a credential, nothing in a
    ``.git`` folder, nothing in a Claude config dir but its standards (not ``settings.json``, history,
    transcripts) — judged with every symlink resolved, so a link cannot lend a template's name to
    another file.
    """
    if not isinstance(template, str):
        return None
    home = env.get("HOME") or os.path.expanduser("~")
    real = resolve(template.strip(), cwd, home)
    if real is None or is_secret(real) or GIT_DIR in real.split(os.sep):
        return None
    name = os.path.basename(real)
    if not (name.startswith(TEMPLATE_PREFIX) and name.endswith(".md")):
        return None
    if standards_verdict(real, env) is False or not os.path.isfile(real) or _hard_linked(real):
        return None
    return real


def _hard_linked(real: str) -> bool:
    """Is *real* a file with another name too? A hard link lends an allowed name to any file of the
    same filesystem (a credential among them), and no path check can see it."""
    try:
        info = os.stat(real)
    except OSError:
        return False
    return not stat.S_ISDIR(info.st_mode) and info.st_nlink > 1
