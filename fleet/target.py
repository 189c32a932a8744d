"""Which fleet a command acts on: LAYOUT everywhere, or nowhere when one fleet runs.

``fleet start`` needs a layout. The other verbs act on:

- LAYOUT's fleet, when given (a layout file or name, or the session name of a
  running fleet, as ``fleet status`` lists it);
- else ``--socket``'s sessions, or, inside a fleet pane, that pane's server;
- else the default layout (``$FLEET_LAYOUT``, else ``fleet``) when there is one;
- else the one fleet that runs, on whichever fleet socket; with several, the
  command lists them and asks for one.

A fleet records the layout file it was built from (session option
``@fleet_layout``), so ``fleet restart`` with no LAYOUT still knows its layout.
"""

from __future__ import annotations

import os
import typing as t
from dataclasses import dataclass
from pathlib import Path

from claude_shepherd.fleet import known
from claude_shepherd.fleet.hosts.part import STDIN, read_document
from claude_shepherd.fleet.layout import Layout, LayoutError, load_layout
from claude_shepherd.fleet.lookup import LayoutNotFoundError, find_layout, is_path
from claude_shepherd.fleet.tmux import FleetServer, PaneInfo, list_panes
from claude_shepherd.supervisor.errors import NotRunningError, ShepherdError, UsageError
from claude_shepherd.supervisor.session.identity import fleet_socket
from claude_shepherd.supervisor.tmux_names import FLEET_SOCKET, LAYOUT_OPTION, is_fleet_socket


@dataclass(frozen=True)
class Target:
    socket: str
    layout: Layout | None = None
    session_name: str | None = None
    """A running fleet's session, when it was named without its layout file."""
    layout_problem: str | None = None
    """Why the layout file the fleet recorded cannot be used, when it cannot."""

    @property
    def session(self) -> str | None:
        """The one tmux session meant, or None for all sessions of the socket."""
        return self.layout.name if self.layout else self.session_name

    def server(self) -> FleetServer:
        layout = self.layout
        return FleetServer(
            self.socket,
            config_file=str(layout.config_file) if layout and layout.config_file else None,
            tmux_bin=layout.tmux_bin if layout else None,
            colors=layout.colors if layout else None,
        )

    def running_sessions(self, server: FleetServer, names: list[str] | None = None) -> list[str]:
        """The sessions to act on (of *names*, the server's sessions when listed already);
        :class:`NotRunningError` when there are none."""
        names = server.session_names() if names is None else names
        wanted = [self.session] if self.session else names
        found = [name for name in wanted if name in names]
        if not found:
            what = f"fleet {self.session!r} is not" if self.session else "no fleet is"
            raise NotRunningError(f"{what} running on socket {self.socket}")  # exit 3, as an LSB status says
        return found

    def require_layout(self, verb: str) -> Layout:
        """The layout *verb* needs (its file may be gone since the fleet was built)."""
        if self.layout is None:
            why = f" ({self.layout_problem})" if self.layout_problem else ""
            raise UsageError(f"fleet {verb} needs the fleet's layout{why}; name it: fleet {verb} LAYOUT")
        return self.layout

    def labelled(self, server: FleetServer, sessions: list[str], labels: t.Sequence[str]) -> list[PaneInfo]:
        """The running fleet's pane for each of *labels*, or a one-line error.

        An agent can relabel its own pane, so a label on two panes is refused,
        naming both: no verb guesses which agent the person means.
        """
        by_label: dict[str, list[PaneInfo]] = {}
        for info in list_panes(server):
            if info.session in sessions and info.label:
                by_label.setdefault(info.label, []).append(info)
        for label in labels:
            holders = by_label.get(label, [])
            if len(holders) > 1:
                raise ShepherdError(
                    f"{len(holders)} panes ({', '.join(p.pane_id for p in holders)}) are labelled {label} in "
                    f"{', '.join(sessions)}; an agent may have relabelled its pane: give the impostor its own "
                    f"label (tmux -L {self.socket} set-option -p -t %N @pane_label NAME), then try again"
                )
        missing = sorted(set(labels) - set(by_label))
        if missing:
            raise ShepherdError(
                f"no pane labelled {', '.join(missing)} in {', '.join(sessions)} (socket {self.socket}); "
                f"labels: {', '.join(sorted(by_label)) or 'none'}"
            )
        return [by_label[label][0] for label in labels]

    def pane_labelled(self, server: FleetServer, sessions: list[str], label: str) -> PaneInfo:
        """The running fleet's pane labelled *label* (see :meth:`labelled`)."""
        return self.labelled(server, sessions, [label])[0]


