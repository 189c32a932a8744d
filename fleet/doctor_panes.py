"""``fleet doctor``'s look at the panes and their processes: orphans, dead agents, panes no layout has.

An orphan is ended by SIGTERM, then SIGKILL of its whole tree; a dead agent's pane is respawned in the
fleet's own environment; a pane its layout no longer has is said and never touched, as ``fleet start`` does.
"""

from __future__ import annotations

import os
import typing as t
from pathlib import Path

from claude_shepherd.fleet import procs as pr
from claude_shepherd.fleet.builder import extra_panes, respawn
from claude_shepherd.fleet.doctor_finding import Finding
from claude_shepherd.fleet.layout import Layout
from claude_shepherd.fleet.live import Fleet, socket_dir
from claude_shepherd.fleet.tmux import FleetServer, PaneInfo
from claude_shepherd.supervisor.session.identity import pid_exists
from claude_shepherd.supervisor.tmux_names import STOPPED, is_fleet_socket

ORPHAN_GRACE = 3.0


def _orphan_fix(roots: list[pr.Proc]) -> t.Callable[[], str]:
    def fix() -> str:
        table = pr.snapshot(with_env=False)
        members: dict[int, pr.Proc] = {}
        for root in roots:
            for proc in table.descendants(root.pid):
                members.setdefault(proc.pid, proc)
        everything = [p for p in members.values() if not p.is_tmux_server]
        left = pr.end(everything, ORPHAN_GRACE, kill_wait=1.0)
        if left:
            return f"could not end {', '.join(str(p.pid) for p in left)}"
        return f"ended {len(everything)} process(es)"

    return fix


def find_orphans(fleet: Fleet, table: pr.Table) -> list[Finding]:
    """Agent processes started in a pane of a fleet of ours whose pane or supervisor is gone.

    Only processes whose ``TMUX`` names a fleet socket in our socket directory
    are judged: a Claude in a plain terminal is none of the fleet's business.
    """
    live = fleet.pane_keys()
    ours = os.path.realpath(socket_dir())
    protected = pr.protected_pids()
    suspects: dict[int, str] = {}
    for proc in table.by_pid.values():
        socket, pane = proc.tmux_socket, proc.tmux_pane
        if proc.pid in protected or proc.is_tmux_server or not socket or not pane:
            continue
        if not is_fleet_socket(Path(socket).name) or os.path.realpath(os.path.dirname(socket)) != ours:
            continue
        if os.path.realpath(socket) in fleet.unanswered:
            continue  # its server did not answer: we cannot tell whether its pane exists
        if not (proc.is_supervisor or proc.is_watchdog or proc.supervisor_pid is not None):
            continue
        owner = proc.supervisor_pid
        if (socket, pane) not in live:
            suspects[proc.pid] = f"its fleet pane {pane} on {Path(socket).name} no longer exists"
        elif not proc.is_supervisor and owner is not None and owner != proc.pid and not pid_exists(owner):
            suspects[proc.pid] = f"its supervisor {owner} is gone"
    # Report the top of each orphaned tree once; the fix ends the whole tree.
    findings: list[Finding] = []
    for pid, why in sorted(suspects.items()):
        proc = table.by_pid[pid]
        if proc.ppid in suspects:
            continue
        kind = "supervisor" if proc.is_supervisor else "watchdog" if proc.is_watchdog else "agent process"
        findings.append(Finding("orphan", f"orphaned {kind} {proc.describe()}: {why}", _orphan_fix([proc])))
    return findings


def find_panes_not_in_layouts(fleet: Fleet, layouts: t.Sequence[Layout]) -> list[Finding]:
    """Agent panes of a layout's running fleet that the layout no longer has (renamed or removed)."""
    findings = []
    for layout in layouts:
        for panes in fleet.panes.values():
            ours = [p for p in panes if p.session == layout.name]
            for report in extra_panes(layout, ours):
                findings.append(Finding(
                    "not-in-layout",
                    f"pane {layout.name}:{report.window}:{report.label} is not in {layout.source}: {report.detail}",
                ))  # fmt: skip
    return findings


def _respawn(server: FleetServer, pane: PaneInfo) -> t.Callable[[], str]:
    def fix() -> str:
        respawn(server, pane.pane_id)
        return f"respawned {pane.pane_id}; `fleet status` shows whether it runs"

    return fix


def find_dead_agents(fleet: Fleet) -> list[Finding]:
    """Agent panes (marked so by ``fleet start``) whose process has exited."""
    findings: list[Finding] = []
    for path, panes in sorted(fleet.panes.items()):
        server = fleet.servers[path]
        for pane in panes:
            if (
                not (pane.agent and pane.dead) or pane.notify == STOPPED
            ):  # fleet stop --pane ended it: asked for
                continue
            status = pane.death
            name = pane.identity or f"{pane.session}:{pane.window}:{pane.pane_id}"
            findings.append(Finding(
                "dead-agent",
                f"the agent of {name} (pane {pane.pane_id}, socket {server.socket_name}) {status}; "
                f"`fleet logs {pane.session} --pane {pane.label or pane.pane_id}` shows why",
                _respawn(server, pane),
            ))  # fmt: skip
    return findings
