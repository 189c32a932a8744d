"""Agents of a layout that run outside it: a start must not give a pane identity a second agent.

A window or session renamed while its agents ran leaves them where the fleet's verbs no longer look;
starting the layout again would start each pane anew beside them. :func:`blockers` says why a start
would leave part of a running fleet alone, so that ``fleet restart`` asks before it stops anything.
"""

from __future__ import annotations

import os
import typing as t

from claude_shepherd.fleet import procs as pr
from claude_shepherd.fleet.live import socket_dir
from claude_shepherd.fleet.status import sessions_root_of
from claude_shepherd.fleet.tmux import FleetServer, PaneInfo, list_panes
from claude_shepherd.supervisor.session.fields import F
from claude_shepherd.supervisor.session.identity import owner_alive
from claude_shepherd.supervisor.session.lookup import sessions_on_pane

if t.TYPE_CHECKING:
    from claude_shepherd.fleet.layout import Layout


def running_elsewhere(layout: Layout, server: FleetServer, identities: t.Iterable[str]) -> dict[str, str]:
    """Pane identity -> where its agent still runs, for each of *identities* held by an agent outside it:
    starting that pane would give the identity a second agent (its window or session was renamed).

    A session file is the agent's to write, so it only points: what counts is a running ``claude-run``
    (start token checked) that owns a session bound to the identity, runs on this fleet's socket, and
    sits in a pane that still carries the identity's label — in another window or session.
    """
    wanted = [identity for identity in identities]
    if not wanted:
        return {}
    socket = os.path.realpath(socket_dir() / layout.socket_name)
    panes = {p.pane_id: p for p in list_panes(server)}
    table = pr.snapshot()
    roots = layout.sessions_roots()
    found: dict[str, str] = {}
    for identity in wanted:
        label = identity.rsplit(":", 1)[-1]
        for root in roots:
            for hit in sessions_on_pane(root, identity):
                owner = hit.state.get(F.PID)
                proc = table.by_pid.get(owner) if isinstance(owner, int) else None
                if (
                    proc is None
                    or not proc.is_supervisor
                    or not owner_alive(owner, hit.state.get(F.PID_START))
                ):
                    continue
                pane = panes.get(proc.tmux_pane or "")
                if (
                    proc.tmux_socket
                    and os.path.realpath(proc.tmux_socket) == socket
                    and pane is not None
                    and pane.label == label
                    and pane.identity != identity
                ):
                    found[identity] = (
                        f"supervisor {owner} in pane {pane.pane_id} of {pane.session}:{pane.window}"
                    )
    return found


def look_alikes(layout: Layout, server: FleetServer) -> list[str]:
    """Other sessions of this fleet's server that have exactly the layout's windows and labels and run
    agents on the layout's own sessions: the fleet itself, renamed (its agents would otherwise be out of
    reach of its verbs). Another project's copy of the layout keeps its sessions elsewhere."""
    shape = {(w.name, p.label) for w in layout.windows for p in w.panes if p.label}
    sessions: dict[str, list[PaneInfo]] = {}
    for pane in list_panes(server):
        if pane.session != layout.name:
            sessions.setdefault(pane.session, []).append(pane)
    sessions = {name: panes for name, panes in sessions.items()
                if {(p.window, p.label) for p in panes if p.label} == shape}  # fmt: skip
    if not shape or not sessions:
        return []
    roots = layout.sessions_roots()
    table = pr.snapshot()
    socket = server.socket_file()

    def ours(pane: PaneInfo) -> bool:
        _, supervisor, claude = table.agent_of(socket, pane)
        return supervisor is not None and sessions_root_of(pane, supervisor, claude) in roots

    return sorted(name for name, panes in sessions.items() if any(ours(p) for p in panes if not p.dead))


def shared_labels(panes: t.Iterable[PaneInfo]) -> str:
    """``%1, %4 are all labelled B`` for each label on more than one of *panes* ("" when none is)."""
    holders: dict[str, list[str]] = {}
    for info in panes:
        if info.label:
            holders.setdefault(info.label, []).append(info.pane_id)
    return "; ".join(f"{', '.join(ids)} are all labelled {label}" for label, ids in sorted(holders.items())
                     if len(ids) > 1)  # fmt: skip


def blockers(layout: Layout, server: FleetServer) -> list[str]:
    """Why a start of the running fleet would leave some of it alone (``fleet restart`` asks before it
    stops anything, so that it never stops an agent it then cannot start)."""
    existing = list_panes(server, layout.name)
    reasons = []
    for window in layout.windows:
        shared = shared_labels(p for p in existing if p.window == window.name)
        if shared:
            reasons.append(f"in window {window.name}, {shared}")
    elsewhere = running_elsewhere(layout, server, layout.pane_ids())
    reasons += [f"{pane} runs as {running}" for pane, running in sorted(elsewhere.items())]
    return reasons