def _check_socket(name: str) -> str:
    if not is_fleet_socket(name):
        raise ShepherdError(
            f"socket {name!r} is not a fleet socket; use {FLEET_SOCKET} or {FLEET_SOCKET}-NAME"
        )
    return name


def load(layout_arg: str | None, socket: str | None = None) -> Layout:
    """The layout for *layout_arg* (``-``: a host's part on stdin; a bare name no layout file answers
    to: the fleet started here by that name, :mod:`~claude_shepherd.fleet.known`), with ``--socket``
    applied."""
    if layout_arg == STDIN:
        layout = read_document()
        return layout.with_socket(_check_socket(socket)) if socket else layout
    try:
        layout = load_layout(find_layout(layout_arg))
    except LayoutNotFoundError as missing:
        if not layout_arg or is_path(layout_arg):
            raise
        layout = _known_layout(layout_arg, socket, missing)
    return known.where_it_ran(layout.with_socket(_check_socket(socket)) if socket else layout)


def _known_layout(name: str, socket: str | None, missing: LayoutNotFoundError) -> Layout:
    """The layout file of the fleet started here as *name*; the lookup's own error when there is none."""
    found = known.named(name, socket)
    if not found:
        raise LayoutNotFoundError(f"{missing}; `fleet ls` lists the fleets started here") from None
    if len(found) > 1:
        raise UsageError(
            f"fleet {name!r} was started on sockets {', '.join(k.socket for k in found)}; say which: "
            f"--socket {found[0].socket}"
        )
    record = found[0]
    try:
        layout = load_layout(record.layout)
    except LayoutError as exc:  # not found either: a running fleet of that name is still found by it
        raise LayoutNotFoundError(
            f"fleet {name!r} was started from {record.layout}, which no longer loads: {exc}; fix it, or "
            f"`fleet forget {name}`"
        ) from None
    if layout.name != name:
        raise LayoutNotFoundError(
            f"fleet {name!r} was started from {record.layout}, which now names fleet {layout.name!r}; "
            f"name the file, or `fleet forget {name}`"
        )
    return layout if layout.socket_name == record.socket else layout.with_socket(record.socket)


Loaded = Layout | LayoutNotFoundError | None
"""What :func:`load` gave for LAYOUT already (the layout, or why none was found), so that the file is
read and checked once per verb; None: not tried yet."""


def _load_once(layout_arg: str | None, socket: str | None, loaded: Loaded) -> Layout:
    if isinstance(loaded, LayoutNotFoundError):
        raise loaded
    return load(layout_arg, socket) if loaded is None else loaded


def resolve(
    layout_arg: str | None,
    socket: str | None,
    env: t.Mapping[str, str] | None = None,
    loaded: Loaded = None,
) -> Target:
    """The fleet a verb acts on (see the module docstring); *loaded*: ``load(layout_arg, socket)``
    when it was tried already."""
    env = os.environ if env is None else env
    if layout_arg:
        try:
            layout = _load_once(layout_arg, socket, loaded)
        except LayoutNotFoundError:
            named = _running_named(layout_arg, socket)
            if named is None:
                raise
            return named
        if layout.name != layout_arg and not is_path(layout_arg) and layout_arg != STDIN:
            other = _running_named(layout_arg, socket)
            if other is not None and socket is not None:
                return other  # --socket says which: the running fleet named so there
            if other is not None:  # the layout file x names fleet y, and a fleet named x runs: which?
                raise UsageError(
                    f"{layout_arg!r} is both the layout {layout.source} (fleet {layout.name!r}) and the running "
                    f"fleet {layout_arg!r} (socket {other.socket}); name the layout by its path, or the fleet "
                    f"with --socket {other.socket}"
                )
        return Target(layout.socket_name, layout)
    if socket:
        return Target(_check_socket(socket))
    inside = fleet_socket(env)
    if inside:
        return Target(Path(inside).name)
    try:
        layout = _load_once(None, None, loaded)
    except LayoutNotFoundError:
        return the_running_fleet()
    return Target(layout.socket_name, layout)


