"""``fleet doctor``'s look at sessions bound to panes (``fleetPaneId``): stale bindings, two sessions
on one pane, two panes under one identity (R6).

A binding is released only for a session whose owner is dead: live sessions are never touched. Of two
panes under one identity, the one whose agent holds the sessions bound to it keeps it; when both
agents hold one, the person relabels the impostor. The state files are read themselves, never through
the index, which a lookup could refresh: without ``--fix`` nothing changes.
"""

from __future__ import annotations

import typing as t
from pathlib import Path

from claude_shepherd.fleet import procs as pr
from claude_shepherd.fleet.doctor_finding import Finding
from claude_shepherd.fleet.layout import Layout
from claude_shepherd.fleet.live import Fleet
from claude_shepherd.fleet.tmux import FleetServer, PaneInfo
from claude_shepherd.supervisor.session.fields import F
from claude_shepherd.supervisor.session.identity import owner_alive
from claude_shepherd.supervisor.session.owner_transitions import release_pane
from claude_shepherd.supervisor.session.state import State
from claude_shepherd.supervisor.session.store import StateError, read_state, update_state


def _scan_states(root: Path) -> dict[str, State]:
    states: dict[str, State] = {}
    try:
        entries = sorted(root.iterdir())
    except OSError:
        return states
    for entry in entries:
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        try:
            states[entry.name] = read_state(entry)
        except StateError:
            continue
    return states


def _release(session_dir: Path, pane_id: str) -> t.Callable[[], str]:
    def fix() -> str:
        def apply(state: State) -> None:
            if state.get(F.FLEET_PANE_ID) == pane_id and not owner_alive(
                state.get(F.PID), state.get(F.PID_START)
            ):
                release_pane(state)

        update_state(session_dir, apply)
        return f"released {session_dir.name} from {pane_id}"

    return fix


def find_stale_bindings(roots: t.Iterable[Path], fleet: Fleet, layouts: t.Sequence[Layout]) -> list[Finding]:
    running = fleet.sessions()
    identities = fleet.identities()
    expected = {layout.name: set(layout.pane_ids()) for layout in layouts}
    findings: list[Finding] = []
    for root in roots:
        states = _scan_states(root)
        by_pane: dict[str, list[str]] = {}
        for name, state in states.items():
            pane = state.get(F.FLEET_PANE_ID)
            if isinstance(pane, str) and pane:
                by_pane.setdefault(pane, []).append(name)
        for pane, names in sorted(by_pane.items()):
            fleet_session = pane.split(":", 1)[0]
            if fleet_session in running:
                gone = pane not in identities
                where = "its running fleet has no such pane"
            elif fleet_session in expected:
                gone = pane not in expected[fleet_session]
                where = "its layout has no such pane"
            else:
                gone = False  # a fleet we know nothing about: it may be started again
                where = ""
            dead = [n for n in names if not owner_alive(states[n].get(F.PID), states[n].get(F.PID_START))]
            if gone:
                for name in dead:
                    findings.append(
                        Finding(
                            "stale-binding",
                            f"session {root / name} is bound to pane {pane}, but {where}",
                            _release(root / name, pane),
                        )
                    )
            elif len(names) > 1:
                # One pane, one session: keep the most recently active, release the others (dead owners only).
                ordered = sorted(
                    names, key=lambda n: str(states[n].get(F.LAST_HEARTBEAT) or ""), reverse=True
                )
                keep, rest = ordered[0], [n for n in ordered[1:] if n in dead]
                message = (
                    f"{len(names)} sessions are bound to pane {pane}: {', '.join(ordered)} (keeping {keep})"
                )
                fixes = [_release(root / n, pane) for n in rest]
                findings.append(Finding("duplicate-binding", message, _all_of(fixes) if fixes else None))
    return findings


def _rename(server: FleetServer, pane: PaneInfo, label: str) -> t.Callable[[], str]:
    def fix() -> str:
        server.run("set-option", "-p", "-t", pane.pane_id, "@pane_label", label)
        return f"renamed pane {pane.pane_id} to {label}"

    return fix


