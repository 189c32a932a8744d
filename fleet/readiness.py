"""``started`` means running: wait until each new agent's supervisor and Claude are up.

tmux creating a pane says nothing about what runs in it: ``claude-run`` may
not be found (exit 127), Claude may crash at once, a ``pre`` command may fail.
After ``fleet start`` or ``restart`` has created or respawned agent panes, this
watches them — one ``list-panes`` and a read of each pane's own process tree per round (never
the whole process table: the agents starting up need the CPU more) — until
each one's ``claude-run`` runs a Claude that has stayed up for a moment, its
pane dies, or the time is up. A pane that died is reported with its exit
status and its last lines, which say why. A Claude that stayed up but waits at
one of Claude Code's startup dialogs (its folder's trust, say: no hook of it
has run) is not running either: it is reported with what it waits for
(:mod:`claude_shepherd.fleet.dialogs`). A Claude no hook has heard from is
watched for twice the settling time, long enough to draw a dialog. A ``claude-run`` that holds its
launch for a usage window (supervisor.claude_run.usage_wait: it marks its
agent ``limited``) is no failure: it waits, and until when is said.
"""

from __future__ import annotations

import os
import time
import typing as t
from dataclasses import dataclass

from claude_shepherd.fleet import dialogs
from claude_shepherd.fleet import procs as pr
from claude_shepherd.fleet.tmux import FleetServer, PaneInfo, list_panes, pane_history
from claude_shepherd.supervisor.env import FLEET_START_SETTLE_ENV, FLEET_START_WAIT_ENV
from claude_shepherd.supervisor.session.numbers import seconds_from

DEFAULT_WAIT = 10.0
"""Seconds to wait for every agent (tunable: ``--wait``, ``$FLEET_START_WAIT``)."""
SETTLE = 2.0
"""How long a Claude must have been running to count as up (a crash loop's Claude lives less;
tunable: ``$FLEET_START_SETTLE``)."""
STATUS_GRACE = 3.0
"""tmux may show a pane dead a moment before it has reaped its process and knows how it ended."""
POLL = 0.2
DEAD_BANNER = "Pane is dead"
"""How tmux's ``remain-on-exit`` marks a dead pane's last line: not the agent's words."""
LAST_LINES = 5


@dataclass(frozen=True)
class Outcome:
    """Whether one agent pane is running, and if not, what was seen."""

    pane_id: str
    running: bool
    detail: str
    last_lines: tuple[str, ...] = ()
    waiting: str = ""
    """What its claude-run waits for before it starts Claude (``waiting for the 5-hour window until 22:49
    (UTC)``): not running, and no failure."""
    dialog: str = ""
    """The dialog its Claude waits at (not running, yet alive): ``trust dialog for /path``."""


def default_wait(env: t.Mapping[str, str] | None = None) -> float:
    return seconds_from(
        os.environ if env is None else env, FLEET_START_WAIT_ENV, default=DEFAULT_WAIT, maximum=3600
    )


def default_settle(env: t.Mapping[str, str] | None = None) -> float:
    return seconds_from(
        os.environ if env is None else env, FLEET_START_SETTLE_ENV, default=SETTLE, maximum=600
    )


def _look(
    pane: PaneInfo | None, table: pr.Table, now: float, settle: float
) -> tuple[bool, str, pr.Proc | None]:
    """(up, what is seen, its Claude) for one pane."""
    if pane is None:
        return False, "its pane was closed", None
    if pane.dead:
        return False, pane.death, None
    members = table.descendants(pane.pid)
    supervisor = next((p for p in members if p.is_supervisor), None)
    if supervisor is None:
        return False, "claude-run is not running in it", None
    claude = table.claude_of(supervisor)
    if claude is None:
        return False, f"claude-run (pid {supervisor.pid}) has no Claude running", None
    if now - claude.create_time < settle:
        return False, f"Claude (pid {claude.pid}) has only just started", claude
    return True, f"claude-run {supervisor.pid}, Claude {claude.pid}", claude


