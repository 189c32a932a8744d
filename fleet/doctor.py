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

Read-only without ``--fix``, but for that cache.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import typing as t
from dataclasses import dataclass
from pathlib import Path

from claude_shepherd.fleet import procs as pr
from claude_shepherd.fleet.builder import extra_panes, respawn
from claude_shepherd.fleet.layout import Layout
from claude_shepherd.fleet.live import Fleet, live_fleets, socket_dir
from claude_shepherd.fleet.status import sessions_root_of
from claude_shepherd.fleet.tmux import FleetServer, PaneInfo
from claude_shepherd.hooks import install as hook_install
from claude_shepherd.supervisor.claude_run.claude_bin import ClaudeNotFoundError, find_claude
from claude_shepherd.supervisor.claude_run.transcripts import config_dir
from claude_shepherd.supervisor.env import CLAUDE_BIN_ENV
from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.session import index
from claude_shepherd.supervisor.session import transitions as tr
from claude_shepherd.supervisor.session.fields import STATE_FILE, F
from claude_shepherd.supervisor.session.identity import owner_alive, pid_exists
from claude_shepherd.supervisor.session.paths import sessions_root
from claude_shepherd.supervisor.session.state import State
from claude_shepherd.supervisor.session.store import StateError, read_state, update_state
from claude_shepherd.supervisor.tmux_names import STOPPED, is_fleet_socket

ORPHAN_GRACE = 3.0


@dataclass
class Finding:
    kind: str  # unanswered | orphan | dead-agent | stale-binding | duplicate-binding | duplicate-pane | not-in-layout | hooks | claude | index | worktree
    message: str
    fix: t.Callable[[], str] | None = None
    fixed: str | None = None
    info: bool = False
    """Not a problem: something that heals itself, fixed on every run and reported as information."""


# --------------------------------------------------------------------------- orphans


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


# --------------------------------------------------------------------------- bindings


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
                tr.release_pane(state)

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


# --------------------------------------------------------------------------- duplicate panes (R6)


def _rename(server: FleetServer, pane: PaneInfo, label: str) -> t.Callable[[], str]:
    def fix() -> str:
        server.run("set-option", "-p", "-t", pane.pane_id, "@pane_label", label)
        return f"renamed pane {pane.pane_id} to {label}"

    return fix


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


# --------------------------------------------------------------------------- hooks


def settings_files(project: Path, claude_config: Path) -> list[Path]:
    """The settings files Claude Code reads for a Claude started in *project*."""
    return [
        claude_config / "settings.json",
        project / ".claude" / "settings.json",
        project / ".claude" / "settings.local.json",
    ]


