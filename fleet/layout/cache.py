"""A layout file's checked :class:`~.model.Layout`, kept beside the text it came from.

``fleet status`` runs in loops (a status bar, a script, ``watch``), and
checking a layout key by key costs PyYAML and pydantic, about three times
the rest of the verb. The parse is a function of the file's text, the working
directory (relative roots and config files) and the home directory (``~``),
so its result is kept with all three and used again only while they are the
same, and while the model has the shape it was written with and the parser is
the same code: any other entry is parsed afresh. The config file the layout names must still exist (the
parse refuses one that does not).

One entry per layout file and working directory, in the fleet's private state
folder (``$XDG_STATE_HOME/claude-shepherd/parsed/``, 0700, refused to the file
tools as all of that folder is), at most :data:`MAX_ENTRIES` of them. An
entry that cannot be read or written costs only the time of a parse.
"""

from __future__ import annotations

import dataclasses
import json
import os
import typing as t
import zlib
from pathlib import Path

from claude_shepherd.fleet.layout.model import Budget, Layout, PaneSpec, WindowSpec
from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.session.private_dir import private_dir
from claude_shepherd.supervisor.session.roots import registry_dir
from claude_shepherd.supervisor.session.store import write_atomic

MAX_ENTRIES = 64
MAX_ENTRY = 4 * 1024 * 1024
"""Bytes of one entry read at most (a layout of a thousand panes is a few hundred KiB)."""
SHAPE = ";".join(
    f"{model.__name__}:{','.join(field.name for field in dataclasses.fields(model))}"
    for model in (Layout, WindowSpec, PaneSpec, Budget)
)
"""The models' fields: an entry written by other code (another version) is not read back."""


def cached(path: Path, text: str, cwd: Path) -> Layout | None:
    """The layout parsed from *text* (read from *path*) in *cwd*, when it was kept; else None."""
    try:
        folder = _folder()
        with (folder / _name(path, cwd)).open("rb") as handle:
            entry = json.loads(handle.read(MAX_ENTRY))
        if entry.get("key") != _key(path, text, cwd):
            return None
        layout = _layout(entry["layout"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError, ShepherdError):
        return None
    if layout.config_file is not None and not layout.config_file.is_file():
        return None
    return layout


def keep(path: Path, text: str, cwd: Path, layout: Layout) -> None:
    """Keep *layout*, parsed from *text* (read from *path*) in *cwd*, for :func:`cached`."""
    entry = {"key": _key(path, text, cwd), "layout": dataclasses.asdict(layout)}
    try:
        folder = _folder()
        write_atomic(folder / _name(path, cwd), json.dumps(entry, default=str))
        entries = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime)
        for old in entries[:-MAX_ENTRIES]:
            old.unlink(missing_ok=True)
    except (OSError, ShepherdError):
        pass


def _folder() -> Path:
    top = registry_dir(os.environ)
    return Path(private_dir(os.path.join(top, "parsed"), within=top))


def _name(path: Path, cwd: Path) -> str:
    """One entry per layout file and working directory (the key inside tells a rare collision)."""
    checksum = zlib.crc32(os.fsencode(str(path)) + b"\0" + os.fsencode(str(cwd)))
    return f"{checksum:08x}.json"


def _key(path: Path, text: str, cwd: Path) -> list[str]:
    return [SHAPE, _parser(), str(path), str(cwd), os.environ.get("HOME", ""), text]


def _parser() -> str:
    """The parser's own files, by size and modification time: what another version of it checked (it may
    have let through what this one refuses) is parsed afresh."""
    here = os.path.dirname(os.path.abspath(__file__))
    marks = []
    for name in ("model.py", "values.py", "file.py", "build.py"):
        try:
            found = os.stat(os.path.join(here, name))
        except OSError:
            return "?"
        marks.append(f"{found.st_size}:{found.st_mtime_ns}")
    return ",".join(marks)


# --------------------------------------------------------------------------- the models from JSON


def _budget(value: t.Any) -> Budget | None:
    return None if value is None else Budget(usd=float(value["usd"]), per=str(value["per"]))


def _pane(value: dict[str, t.Any]) -> PaneSpec:
    return PaneSpec(**{**value, "commands": tuple(value["commands"]), "budget": _budget(value["budget"])})


def _window(value: dict[str, t.Any]) -> WindowSpec:
    return WindowSpec(
        **{
            **value,
            "root": Path(value["root"]),
            "pre": tuple(value["pre"]),
            "panes": tuple(map(_pane, value["panes"])),
            "budget": _budget(value["budget"]),
        }
    )


def _layout(value: dict[str, t.Any]) -> Layout:
    config, notify = value["config_file"], value["notify_command"]
    return Layout(
        **{
            **value,
            "source": Path(value["source"]),
            "root": Path(value["root"]),
            "base": None if value["base"] is None else Path(value["base"]),
            "config_file": None if config is None else Path(config),
            "on_project_start": tuple(value["on_project_start"]),
            "pre_window": tuple(value["pre_window"]),
            "windows": tuple(map(_window, value["windows"])),
            "notify_command": None if notify is None else tuple(notify),
            "notify_on": tuple(value["notify_on"]),
            "budget": _budget(value["budget"]),
        }
    )
