"""Which fleet a command acts on: a layout's session, or every session of a fleet socket.

``fleet start`` needs a layout. ``stop``, ``status`` and ``doctor`` do not:
with a LAYOUT they act on its session; inside a fleet pane, on that pane's
server; else on the default layout when there is one, else on every session
of the socket (``fleet``, or ``--socket``). So ``fleet stop`` works even
when the layout file has moved.
"""

from __future__ import annotations

import os
import typing as t
from dataclasses import dataclass
from pathlib import Path

from claude_shepherd.fleet.layout import Layout, LayoutError, load_layout
from claude_shepherd.fleet.lookup import find_layout
from claude_shepherd.fleet.tmux import FleetServer, is_fleet_socket
from claude_shepherd.supervisor.errors import NotRunningError, ShepherdError  # exit 3, as an LSB init script's status says
from claude_shepherd.supervisor.session.identity import FLEET_SOCKET, fleet_socket


@dataclass(frozen=True)
class Target:
    socket: str
    layout: Layout | None = None

    @property
    def session(self) -> str | None:
        """The one tmux session meant, or None for all sessions of the socket."""
        return self.layout.name if self.layout else None

    def server(self) -> FleetServer:
        layout = self.layout
        return FleetServer(
            self.socket,
            config_file=str(layout.config_file) if layout and layout.config_file else None,
            tmux_bin=layout.tmux_bin if layout else None,
            colors=layout.colors if layout else None,
        )

    def running_sessions(self, server: FleetServer) -> list[str]:
        """The sessions to act on; :class:`NotRunningError` when there are none."""
        names = server.session_names()
        wanted = [self.session] if self.session else names
        found = [name for name in wanted if name in names]
        if not found:
            what = f"fleet {self.session!r} is not" if self.session else "no fleet is"
            raise NotRunningError(f"{what} running on socket {self.socket}")
        return found


def _check_socket(name: str) -> str:
    if not is_fleet_socket(name):
        raise ShepherdError(f"socket {name!r} is not a fleet socket; use {FLEET_SOCKET} or {FLEET_SOCKET}-NAME")
    return name


def load(layout_arg: str | None, socket: str | None = None) -> Layout:
    """The layout for *layout_arg*, with ``--socket`` applied."""
    layout = load_layout(find_layout(layout_arg))
    return layout.with_socket(_check_socket(socket)) if socket else layout


def resolve(layout_arg: str | None, socket: str | None, env: t.Mapping[str, str] | None = None) -> Target:
    """The target of ``stop``/``status``/``doctor`` (see the module docstring)."""
    env = os.environ if env is None else env
    if layout_arg:
        layout = load(layout_arg, socket)
        return Target(layout.socket_name, layout)
    if socket:
        return Target(_check_socket(socket))
    inside = fleet_socket(env)
    if inside:
        return Target(Path(inside).name)
    try:
        layout = load(None)
    except LayoutError:
        return Target(FLEET_SOCKET)
    return Target(layout.socket_name, layout)