def _our_events(path: Path) -> set[str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    events: set[str] = set()
    hooks = data.get("hooks") if isinstance(data, dict) else None
    if isinstance(hooks, dict):
        for event, groups in hooks.items():
            for group in groups if isinstance(groups, list) else []:
                for hook in group.get("hooks", []) if isinstance(group, dict) else []:
                    if isinstance(hook, dict) and hook_install.ours(hook.get("command")):
                        events.add(event)
    return events


def required_events() -> list[str]:
    """The events ``claude-hook install`` installs for the Claude Code here (so one that came in a newer
    Claude Code, PreSkillShellCommand, is missing once Claude Code was updated after the install)."""
    return [registration.event for registration in hook_install.registrations(hook_install.claude_version())]


def _install_hooks(claude_config: Path) -> t.Callable[[], str]:
    def fix() -> str:
        env = dict(os.environ, CLAUDE_CONFIG_DIR=str(claude_config))
        done = subprocess.run(
            [sys.executable, "-m", "claude_shepherd.hooks", "install"],
            capture_output=True, text=True, env=env, timeout=60, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        if done.returncode != 0:
            raise ShepherdError(f"claude-hook install failed: {(done.stderr or done.stdout).strip()[:200]}")
        return f"installed the hooks into {claude_config / 'settings.json'}"

    return fix


def find_missing_hooks(projects: t.Iterable[Path], claude_config: Path) -> list[Finding]:
    required = required_events()
    findings: list[Finding] = []
    for project in sorted(set(projects)):
        found: set[str] = set()
        for path in settings_files(project, claude_config):
            found |= _our_events(path)
        missing = [event for event in required if event not in found]
        if missing:
            findings.append(
                Finding(
                    "hooks",
                    f"hooks {', '.join(missing)} are not installed in the settings Claude reads for {project} "
                    f"({claude_config / 'settings.json'}, .claude/settings*.json)",
                    _install_hooks(claude_config),
                )
            )
            break  # one install (user scope) covers every project
    return findings


# --------------------------------------------------------------------------- Claude Code


def find_missing_claude(env: t.Mapping[str, str]) -> list[Finding]:
    """Claude Code where ``claude-run`` looks for it in *env* (the environment ``fleet start`` gives its
    agents), or a finding saying where it was looked for: without it every agent dies at start."""
    try:
        find_claude(env)
    except ClaudeNotFoundError as exc:
        path = "" if env.get(CLAUDE_BIN_ENV, "").strip() else f" (PATH here is {env.get('PATH', '')})"
        return [Finding("claude", f"every agent started here would die at once: {exc}{path}")]
    return []


# --------------------------------------------------------------------------- index


def _refresh_index(root: Path) -> t.Callable[[], str]:
    """Rebuild *root*'s index if it is stale at the time of the call (after every other fix)."""

    def fix() -> str:
        if not index_is_stale(root):
            return ""
        index.rebuild(root)
        return f"refreshed the session index of {root} (a cache: not a problem)"

    return fix


def _all_of(fixes: list[t.Callable[[], str]]) -> t.Callable[[], str]:
    return lambda: "; ".join(fix() for fix in fixes)


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


def _remove_empty(repo: Path, name: str) -> t.Callable[[], str]:
    def fix() -> str:
        from claude_shepherd.fleet.worktree_removal import remove

        return remove(repo, name)  # checks again under the repository's lock, never forced

    return fix


def _prune(repo: Path) -> t.Callable[[], str]:
    def fix() -> str:
        from claude_shepherd.fleet.worktree_removal import prune_stale

        return "; ".join(prune_stale(repo)) or "nothing was stale any more"

    return fix


def find_worktrees(projects: t.Iterable[Path], layouts: t.Sequence[Layout]) -> list[Finding]:
    """Agent worktrees of the projects' repositories that no layout's pane names and nothing runs in,
    and stale worktree entries. Only what is provably empty gets a fix."""
    from claude_shepherd.fleet import worktrees as wt
    from claude_shepherd.supervisor import gitrepo

    repos: set[Path] = set()
    for project in projects:
        if project.is_dir():
            try:
                repos.add(wt.repository(project))
            except ShepherdError:
                continue
    named = {p.worktree for layout in layouts for w in layout.windows for p in w.panes if p.worktree}
    findings: list[Finding] = []
    for repo in sorted(repos):
        try:
            trees = wt.inspect(repo)
        except gitrepo.GitError as exc:
            findings.append(Finding("worktree", f"{repo}: cannot list its worktrees ({exc})"))
            continue
        try:
            kept = wt.kept_branches(repo)
        except gitrepo.GitError as exc:
            kept = []
            findings.append(Finding("worktree", f"{repo}: cannot list its agents' branches ({exc})"))
        for branch, count in kept:
            name = branch.removeprefix(gitrepo.BRANCH_PREFIX)
            findings.append(
                Finding("worktree", f"branch {branch} of {repo} holds {count} commit{'s' * (count != 1)} on no "
                                    f"other branch and has no worktree: a plain claude -w {name} would reset "
                                    f"it to HEAD (claude-run and fleet start make its worktree again; or "
                                    f"git -C {repo} worktree add {gitrepo.WORKTREES_DIR / name} {branch})")
            )  # fmt: skip
        stale = wt.stale_entries(repo)
        if stale:
            findings.append(
                Finding(
                    "worktree",
                    f"{repo}: stale worktree entr{'y' if len(stale) == 1 else 'ies'} (folder gone): "
                    + ", ".join(str(entry.path) for entry in stale),
                    _prune(repo),
                )
            )
        for tree in trees:
            if tree.work.foreign:
                findings.append(
                    Finding("worktree", f"worktree {tree.name}: {tree.work.problem}; nothing of ours runs git "
                                        f"in it: look at what it points to, then point it back with "
                                        f"git -C {repo} worktree repair {tree.entry.path}")
                )  # fmt: skip
                continue
            if tree.entry.prunable or tree.name in named or tree.users:
                continue
            state = tree.work.describe()
            message = (
                f"worktree {tree.name} of {repo} ({tree.entry.branch or 'detached'}, {wt.size_of(tree.entry.path)}): "
                f"no agent of {'these layouts' if layouts else 'a layout'} uses it; {state}"
            )
            if tree.work.empty:
                findings.append(Finding("worktree", message, _remove_empty(repo, tree.name)))
            else:
                findings.append(
                    Finding("worktree", message + f" (kept; see fleet worktree ls --repo {repo})")
                )
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
