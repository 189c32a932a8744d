"""``fleet doctor``: find (and with ``--fix`` repair) what a fleet leaves wrong.

* **orphans** — a supervisor, watchdog or Claude whose fleet pane no longer
  exists, or a watchdog/Claude whose supervisor is gone: fixed by SIGTERM,
  then SIGKILL of its whole tree;
* **stale bindings** — a session bound (``fleetPaneId``) to a pane that no
  longer exists in its running fleet (or in its layout), or two sessions
  bound to one pane: fixed by releasing the binding of the session(s) whose
  owner is dead (live sessions are never touched);
* **duplicate identities** (R6) — two live panes with the same
  ``session:window:label``: fixed by renaming ``LABEL-2`` the pane whose
  agent does not hold the sessions bound to it (else the later pane); when
  both agents hold one, not fixed: the person relabels the impostor;
* **dead agents** — an agent pane whose process exited (``claude-run`` not
  found, a crash loop it gave up on, a kill): fixed by respawning the pane in
  the fleet's own environment;
* **hooks not installed** in the settings Claude will read: fixed by
  ``claude-hook install``;
* **no Claude Code** where ``claude-run`` looks for it (``$CLAUDE_BIN``,
  ``PATH``, the installers' folders) in this environment, which ``fleet
  start`` gives its agents: every agent would die at start; not fixed (the
  person installs it);
* **agent worktrees** (``claude -w NAME``) that no layout pane names and nothing runs in, with
  what they hold and their size, and git's entries of worktrees whose folder is gone: ``--fix``
  prunes those entries and removes only a worktree provably empty (clean, no commit on no other
  branch, no stash made in it); any other is left for ``fleet worktree remove`` (docs/WORKTREES.md);
* **a stale session index** is no problem: it is a cache that every lookup
  refreshes, so doctor refreshes it too (``--fix`` or not) and says so as
  information.

Read-only without ``--fix``, but for that cache. Each look is a module of its own (``doctor_panes``,
``doctor_bindings``, ``doctor_setup``, ``doctor_worktrees``); this one runs them all and applies the fixes.
"""

from __future__ import annotations

import os
import typing as t
from pathlib import Path

from claude_shepherd.fleet import procs as pr
from claude_shepherd.fleet.doctor_bindings import find_duplicate_panes, find_stale_bindings
from claude_shepherd.fleet.doctor_finding import Finding
from claude_shepherd.fleet.doctor_panes import find_dead_agents, find_orphans, find_panes_not_in_layouts
from claude_shepherd.fleet.doctor_setup import find_missing_claude, find_missing_hooks
from claude_shepherd.fleet.doctor_worktrees import find_worktrees
from claude_shepherd.fleet.layout import Layout
from claude_shepherd.fleet.live import Fleet, live_fleets
from claude_shepherd.fleet.status import sessions_root_of
from claude_shepherd.fleet.tmux import FleetServer
from claude_shepherd.supervisor.claude_run.transcripts import config_dir
from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.session import index
from claude_shepherd.supervisor.session.fields import STATE_FILE
from claude_shepherd.supervisor.session.paths import sessions_root

# --------------------------------------------------------------------------- index


def _refresh_index(root: Path) -> t.Callable[[], str]:
    """Rebuild *root*'s index if it is stale at the time of the call (after every other fix)."""

    def fix() -> str:
        if not index_is_stale(root):
            return ""
        index.rebuild(root)
        return f"refreshed the session index of {root} (a cache: not a problem)"

    return fix


def index_is_stale(root: Path) -> bool:
    """Does the stored index file disagree with the state files?

    Lookups never trust it blindly (each re-checks every state file's
    signature), so a stale file costs only time; ``--fix`` rewrites it.
    """
    stored = index.stored(root)
    if stored is None:
        return any((entry / STATE_FILE).is_file() for entry in root.iterdir()) if root.is_dir() else False
    return stored != index.scan(root)


def index_refreshes(roots: t.Iterable[Path]) -> list[Finding]:
    """One cache finding per sessions root: its fix refreshes the index when it is stale then."""
    return [
        Finding("index", f"the session index of {root}", _refresh_index(root), info=True)
        for root in roots
        if root.is_dir()
    ]


def refresh_caches(findings: list[Finding]) -> list[Finding]:
    """Apply the fixes of what is information, not a problem (a stale cache); return what was refreshed."""
    caches = [finding for finding in findings if finding.info]
    repair(caches)
    return [finding for finding in caches if finding.fixed]


# --------------------------------------------------------------------------- all together


def sessions_roots(fleet: Fleet, table: pr.Table, layouts: t.Sequence[Layout]) -> list[Path]:
    """Where this fleet's sessions live: ours, each agent's, each layout root's."""
    roots = {sessions_root()}
    for socket, panes in fleet.panes.items():
        for pane in panes:
            _, supervisor, claude = table.agent_of(socket, pane)
            roots.add(sessions_root_of(pane, supervisor, claude))
    for layout in layouts:
        for window in layout.windows:
            roots.add(sessions_root(cwd=window.root, env=os.environ))
    return sorted(roots)


def examine(layouts: t.Sequence[Layout] = (), servers: t.Iterable[FleetServer] = ()) -> list[Finding]:
    """Every problem found (nothing is changed)."""
    fleet = live_fleets(servers)
    table = pr.snapshot()
    roots = sessions_roots(fleet, table, layouts)
    projects = {Path(p.current_path) for panes in fleet.panes.values() for p in panes if p.current_path}
    projects |= {w.root for layout in layouts for w in layout.windows}
    projects.add(Path.cwd())
    findings = [
        Finding("unanswered", f"the fleet server on {Path(path).name} did not answer: its panes and orphans were "
                              "not checked (a wedged tmux server, or a socket no tmux server listens on)")
        for path in sorted(fleet.unanswered)
    ]  # fmt: skip
    findings += find_orphans(fleet, table)
    findings += find_dead_agents(fleet)
    findings += find_stale_bindings(roots, fleet, layouts)
    findings += find_duplicate_panes(fleet, table, roots)
    findings += find_panes_not_in_layouts(fleet, layouts)
    findings += find_missing_hooks(projects, config_dir())
    findings += find_missing_claude(os.environ)
    findings += index_refreshes(roots)
    findings += find_worktrees(projects, layouts)
    return findings


def repair(findings: list[Finding]) -> None:
    """Apply every finding's fix; a fix that fails records why instead of stopping the rest."""
    for finding in findings:
        if finding.fix is None:
            continue
        try:
            finding.fixed = finding.fix()
        except (ShepherdError, OSError) as exc:
            finding.fixed = f"not fixed: {exc}"
