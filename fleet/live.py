"""The live fleets of this user: every tmux server on a ``fleet``/``fleet-*`` socket, and its panes.

``fleet doctor`` looks for orphans across all of them and ``fleet watch``
shows them all; both find them the same way: the socket directory tmux uses
(``$TMUX_TMPDIR/tmux-UID``), one ``display-message`` and one ``list-panes``
per server, each with a short deadline so one wedged server costs only itself.
"""

from __future__ import annotations

import os
import typing as t
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from claude_shepherd.fleet.tmux import FleetServer, PaneInfo, TmuxError, is_fleet_socket, list_panes

SERVER_TIMEOUT = 2.0


@dataclass
class Fleet:
    """The live fleets: every fleet socket with a server, and its panes."""

    servers: dict[str, FleetServer] = field(default_factory=dict)  # socket path -> server
    panes: dict[str, list[PaneInfo]] = field(default_factory=dict)  # socket path -> panes
    unanswered: set[str] = field(default_factory=set)  # socket paths whose server did not answer

    def sessions(self) -> set[str]:
        return {p.session for panes in self.panes.values() for p in panes}

    def identities(self) -> set[str]:
        return {p.identity for panes in self.panes.values() for p in panes if p.identity}

    def pane_keys(self) -> set[tuple[str, str]]:
        return {(socket, p.pane_id) for socket, panes in self.panes.items() for p in panes}


def socket_dir() -> Path:
    base = os.environ.get("TMUX_TMPDIR") or "/tmp"
    return Path(base) / f"tmux-{os.getuid()}"


def live_fleets(extra: t.Iterable[FleetServer] = ()) -> Fleet:
    """Every fleet server of this user that answers (sockets ``fleet``/``fleet-*``)."""
    fleet = Fleet()
    names: list[str] = []
    try:
        names = sorted(entry.name for entry in socket_dir().iterdir() if is_fleet_socket(entry.name))
    except OSError:
        pass
    servers = {s.socket_name: s for s in extra}
    for name in names:
        if name not in servers:
            try:
                servers[name] = FleetServer(name, timeout=SERVER_TIMEOUT)
            except TmuxError:
                continue
    # All servers at once: a wedged one costs its deadline once, not once per server after it.
    with ThreadPoolExecutor(max_workers=min(8, len(servers) or 1)) as pool:
        answers = list(zip(servers.values(), pool.map(_ask, servers.values())))
    for server, answer in answers:
        if answer is None:
            # A wedged or slow server is not a dead one: its panes are unknown, not gone.
            fleet.unanswered.add(os.path.realpath(socket_dir() / server.socket_name))
            continue
        path, panes = answer
        if path:
            fleet.servers[path] = server
            fleet.panes[path] = panes
    return fleet


def _ask(server: FleetServer) -> tuple[str | None, list[PaneInfo]] | None:
    """The server's socket path and panes, or None when it does not answer in time."""
    try:
        path = server.socket_file()
        return path, list_panes(server) if path else []
    except TmuxError:
        return None
