"""The fleets started on this machine, known by their names until they are forgotten.

Every message calls a fleet by its name (``fleet start agents-2x2`` respawns
them), so the name must keep working once the fleet is stopped, wherever its
layout file lies. ``fleet start`` records each fleet it builds — its name,
socket, layout file, hosts and agent count — under
``$XDG_STATE_HOME/claude-shepherd/fleets/`` (named by this machine, like the
span records, so a home shared with another host does not confuse them);
``fleet ls`` lists them, ``fleet start --all`` starts those meant to run (:attr:`Known.wanted`: a record
written before it was kept is not), a bare LAYOUT name that no layout file answers to is
looked up here, and ``fleet forget`` removes one. A host's own part of a fleet
across hosts (``LAYOUT -``) is not recorded there: the fleet that sent it is.

A relative ``root:`` (or none) is relative to the folder the fleet first started
in, as tmuxinator reads it from the folder it runs in; the record keeps that
folder, and every later verb reads the same layout file from it
(:func:`where_it_ran`): a fleet started again from another folder does not move
there, its agents keep their conversations and Claude's trust of their folder.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import typing as t
from dataclasses import dataclass
from pathlib import Path

from claude_shepherd.fleet.hosts import LOCAL
from claude_shepherd.fleet.hosts.part import this_machine
from claude_shepherd.fleet.layout import Layout, load_layout
from claude_shepherd.supervisor.session.private_dir import private_dir
from claude_shepherd.supervisor.session.roots import registry_dir
from claude_shepherd.supervisor.session.store import write_atomic

MAX_RECORD = 64 * 1024
"""Bytes of one record read at most (ours are a few hundred)."""
MAX_LAYOUT = 4 * 1024 * 1024
"""Bytes of a layout file hashed at most."""


@dataclass(frozen=True)
class Known:
    """A fleet started here: what ``fleet ls`` shows and a bare name resolves to."""

    name: str
    socket: str
    layout: Path
    hosts: tuple[str, ...]
    agents: int
    folder: Path | None = None
    """Where it first started: what its layout's relative roots are relative to (None: not recorded)."""
    digest: str = ""
    """The layout file's SHA-256 when the fleet last started: ``start --all`` (no person watching)
    refuses a layout an agent may have changed since ("": not recorded)."""
    wanted: bool = False
    """Meant to run: set by each start, cleared only by a person's ``fleet stop`` (a crash, a kill or a
    power loss keeps it), so ``fleet start --all`` brings back what ran and nothing a person stopped."""

    def as_json(self) -> dict[str, object]:
        return {"name": self.name, "socket": self.socket, "layout": str(self.layout), "hosts": list(self.hosts),
                "agents": self.agents, "folder": None if self.folder is None else str(self.folder),
                "wanted": self.wanted, "digest": self.digest}  # fmt: skip


def known_dir(env: t.Mapping[str, str] | None = None) -> Path:
    return Path(registry_dir(os.environ if env is None else env)) / "fleets"


def _path(socket: str, name: str) -> Path:
    return known_dir() / f"{this_machine()}.{socket}.{name}.json"


def digest_of(path: Path) -> str:
    """The SHA-256 of the file at *path* ("" when it cannot be read)."""
    try:
        with path.open("rb") as handle:
            return hashlib.sha256(handle.read(MAX_LAYOUT)).hexdigest()
    except OSError:
        return ""


def remember(layout: Layout) -> None:
    """Record that *layout*'s fleet was started here (again: its record is replaced)."""
    path = _path(layout.socket_name, layout.name)
    private_dir(path.parent, within=registry_dir(os.environ))
    hosts = [host or LOCAL for host in layout.hosts] if layout.spans_hosts else [LOCAL]
    record = Known(layout.name, layout.socket_name, Path(layout.source), tuple(hosts), layout.pane_count,
                   layout.base, layout.digest or digest_of(Path(layout.source)), wanted=True)  # fmt: skip
    write_atomic(path, json.dumps(record.as_json()))  # another fleet start may be reading it


def mark(socket: str, name: str, *, wanted: bool) -> bool:
    """Record whether the fleet *name* on *socket* is meant to run: a person's ``fleet stop`` clears it
    (``fleet start --all`` leaves the fleet stopped), ``fleet drain`` keeps it. True when it changed."""
    known = record(socket, name)
    if known is None or known.wanted == wanted:
        return False
    write_atomic(_path(socket, name), json.dumps(dataclasses.replace(known, wanted=wanted).as_json()))
    return True


def forget(known: Known) -> None:
    _path(known.socket, known.name).unlink(missing_ok=True)


def _read(path: Path) -> Known | None:
    try:
        with path.open("rb") as handle:
            data = json.loads(handle.read(MAX_RECORD))
        hosts, folder = data["hosts"], data.get("folder")
        known = Known(str(data["name"]), str(data["socket"]), Path(str(data["layout"])),
                      tuple(str(h) for h in hosts), int(data["agents"]),
                      Path(folder) if isinstance(folder, str) and os.path.isabs(folder) else None,
                      str(data.get("digest") or ""), wanted=data.get("wanted") is True)  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return known if path.name == f"{this_machine()}.{known.socket}.{known.name}.json" else None


def every() -> list[Known]:
    """Every fleet recorded here, by name then socket (an unreadable record costs only itself)."""
    try:
        paths = sorted(known_dir().glob(f"{this_machine()}.*.json"))
    except OSError:
        return []
    found = [known for path in paths if (known := _read(path)) is not None]
    return sorted(found, key=lambda k: (k.name, k.socket))


def named(name: str, socket: str | None = None) -> list[Known]:
    """The fleets recorded here under *name* (of *socket* only, if given)."""
    return [k for k in every() if k.name == name and (socket is None or k.socket == socket)]


def record(socket: str, name: str) -> Known | None:
    """The record of the fleet *name* on *socket*, if it was started here."""
    return _read(_path(socket, name))


def is_wanted(socket: str, name: str) -> bool:
    """Is the fleet *name* on *socket* recorded here as meant to run (:attr:`Known.wanted`)?"""
    known = record(socket, name)
    return known is not None and known.wanted


def where_it_ran(layout: Layout) -> Layout:
    """*layout* as its fleet runs it: read from the folder the fleet first started in when it was started
    here from this same file (its relative roots are from there, whatever folder the verb runs in); else
    as it is."""
    started = record(layout.socket_name, layout.name)
    if started is None or started.folder is None or started.folder == layout.base:
        return layout
    if not _same_file(started.layout, layout.source):
        return layout  # another file of the same name: another fleet, read from where the person is
    folder = started.folder
    again = load_layout(Path(layout.source), cwd=folder)
    return again if again.socket_name == layout.socket_name else again.with_socket(layout.socket_name)


def _same_file(one: Path, other: Path) -> bool:
    try:
        return os.path.samefile(one, other)
    except OSError:
        return False
