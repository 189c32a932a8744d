"""The live fleets of this user: every tmux server on a ``fleet``/``fleet-*`` socket, and its panes.

``fleet doctor`` looks for orphans across all of them and ``fleet watch``
shows them all; both find them the same way: the socket directory tmux uses
(``$TMUX_TMPDIR/tmux-UID``), one ``display-message`` and one ``list-panes``
per server, each with a short deadline so one wedged server costs only itself.
"""

from __future__ import annotations

import os
import typing as t
from dataclasses import dataclass, field
from pathlib import Path

from claude_shepherd.fleet.tmux import FleetServer, PaneInfo, TmuxError, list_panes
from claude_shepherd.supervisor.session.private_dir import private_dir
from claude_shepherd.supervisor.tmux_names import is_fleet_socket

SERVER_TIMEOUT = 2.0
LOOK_DEADLINE = SERVER_TIMEOUT + 1.0
"""How long one look at every server may take, however many sockets there are."""
MAX_ASKING = 32
"""Servers asked at the same time (each is one tmux client process)."""


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


def own_socket_dir() -> Path:
    """:func:`socket_dir`, made as tmux makes it (0700) and refused as tmux refuses it when it is not
    this user's own private folder: before the fleet keeps a lock or an SSH connection in it."""
    folder = socket_dir()
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        pass  # private_dir says why the folder cannot be made
    return Path(private_dir(folder, hint="or set TMUX_TMPDIR to a folder of your own"))


def live_fleets(extra: t.Iterable[FleetServer] = ()) -> Fleet:
    """Every fleet server of this user that answers (sockets ``fleet``/``fleet-*``)."""
    from concurrent.futures import ThreadPoolExecutor, wait  # off `fleet status`'s path (docs/HOT_CORE.md)

    fleet = Fleet()
    names: list[str] = []
    try:
        names = sorted(entry.name for entry in socket_dir().iterdir() if is_fleet_socket(entry.name))
    except OSError:
        pass
    extra = list(extra)
    servers = {s.socket_name: s for s in extra}
    for name in names:
        if name not in servers:
            try:
                servers[name] = FleetServer(name, timeout=SERVER_TIMEOUT)
            except TmuxError:
                continue
    # All servers at once, within one deadline: silent sockets (any process can listen on one in this
    # directory) cost it once, and the sockets a tmux server really listens on are asked first.
    served = _served_sockets() if len(servers) > MAX_ASKING else set()  # order matters only past one round
    mine = {s.socket_name for s in extra}  # the caller's own fleet: asked first of all
    ordered = sorted(servers.values(), key=lambda s: (s.socket_name not in mine,
                                                      os.path.realpath(socket_dir() / s.socket_name) not in served,
                                                      s.socket_name))  # fmt: skip
    pool = ThreadPoolExecutor(max_workers=max(1, min(MAX_ASKING, len(ordered))))
    asked = [(server, pool.submit(_ask, server)) for server in ordered]
    wait([future for _, future in asked], timeout=LOOK_DEADLINE)
    pool.shutdown(wait=False, cancel_futures=True)  # what is still asking ends at its own timeout
    for server, future in asked:
        answer = future.result() if future.done() and not future.cancelled() else None
        if answer is None:
            # A wedged or slow server is not a dead one: its panes are unknown, not gone.
            fleet.unanswered.add(os.path.realpath(socket_dir() / server.socket_name))
            continue
        path, panes = answer
        if path:
            fleet.servers[path] = server
            fleet.panes[path] = panes
    return fleet


def _served_sockets() -> set[str]:
    """The socket paths this user's tmux servers listen on (empty when that cannot be read)."""
    import psutil  # only past MAX_ASKING servers: `fleet attach` finds its fleet without it (docs/HOT_CORE.md)

    paths: set[str] = set()
    for proc in psutil.process_iter(["name", "uids"]):
        try:
            if proc.info["name"] == "tmux: server" and proc.info["uids"].real == os.getuid():
                paths |= {os.path.realpath(c.laddr) for c in proc.net_connections(kind="unix") if c.laddr}
        except (psutil.Error, OSError, AttributeError):
            continue
    return paths


def _ask(server: FleetServer) -> tuple[str | None, list[PaneInfo]] | None:
    """The server's socket path and panes, or None when it does not answer in time."""
    try:
        path = server.socket_file()
        return path, list_panes(server) if path else []
    except TmuxError:
        return None


def fleet_sockets(mine: str) -> list[str]:
    """*mine* and every fleet socket with a server, in one order (two callers locking several never
    wait on each other in a circle)."""
    return sorted({mine, *(server.socket_name for server in live_fleets().servers.values())})