def usage_wait(pane: PaneInfo | None, table: pr.Table, now: float | None = None) -> str:
    """``waiting for the 5-hour window until 22:49 (UTC)`` when the pane's claude-run holds its launch for
    a usage window (its agent's ``limited`` mark, written since it started, stands), else ""."""
    if pane is None or pane.dead or not pane.identity:
        return ""
    supervisor = next((p for p in table.descendants(pane.pid) if p.is_supervisor), None)
    if supervisor is None or table.claude_of(supervisor) is not None:
        return ""
    from claude_shepherd.fleet.status import sessions_root_of
    from claude_shepherd.supervisor.session import usage_windows as uw
    from claude_shepherd.supervisor.session.limit_messages import UNKNOWN, window_words

    now = time.time() if now is None else now
    record = uw.read_agent(sessions_root_of(pane, supervisor, None), pane.identity)
    mark = uw.limited_of(record, now)
    since = mark.get("since") if mark else None
    if mark is None or not isinstance(since, (int, float)) or since < supervisor.create_time - 1:
        return ""
    until = mark.get("until")
    window = f"the {window_words(str(mark.get('window') or UNKNOWN))} window"
    if not isinstance(until, (int, float)):
        return f"waiting for {window} to reopen"
    zone = time.strftime("%Z", time.localtime(until))
    return f"waiting for {window} until {uw.clock(until, now)}{f' ({zone})' if zone else ''}"


def waiting(
    server: FleetServer, pane_ids: t.Collection[str], *, procs: pr.Processes = pr.LOCAL
) -> dict[str, str]:
    """Of *pane_ids*, those whose claude-run waits for a usage window, and what it waits for."""
    panes = {p.pane_id: p for p in list_panes(server) if p.pane_id in pane_ids and not p.dead}
    table = procs.trees(p.pid for p in panes.values())
    found = {pane_id: usage_wait(pane, table) for pane_id, pane in panes.items()}
    return {pane_id: text for pane_id, text in found.items() if text}


def wait_running(
    server: FleetServer,
    pane_ids: t.Sequence[str],
    *,
    timeout: float,
    settle: float | None = None,
    clock: t.Callable[[], float] = time.monotonic,
    wall: t.Callable[[], float] = time.time,
    sleep: t.Callable[[float], None] = time.sleep,
    procs: pr.Processes = pr.LOCAL,
) -> dict[str, Outcome]:
    """Wait until every pane of *pane_ids* runs its agent (or is known not to): one outcome each."""
    settle = default_settle() if settle is None else settle
    deadline = clock() + timeout
    pending = list(dict.fromkeys(pane_ids))
    outcomes: dict[str, Outcome] = {}
    dead_since: dict[str, float] = {}
    while pending:
        panes = {p.pane_id: p for p in list_panes(server)}
        table = procs.trees(
            panes[pane_id].pid for pane_id in pending if pane_id in panes and not panes[pane_id].dead
        )
        now = wall()
        last_round = clock() >= deadline
        looks = {pane_id: _look(panes.get(pane_id), table, now, settle) for pane_id in pending}
        unproven = [
            pane_id
            for pane_id, (up, _, claude) in looks.items()
            if up and dialogs.unproven(panes[pane_id], claude)  # no hook of it ran: is it at a dialog?
        ]
        at_dialog = dialogs.waiting(server, unproven)
        for pane_id in list(pending):
            pane = panes.get(pane_id)
            up, detail, claude = looks[pane_id]
            if pane_id in at_dialog:
                outcomes[pane_id] = Outcome(
                    pane_id, False, f"waiting: {at_dialog[pane_id]}", dialog=at_dialog[pane_id]
                )
                pending.remove(pane_id)
                continue
            if pane_id in unproven and claude is not None and now - claude.create_time < 2 * settle:
                continue  # no hook of it ran, no dialog yet: a Claude starting slowly may still show one
            if (
                pane is not None
                and pane.dead
                and not (pane.dead_status or pane.dead_signal)
                and clock() - dead_since.setdefault(pane_id, clock()) < STATUS_GRACE
            ):
                continue  # its exit status is on its way (a loaded machine may take a moment to reap it)
            held = "" if up else usage_wait(pane, table, now)
            if up:
                outcomes[pane_id] = Outcome(pane_id, True, detail)
            elif held:
                outcomes[pane_id] = Outcome(pane_id, False, detail, waiting=held)
            elif pane is None or pane.dead or last_round:
                lines = tuple(line for line in pane_history(server, pane_id, 200)
                              if line.strip() and not line.startswith(DEAD_BANNER))[-LAST_LINES:]  # fmt: skip
                if (
                    not lines
                    and pane is not None
                    and pane.dead
                    and clock() - dead_since.setdefault(pane_id, clock()) < STATUS_GRACE
                ):
                    continue  # what it printed last may not be drawn yet (tmux reads the pane's output apart)
                if not (pane is None or pane.dead):
                    detail = f"not running after {timeout:g}s: {detail}"
                outcomes[pane_id] = Outcome(pane_id, False, detail, lines)
            else:
                continue
            pending.remove(pane_id)
        if pending:
            sleep(POLL)
    return outcomes