def resolve_layout(layout_arg: str | None, socket: str | None, verb: str, loaded: Loaded = None) -> Target:
    """The target of a verb that needs a layout (``start``, ``restart``): LAYOUT, else the default
    layout, else the one running fleet's recorded layout."""
    if layout_arg is None:
        try:
            layout = _load_once(None, socket, loaded)
        except LayoutNotFoundError:
            where = the_running_fleet(socket)
            return Target(where.socket, where.require_layout(verb))
        return Target(layout.socket_name, layout)
    where = resolve(layout_arg, socket, loaded=loaded)
    return Target(where.socket, where.require_layout(verb))


def running_fleets(socket: str | None = None) -> list[tuple[str, str, str]]:
    """(socket name, session, recorded layout file) of every running fleet (of *socket* only, if given)."""
    from claude_shepherd.fleet.live import live_fleets

    fleets = live_fleets()
    found: set[tuple[str, str, str]] = set()
    for path, server in fleets.servers.items():
        if socket is not None and server.socket_name != socket:
            continue
        for session in sorted({p.session for p in fleets.panes.get(path, [])}):
            found.add((server.socket_name, session, _recorded_layout(server, session)))
    return sorted(found)


def _recorded_layout(server: FleetServer, session: str) -> str:
    result = server.cmd("show-options", "-v", "-t", f"={session}:", LAYOUT_OPTION)
    return result.stdout[0] if result.returncode == 0 and result.stdout else ""


def _target_of(socket: str, session: str, layout_file: str) -> Target:
    """A running fleet's target, with its layout when the recorded file still loads as that fleet."""
    problem = None
    if layout_file:
        try:
            layout = load_layout(Path(layout_file))
        except (LayoutError, OSError) as exc:
            layout, problem = None, f"its recorded layout {layout_file} does not load: {exc}"
        if layout is not None and layout.name == session:
            layout = layout.with_socket(socket) if layout.socket_name != socket else layout
            return Target(socket, known.where_it_ran(layout))
        if layout is not None:
            problem = f"its recorded layout {layout_file} now names fleet {layout.name!r}"
    return Target(socket, session_name=session, layout_problem=problem)


def _running_named(name: str, socket: str | None) -> Target | None:
    """The running fleet whose session is *name* (a person may name a fleet as ``fleet status`` shows it)."""
    if socket is not None:
        _check_socket(socket)
    matches = [(sock, session, layout) for sock, session, layout in running_fleets(socket) if session == name]
    if len(matches) > 1:
        raise UsageError(f"fleet {name!r} runs on sockets {', '.join(m[0] for m in matches)}; "
                         f"say which: fleet ... {name} --socket {matches[0][0]}")  # fmt: skip
    return _target_of(*matches[0]) if matches else None


def the_running_fleet(socket: str | None = None) -> Target:
    """The one running fleet; refused when none or several run."""
    fleets = running_fleets(socket)
    if not fleets:
        raise NotRunningError("no fleet is running; start one: fleet start LAYOUT")
    if len(fleets) > 1:
        names = ", ".join(f"{session} (socket {sock})" for sock, session, _ in fleets)
        raise UsageError(
            f"{len(fleets)} fleets are running: {names}; name one, e.g. fleet status {fleets[0][1]}"
        )
    return _target_of(*fleets[0])