def find_duplicate_panes(fleet: Fleet, table: pr.Table, roots: t.Sequence[Path] = ()) -> list[Finding]:
    """Panes sharing an identity; the one whose agent holds a session bound to it keeps it.

    Two panes with one label are a layout mistake (R6) or an agent that
    relabelled its own pane to pass for another. The pane running the
    supervisor that owns a session bound to the identity is the one the
    sessions mean; when none does, the one pane running an agent keeps it, and
    with two such panes nothing is renamed: the person says which is the impostor.
    """
    findings: list[Finding] = []
    for socket, panes in fleet.panes.items():
        server = fleet.servers[socket]
        taken = {p.identity for p in panes if p.identity}
        groups: dict[str, list[PaneInfo]] = {}
        for pane in sorted(panes, key=lambda p: (p.session, p.window_index, p.pane_index)):
            if pane.identity:
                groups.setdefault(pane.identity, []).append(pane)
        for identity, group in groups.items():
            if len(group) < 2:
                continue
            owners = _session_owners(identity, roots)
            holders = [
                p for p in group if (sup := table.agent_of(socket, p)[1]) is not None and sup.pid in owners
            ]
            if len(holders) > 1:
                ids = ", ".join(p.pane_id for p in group)
                findings.append(Finding(
                    "duplicate-pane",
                    f"panes {ids} on {Path(socket).name} share the identity {identity}, and the agents of "
                    f"{', '.join(p.pane_id for p in holders)} each hold a session bound to it: one relabelled its "
                    f"pane; relabel the impostor by hand (tmux -L {Path(socket).name} set-option -p -t %N "
                    "@pane_label NAME)",
                ))  # fmt: skip
                continue
            live = [p for p in group if table.agent_of(socket, p)[1] is not None]  # panes running an agent
            if not holders and len(live) > 1:
                # No binding says which agent the label means, and either may be the impostor: a guess
                # would rename the real agent's pane. The person decides.
                findings.append(Finding(
                    "duplicate-pane",
                    f"panes {', '.join(p.pane_id for p in group)} on {Path(socket).name} share the identity "
                    f"{identity}, and no session bound to it says which is meant: one agent may have relabelled "
                    f"its pane; relabel the impostor by hand (tmux -L {Path(socket).name} set-option -p -t %N "
                    "@pane_label NAME)",
                ))  # fmt: skip
                continue
            keeper = holders[0] if holders else (live or group)[0]
            why = "its agent holds the sessions bound to it" if holders else \
                "it is the one running an agent" if live else "it comes first"  # fmt: skip
            for pane in (p for p in group if p is not keeper):
                number = 2
                while f"{pane.session}:{pane.window}:{pane.label}-{number}" in taken:
                    number += 1
                new = f"{pane.label}-{number}"
                taken.add(f"{pane.session}:{pane.window}:{new}")
                findings.append(
                    Finding(
                        "duplicate-pane",
                        f"panes {keeper.pane_id} and {pane.pane_id} on {Path(socket).name} share the identity "
                        f"{identity}; sessions cannot tell them apart ({keeper.pane_id} keeps it: {why})",
                        _rename(server, pane, new),
                    )
                )
    return findings


def _session_owners(identity: str, roots: t.Sequence[Path]) -> set[int]:
    """The running owners (supervisor pids, start token checked) of the sessions bound to *identity*,
    read from the state files themselves: looking up through the index could refresh it, and doctor
    without --fix changes nothing."""
    owners: set[int] = set()
    for root in roots:
        for state in _scan_states(root).values():
            pid = state.get(F.PID)
            if state.get(F.FLEET_PANE_ID) == identity and owner_alive(pid, state.get(F.PID_START)):
                owners.add(t.cast(int, pid))
    return owners


def _all_of(fixes: list[t.Callable[[], str]]) -> t.Callable[[], str]:
    return lambda: "; ".join(fix() for fix in fixes)
