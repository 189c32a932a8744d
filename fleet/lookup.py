"""Which layout file a ``LAYOUT`` argument names.

A path (anything with a ``/`` or a ``.yml``/``.yaml`` suffix) is taken as is.
A bare name is looked up in the person's own folders first,
``$XDG_CONFIG_HOME/tmuxinator/`` (``~/.config``) then ``~/.tmuxinator/``, and
only then in the project's ``./tmuxinator/`` — the one an agent working in
the project is nearest to. A name found both in a folder of the person's and
in ``./tmuxinator/`` is refused: which of two layouts runs with the person's
power is theirs to say, by path. Without an argument the name is
``$FLEET_LAYOUT``, else ``fleet``.
"""

from __future__ import annotations

import os
import typing as t
from pathlib import Path

from claude_shepherd.fleet.layout import LayoutError
from claude_shepherd.supervisor.env import FLEET_LAYOUT_ENV as LAYOUT_ENV

DEFAULT_LAYOUT = "fleet"


class LayoutNotFoundError(LayoutError):
    """No layout file by that name or path."""


SUFFIXES = (".yml", ".yaml")


def search_dirs(cwd: Path | None = None, env: t.Mapping[str, str] | None = None) -> list[Path]:
    """Where bare layout names are looked up, in order: the person's own folders, then the project's."""
    env = os.environ if env is None else env
    cwd = Path.cwd() if cwd is None else cwd
    home = Path(env.get("HOME") or Path.home())
    xdg = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else home / ".config"
    return [xdg / "tmuxinator", home / ".tmuxinator", cwd / "tmuxinator"]


def available(cwd: Path | None = None, env: t.Mapping[str, str] | None = None) -> list[str]:
    """Names of every layout in the search directories (first one wins)."""
    names: list[str] = []
    for directory in search_dirs(cwd, env):
        try:
            entries = sorted(directory.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.suffix in SUFFIXES and entry.is_file() and entry.stem not in names:
                names.append(entry.stem)
    return names


def is_path(arg: str) -> bool:
    return "/" in arg or arg.endswith(SUFFIXES)


def find_layout(arg: str | None, cwd: Path | None = None, env: t.Mapping[str, str] | None = None) -> Path:
    """The layout file for *arg* (a path or a name), or :class:`LayoutError` saying where we looked."""
    env = os.environ if env is None else env
    cwd = Path.cwd() if cwd is None else cwd
    name = arg if arg else (env.get(LAYOUT_ENV, "").strip() or DEFAULT_LAYOUT)
    if is_path(name):
        path = Path(name).expanduser()
        path = path if path.is_absolute() else cwd / path
        if not path.is_file():
            raise LayoutNotFoundError(f"{name}: no such layout file")
        return path
    found = [
        directory / f"{name}{suffix}"
        for directory in search_dirs(cwd, env)
        for suffix in SUFFIXES
        if (directory / f"{name}{suffix}").is_file()
    ]
    project = cwd / "tmuxinator"
    own = [path for path in found if path.parent != project]
    if own and len(own) < len(found):
        theirs = next(path for path in found if path.parent == project)
        raise LayoutError(
            f"layout {name!r} is both {_tilde(own[0], cwd, env)} and {_tilde(theirs, cwd, env)}; "
            f"name the file you mean (fleet start {_tilde(own[0], cwd, env)})"
        )
    if found:
        return found[0]
    where = ", ".join(_tilde(d, cwd, env) for d in search_dirs(cwd, env))
    known = available(cwd, env)
    hint = (
        f"; available: {', '.join(known)}"
        if known
        else "; see tmuxinator/ in the claude-shepherd repository for examples"
    )
    raise LayoutNotFoundError(f"no layout named {name!r} in {where}{hint}")


def _tilde(path: Path, cwd: Path, env: t.Mapping[str, str]) -> str:
    """*path* as a person would type it: ``~/...`` or ``./...`` where it can be."""
    home = env.get("HOME") or str(Path.home())
    text = str(path)
    if text.startswith(home + os.sep):
        return "~" + text[len(home) :]
    if text.startswith(str(cwd) + os.sep):
        return "./" + text[len(str(cwd)) + 1 :]
    return text
