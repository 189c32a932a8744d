"""The fleets started on this machine, known by their names until they are forgotten.

Every message calls a fleet by its name (``fleet start agents-2x2`` respawns
them), so the name must keep working once the fleet is stopped, wherever its
layout file lies. ``fleet start`` records each fleet it builds — its name,
socket, layout file, hosts and agent count — under
``$XDG_STATE_HOME/claude-shepherd/fleets/`` (named by this machine, like the
span records, so a home shared with another host does not confuse them);
``fleet ls`` lists them, a bare LAYOUT name that no layout file answers to is
looked up here, and ``fleet forget`` removes one. A host's own part of a fleet
across hosts (``LAYOUT -``) is not recorded there: the fleet that sent it is.
"""

from __future__ import annotations

import json
import os
import typing as t
from dataclasses import dataclass
from pathlib import Path

from claude_shepherd.fleet.hosts import LOCAL
from claude_shepherd.fleet.hosts.part import this_machine
from claude_shepherd.fleet.layout import Layout
from claude_shepherd.supervisor.session.private_dir import private_dir
from claude_shepherd.supervisor.session.roots import registry_dir
from claude_shepherd.supervisor.session.store import write_atomic

MAX_RECORD = 64 * 1024
"""Bytes of one record read at most (ours are a few hundred)."""


@dataclass(frozen=True)
class Known:
    """A fleet started here: what ``fleet ls`` shows and a bare name resolves to."""

    name: str
    socket: str
    layout: Path
    hosts: tuple[str, ...]
    agents: int

    def as_json(self) -> dict[str, t.Any]:
        return {"name": self.name, "socket": self.socket, "layout": str(self.layout), "hosts": list(self.hosts),
                "agents": self.agents}  # fmt: skip


def known_dir(env: t.Mapping[str, str] | None = None) -> Path:
    return Path(registry_dir(os.environ if env is None else env)) / "fleets"


def _path(socket: str, name: str) -> Path:
    return known_dir() / f"{this_machine()}.{socket}.{name}.json"


def remember(layout: Layout) -> None:
    """Record that *layout*'s fleet was started here (again: its record is replaced)."""
    path = _path(layout.socket_name, layout.name)
    private_dir(path.parent, within=registry_dir(os.environ))
    hosts = [host or LOCAL for host in layout.hosts] if layout.spans_hosts else [LOCAL]
    record = Known(layout.name, layout.socket_name, Path(layout.source), tuple(hosts), layout.pane_count)
    write_atomic(path, json.dumps(record.as_json()))  # another fleet start may be reading it


def forget(known: Known) -> None:
    _path(known.socket, known.name).unlink(missing_ok=True)


def _read(path: Path) -> Known | None:
    try:
        with path.open("rb") as handle:
            data = json.loads(handle.read(MAX_RECORD))
        hosts = data["hosts"]
        known = Known(str(data["name"]), str(data["socket"]), Path(str(data["layout"])),
                      tuple(str(h) for h in hosts), int(data["agents"]))  # fmt: skip
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
