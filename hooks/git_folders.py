"""Where git keeps what it runs: the folders ``.git`` files point to, the files its configuration includes.

A ``.git`` file (``gitdir: PATH``) or link may name a folder anywhere, and a configuration may include
any file: each is code git runs at its next command, as the person. :mod:`.protected_paths` keeps the
file tools from writing them, so they are found here, read within bounds.
Standard library only: the PreToolUse hook runs it on every write of a file tool.
"""

from __future__ import annotations

import os
import stat

from claude_shepherd.supervisor.session.paths import git_pointer

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

DOT_GIT = ".git"
"""Any file or folder of this name: a ``.git`` folder holds the configuration and hooks git runs, and a
``.git`` file (``gitdir: PATH``) tells git which folder's configuration to trust. Everything below
one is git's: a submodule's ``.git/modules/NAME/`` and a worktree's ``.git/worktrees/NAME/`` too."""
CONFIG_LIMIT = 64 * 1024
"""Bytes of a git configuration file read for the files it includes."""


def git_files(
    starts: t.Iterable[str], projects: t.Iterable[str], home: str, xdg: t.Iterable[str]
) -> tuple[list[str], list[str]]:
    """``(folders, included)``: the git folders that ``.git`` files and links point to, wherever they lie
    (``--separate-git-dir``, a worktree's admin folder, a submodule's, a ``.git`` that is a link), with the
    ``commondir`` each names: everything in them is git's configuration, hooks and objects, whatever the
    folder is called. And every file the configuration of those repositories, the person's and the
    system's includes (``include.path``, ``includeIf``): configuration too. The ``.git`` entries looked at
    are those of every folder above *starts* and of every agent worktree of *projects*."""
    files: set[str] = set()
    for start in starts:
        folder = start
        while True:
            files.add(os.path.join(folder, DOT_GIT))
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            folder = parent
    for project in projects:
        try:
            names = os.listdir(os.path.join(project, ".claude", "worktrees"))
        except OSError:
            continue
        files.update(os.path.join(project, ".claude", "worktrees", name, DOT_GIT) for name in names[:256])
    found: list[str] = []
    configs = {
        "/etc/gitconfig",
        os.path.join(home, ".gitconfig"),
        *(os.path.join(c, "git", "config") for c in xdg),
    }
    for file in files:
        if os.path.islink(file):
            pointed: str | None = file
        elif os.path.isdir(file):
            configs.update(os.path.join(file, name) for name in ("config", "config.worktree"))
            continue
        else:
            pointed = git_pointer(file, "gitdir: ")
        if pointed is None:
            continue
        folder = os.path.realpath(pointed)
        found.append(folder)
        configs.update(os.path.join(folder, name) for name in ("config", "config.worktree"))
        common = git_pointer(os.path.join(folder, "commondir"))
        if common is not None:
            found.append(os.path.realpath(common))
            configs.add(os.path.join(os.path.realpath(common), "config"))
    return found, [path for config in sorted(configs) for path in _includes(config, home)]


def _includes(config: str, home: str, depth: int = 0) -> list[str]:
    """The files *config* includes (``path`` in an ``[include]`` or ``[includeIf …]`` section), and
    theirs, a few levels deep; read within bounds, never from a FIFO. Parsed as git parses it: a key
    on the section's line, comments after ``;`` or ``#`` outside quotes, quotes, a ``\\`` at a line's
    end continuing it."""
    try:
        fd = os.open(config, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return []
    try:
        text = (
            os.read(fd, CONFIG_LIMIT).decode("utf-8", "replace") if stat.S_ISREG(os.fstat(fd).st_mode) else ""
        )
    except OSError:
        text = ""
    finally:
        os.close(fd)
    found: list[str] = []
    section = ""
    for line in text.replace("\\\r\n", "").replace("\\\n", "").splitlines():
        line = line.strip()
        if line.startswith("["):
            head, _, line = line[1:].partition("]")
            section = head.strip().split(None, 1)[0].lower() if head.strip() else ""
            line = line.strip()
        key, eq, raw = line.partition("=")
        if not eq or key.strip().lower() != "path" or section not in ("include", "includeif"):
            continue
        value, quoted = [], False
        for char in raw.strip():
            if char == '"':
                quoted = not quoted
            elif char in ";#" and not quoted:
                break
            else:
                value.append(char)
        path = "".join(value).strip()
        if path.startswith("~/"):
            path = home + path[1:]
        if not path:
            continue
        path = os.path.join(os.path.dirname(config), path)
        found.append(path)
        if depth < 3:
            found += _includes(path, home, depth + 1)
    return found[:64]
