"""Which session is mine? The one lookup every component shares (docs/DESIGN.md §2).

Two strategies, in order, read-only:

1. **Fleet pane**: the session whose ``fleetPaneId`` is this pane's id — unless
   a *different, live* supervisor owns it, in which case we fall through to the
   PID strategy (the original gave up there, B9).
2. **Supervisor PID**: the session whose ``pid`` (and start token, when
   recorded) is our supervisor's.

Candidates come from :mod:`claude_shepherd.supervisor.session.index` and are confirmed against their
own state files; when none is confirmed, the index is refreshed from every
state file's signature and the lookup repeated once. Standard library only.
"""

from __future__ import annotations

from pathlib import Path

from claude_shepherd.supervisor.session import index
from claude_shepherd.supervisor.session.fields import F
from claude_shepherd.supervisor.session.identity import owner_alive, same_owner
from claude_shepherd.supervisor.session.records import Record
from claude_shepherd.supervisor.session.store import StateError, read_state

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

    from claude_shepherd.supervisor.session.state import State


class Found(Record):
    __slots__ = ("session_dir", "state", "how")
    session_dir: Path
    state: State
    how: str  # "pane" or "pid"


def _confirmed(
    root: Path, names_of: t.Callable[[bool], list[str]], matches: t.Callable[[State], bool]
) -> list[tuple[Path, State]]:
    """The index's candidates that really match, most recently active first.

    The saved index is tried first; when it yields nothing, or a candidate no
    longer matches its file, the index is refreshed from the state files'
    signatures and the lookup repeated once.
    """
    found, stale = _check(root, names_of(False), matches)
    if stale or not found:
        found, _ = _check(root, names_of(True), matches)
    found.sort(key=lambda item: str(item[1].get(F.LAST_HEARTBEAT) or ""), reverse=True)
    return found


def _check(
    root: Path, names: list[str], matches: t.Callable[[State], bool]
) -> tuple[list[tuple[Path, State]], bool]:
    """States of *names* that match; and whether any did not (the index was stale).

    One unreadable or hostile state file costs only itself: whatever goes
    wrong reading or judging it, it is skipped.
    """
    found: list[tuple[Path, State]] = []
    stale = False
    for name in names:
        session_dir = root / name
        try:
            state = read_state(session_dir)
            if matches(state):
                found.append((session_dir, state))
                continue
        except (StateError, ValueError, TypeError, OverflowError, RecursionError):
            pass
        stale = True
    return found, stale


def sessions_on_pane(root: Path, pane: str) -> list[Found]:
    """Every session bound to fleet *pane*, most recent first (normally one)."""
    if not pane or not root.is_dir():
        return []
    hits = _confirmed(
        root, lambda fresh: index.by_pane(root, pane, fresh=fresh), lambda s: s.get(F.FLEET_PANE_ID) == pane
    )
    return [Found(d, s, "pane") for d, s in hits]


def sessions_owned_by(root: Path, pid: int, token: str | None) -> list[Found]:
    """Every session whose recorded owner is (*pid*, *token*), most recent first."""
    if pid <= 0 or not root.is_dir():
        return []
    hits = _confirmed(
        root,
        lambda fresh: index.by_pid(root, pid, fresh=fresh),
        lambda s: same_owner(s.get(F.PID), s.get(F.PID_START), pid, token),
    )
    return [Found(d, s, "pid") for d, s in hits]


def find_session(root: Path, *, pane: str | None, pid: int, token: str | None) -> Found | None:
    """The session of the caller identified by fleet *pane* and supervisor (*pid*, *token*)."""
    for found in sessions_on_pane(root, pane) if pane else []:
        owner, owner_token = found.state.get(F.PID), found.state.get(F.PID_START)
        if owner_alive(owner, owner_token) and not same_owner(owner, owner_token, pid, token):
            continue  # held by another live supervisor: try the PID strategy
        return found
    owned = sessions_owned_by(root, pid, token)
    return owned[0] if owned else None
