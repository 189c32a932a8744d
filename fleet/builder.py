"""Build a layout on the fleet's tmux server, or reconcile a running fleet with it.

Each pane's commands run as the pane's own process (``/bin/sh -c``, the last
command ``exec``'d), never typed into an interactive shell. ``@pane_label``
is set by us in the same tmux invocation that creates the pane: tmux runs one
invocation's commands back to back, so the agent started in the pane can
never look up its identity before the label exists (a later label would make
its ``claude-run`` miss the pane's session and start fresh).

``remain-on-exit`` is on server-wide, set before the first pane exists, so a
finished agent's pane stays readable — and is what ``fleet start`` respawns
on a running fleet. Live panes are never touched, nor is a finished pane that
runs no agent (a build or a log tail keeps its last screen).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import typing as t
from dataclasses import dataclass
from pathlib import Path

from claude_shepherd.fleet import budgets
from claude_shepherd.fleet.elsewhere import look_alikes, running_elsewhere, shared_labels
from claude_shepherd.fleet.environment import captured, session_args
from claude_shepherd.fleet.layout import Layout, PaneSpec, WindowSpec, pane_script
from claude_shepherd.fleet.style import PANE_DIED_HOOK, fleet_options, pane_died_hook
from claude_shepherd.fleet.tmux import (
    NEXT,
    FleetServer,
    PaneInfo,
    TmuxError,
    list_panes,
)
from claude_shepherd.supervisor import alerts
from claude_shepherd.supervisor.env import FLEET_NOTIFY_COMMAND_ENV, TMUX_ENV, WORKTREE_ENV
from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.tmux_names import (
    AGENT_OPTION,
    CLAUDE_OPTION,
    CONTEXT_OPTION,
    COST_OPTION,
    FIELD_SEP,
    FLEET_NOTIFY_OPTION,
    LABEL_OPTION,
    LAYOUT_OPTION,
    PANE_OPTION,
)

PANE_SHELL = "/bin/sh"
DEFAULT_SIZE = (200, 60)
ON_START_TIMEOUT = 120.0


class StartError(ShepherdError):
    """The fleet could not be built."""


LEFT_ALONE = "left alone"
"""The action for each pane of a window whose panes share a label: nothing there is touched."""


@dataclass(frozen=True)
class PaneReport:
    """What ``fleet start`` did with one pane of the layout."""

    window: str
    label: str | None
    pane_id: str
    action: (
        str  # "started" | "added" | "respawned" | "running" | "idle" (a finished non-agent pane) | LEFT_ALONE
    )
    detail: str = ""
    agent: bool = False
    """Does the pane run a supervised Claude (so ``fleet start`` waits until it runs)?"""

    @property
    def name(self) -> str:
        return f"{self.window}:{self.label}" if self.label else f"{self.window}:{self.pane_id}"


@dataclass(frozen=True)
class StartResult:
    created: bool
    panes: tuple[PaneReport, ...]

    @property
    def changed(self) -> bool:
        return self.created or any(p.action in ("added", "respawned") for p in self.panes)

    @property
    def launched(self) -> list[PaneReport]:
        """The agent panes this start created or respawned: those whose agent must now be seen running."""
        return [
            p for p in self.panes if p.agent and p.pane_id and p.action in ("started", "added", "respawned")
        ]

    @property
    def left_alone(self) -> list[str]:
        """Windows not reconciled (see :data:`LEFT_ALONE`)."""
        return sorted({p.window for p in self.panes if p.action == LEFT_ALONE})


def pane_argv(layout: Layout, window: WindowSpec, pane: PaneSpec) -> list[str]:
    """The pane's process: ``/bin/sh -c SCRIPT``, or nothing for tmux's default shell.

    A pane in a worktree exports its name first (``$CLAUDE_RUN_WORKTREE``: its claude-run passes
    ``--worktree NAME`` to Claude). It is part of the pane's command, so a respawn of the pane with the
    command it was made with (``fleet doctor --fix``, the watch) keeps it.
    """
    script = pane_script(layout, window, pane)
    if pane.worktree is not None:
        body = script if script is not None else 'exec "${SHELL:-/bin/sh}"'
        script = f"export {WORKTREE_ENV}={shlex.quote(pane.worktree)}\n{body}"
    return [] if script is None else [PANE_SHELL, "-c", script]


def pane_dir(window: WindowSpec, pane: PaneSpec) -> Path:
    """The directory *pane* starts in, where its agent finds its project's sessions: its window's root
    (:meth:`Layout.sessions_roots` counts on it)."""
    return window.root


def pane_start(layout: Layout, window: WindowSpec, pane: PaneSpec) -> list[t.Any]:
    """How tmux starts *pane*: ``-c DIR`` and the pane's process, last in a ``new-session``,
    ``new-window``, ``split-window`` or ``respawn-pane``."""
    return ["-c", pane_dir(window, pane), *pane_argv(layout, window, pane)]


def _label(pane: PaneSpec) -> list[t.Any]:
    """Set the new pane's label (and mark an agent's pane); it is the current pane of this invocation."""
    args: list[t.Any] = [NEXT, "set-option", "-p", LABEL_OPTION, pane.label] if pane.label else []
    if pane.runs_agent:
        args += [NEXT, "set-option", "-p", AGENT_OPTION, "1"]
    return args


def check_roots(layout: Layout) -> None:
    problem = layout.root_problem()
    if problem:
        raise StartError(problem)


def run_on_project_start(layout: Layout) -> None:
    """tmuxinator's ``on_project_start``: every command, in the root, before every start."""
    env = dict(os.environ, FLEET_SOCKET=layout.socket_name, FLEET_SESSION=layout.name)
    for command in layout.on_project_start:
        try:
            done = subprocess.run(
                [PANE_SHELL, "-c", command],
                cwd=layout.root,
                env=env,
                stdin=subprocess.DEVNULL,
                timeout=ON_START_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise StartError(f"on_project_start command ran over {ON_START_TIMEOUT:g}s: {command}") from None
        if done.returncode != 0:
            raise StartError(f"on_project_start command failed (exit {done.returncode}): {command}")


def notify_command(layout: Layout, env: t.Mapping[str, str] | None = None) -> tuple[str, ...] | None:
    """The fleet's notify command: the layout's ``notify``, else ``$FLEET_NOTIFY_COMMAND``; none with
    ``notify: false``."""
    env = os.environ if env is None else env
    command = layout.notify_command
    raw = env.get(FLEET_NOTIFY_COMMAND_ENV, "").strip()
    if command is None and layout.notify_tmux and raw:
        try:
            command = tuple(shlex.split(raw))
        except ValueError as exc:
            raise StartError(f"${FLEET_NOTIFY_COMMAND_ENV}: {exc}; quote it as a shell would") from None
    return command


def notify_setting(layout: Layout, env: t.Mapping[str, str] | None = None) -> list[t.Any]:
    """Set the fleet's alert settings (session option read by the hooks): see :func:`notify_command`."""
    value = alerts.encode(notify_command(layout, env), layout.notify_on, tmux=layout.notify_tmux)
    return ["set-option", "-t", f"={layout.name}:", FLEET_NOTIFY_OPTION, value]


def _size() -> tuple[int, int]:
    """The detached session's size: this terminal's when there is one (panes must fit)."""
    if os.isatty(1):
        size = shutil.get_terminal_size(DEFAULT_SIZE)
        return max(size.columns, 80), max(size.lines - 1, 24)
    return DEFAULT_SIZE


def _window_commands(layout: Layout, window: WindowSpec, first: list[t.Any]) -> list[t.Any]:
    """*first* creates the window (printing window and pane id); then split, label, re-tile."""
    args: list[t.Any] = [*first, *_label(window.panes[0])]
    for pane in window.panes[1:]:
        args += [
            NEXT, "split-window", "-P", "-F", f"{FIELD_SEP}#{{pane_id}}",
            *pane_start(layout, window, pane), *_label(pane),
            NEXT, "select-layout", window.layout or "tiled",
        ]  # fmt: skip
    return args


def _ids(lines: list[str]) -> list[str]:
    return [line.rsplit(FIELD_SEP, 1)[-1] for line in lines if FIELD_SEP in line]


def build(layout: Layout, server: FleetServer, env: t.Mapping[str, str] | None = None) -> StartResult:
    """Create the whole fleet: server options, then one tmux invocation per window.

    The session is created with the fleet's environment (*env*, captured from the caller with this
    installation's scripts first on PATH): every pane it ever creates or respawns gets it.
    """
    check_roots(layout)
    renamed = look_alikes(layout, server)
    elsewhere = running_elsewhere(layout, server, layout.pane_ids())
    if renamed or elsewhere:
        where = (
            [f"session {', '.join(map(repr, renamed))} has its windows, labels and sessions"]
            if renamed
            else []
        )
        where += [f"{pane} runs as {running}" for pane, running in sorted(elsewhere.items())]
        raise StartError(
            f"fleet {layout.name!r} seems to run under another name ({'; '.join(where)}); if that is this fleet, "
            f"rename its session back (tmux -L {layout.socket_name} rename-session -t OLD {layout.name}); if not, "
            f"stop it, or give this layout its own socket_name; then start again"
        )
    notify = notify_setting(layout)
    fleet_env = captured(env)
    path = fleet_env.get("PATH")
    width, height = _size()
    reports: list[PaneReport] = []
    options: list[t.Any] = []
    for scope, name, value in fleet_options():
        options += ["set-option", scope, name, value, NEXT]
    # The hooks in every pane run this tmux, never one found on an agent-writable PATH.
    options += ["set-environment", "-g", TMUX_ENV, str(server.tmux_bin), NEXT]
    for number, window in enumerate(layout.windows):
        head = window.panes[0]
        create = (
            ["new-session", "-d", "-s", layout.name, "-n", window.name,
             "-x", width, "-y", height, *session_args(fleet_env)]
            if number == 0
            else ["new-window", "-t", f"={layout.name}:", "-n", window.name]
        )  # fmt: skip
        first = [*create, "-P", "-F", f"{FIELD_SEP}#{{pane_id}}", *pane_start(layout, window, head)]
        args = _window_commands(layout, window, first)
        if window.layout and len(window.panes) == 1:
            args += [NEXT, "select-layout", window.layout]
        if number == 0:
            args = options + args  # server-wide options before the first pane exists
            args += [NEXT, *notify]  # in the same invocation: before any hook can read it
            args += [NEXT, "set-option", "-t", f"={layout.name}:", LAYOUT_OPTION, str(layout.source)]
        # The first invocation may start the server: it keeps its first client's (the captured) environment.
        lines = server.run(*args, env=fleet_env) if number == 0 else server.run(*args, path=path)
        ids = _ids(lines)
        for pane, pane_id in zip(window.panes, ids):
            reports.append(PaneReport(window.name, pane.label, pane_id, "started", agent=pane.runs_agent))
    _select_startup(layout, server)
    return StartResult(True, tuple(reports))


def _select_startup(layout: Layout, server: FleetServer) -> None:
    window = layout.startup.name
    server.cmd("select-window", "-t", f"={layout.name}:={window}")
    if layout.startup_pane is not None:
        server.cmd("select-pane", "-t", f"={layout.name}:={window}.{layout.startup_pane}")


def reconcile(layout: Layout, server: FleetServer) -> StartResult:
    """Bring a running fleet in line with its layout: add what is missing, respawn dead panes."""
    check_roots(layout)
    # An edited layout's notify settings apply to the running fleet, and a fleet built before the
    # pane-died hook existed gets it: every agent's death is an alert.
    server.run(*notify_setting(layout), NEXT, "set-option", "-g", PANE_DIED_HOOK, pane_died_hook())
    existing = list_panes(server, layout.name)
    path = fleet_path(server, f"={layout.name}:")
    live = {p.identity for p in existing if p.identity and not p.dead}
    elsewhere = running_elsewhere(layout, server, [pane for pane in layout.pane_ids() if pane not in live])
    reports: list[PaneReport] = []
    for window in layout.windows:
        here = sorted((p for p in existing if p.window == window.name), key=lambda p: p.pane_index)
        if not here:
            first = [
                "new-window", "-t", f"={layout.name}:", "-n", window.name,
                "-P", "-F", f"{FIELD_SEP}#{{pane_id}}", *pane_start(layout, window, window.panes[0]),
            ]  # fmt: skip
            held = _held(layout, window, elsewhere)
            if held:
                reports += held
                continue
            ids = _ids(server.run(*_window_commands(layout, window, first), path=path))
            reports += [
                PaneReport(window.name, p.label, i, "added", "new window", agent=p.runs_agent)
                for p, i in zip(window.panes, ids)
            ]
            continue
        reports += _reconcile_window(layout, window, here, server, elsewhere, path)
    reports += extra_panes(layout, existing)
    return StartResult(False, tuple(reports))


def extra_panes(layout: Layout, existing: list[PaneInfo]) -> list[PaneReport]:
    """Panes of the running fleet that its layout no longer has: reported, never touched."""
    wanted = set(layout.pane_ids())
    reports = []
    for info in existing:
        if info.identity is None or info.identity in wanted:
            continue
        state = (
            "dead"
            if info.dead
            else f"still running (pid {info.pid}); stop it with fleet stop --pane {info.label}"
        )
        reports.append(PaneReport(info.window, info.label, info.pane_id, "not in the layout", state))
    return reports


def _held(layout: Layout, window: WindowSpec, elsewhere: t.Mapping[str, str]) -> list[PaneReport]:
    """*window*'s panes, left alone, when one of its agents runs outside it (else none)."""
    where = {pane.label: elsewhere.get(f"{layout.name}:{window.name}:{pane.label}") for pane in window.panes}
    if not any(where.values()):
        return []
    return [
        PaneReport(window.name, pane.label, "", LEFT_ALONE,
                   f"its agent runs outside this window: {where[pane.label]}" if where[pane.label]
                   else "another agent of this window runs outside it")
        for pane in window.panes
    ]  # fmt: skip


def _reconcile_window(
    layout: Layout,
    window: WindowSpec,
    here: list[PaneInfo],
    server: FleetServer,
    elsewhere: t.Mapping[str, str] = {},
    path: str | None = None,
) -> list[PaneReport]:
    shared = shared_labels(here)
    if shared:
        # Two panes with one label (R6, or an agent that relabelled its own pane): which is the agent
        # the layout means cannot be told, and a guess would respawn or add the wrong one.
        return [PaneReport(window.name, pane.label, "", LEFT_ALONE, shared) for pane in window.panes]
    held = _held(layout, window, elsewhere)
    if held:
        return held
    labelled = {info.label: info for info in here if info.label}
    unlabelled = [p for p in here if not p.label]
    window_id = here[0].window_id
    reports: list[PaneReport] = []
    for pane in window.panes:
        match = labelled.pop(pane.label, None) if pane.label else (unlabelled.pop(0) if unlabelled else None)
        if match is None:
            lines = server.run(
                "split-window", "-t", window_id, "-P", "-F", f"{FIELD_SEP}#{{pane_id}}",
                *pane_start(layout, window, pane), *_label(pane),
                NEXT, "select-layout", "-t", window_id, window.layout or "tiled", path=path,
            )  # fmt: skip
            reports.append(
                PaneReport(window.name, pane.label, _ids(lines)[0], "added", agent=pane.runs_agent)
            )
        elif match.dead and not pane.runs_agent:
            reports.append(
                PaneReport(
                    window.name, pane.label, match.pane_id, "idle", f"{match.death}; not an agent, left alone"
                )
            )
        elif match.dead:
            status = match.death
            respawn(server, match.pane_id, start=pane_start(layout, window, pane), path=path)
            reports.append(
                PaneReport(window.name, pane.label, match.pane_id, "respawned", status, agent=True)
            )
        else:
            reports.append(PaneReport(window.name, pane.label, match.pane_id, "running", f"pid {match.pid}"))
    return reports


PUBLISHED_OPTIONS = (PANE_OPTION, CONTEXT_OPTION, COST_OPTION, CLAUDE_OPTION)
"""What a pane's last agent published (state, context, cost, its Claude's sign of life): cleared when the
pane starts anew."""


def fleet_path(server: FleetServer, target: str) -> str:
    """The PATH the fleet's panes run with: the one ``fleet start`` captured into the fleet's session,
    else (a fleet built before it did) the caller's with this installation's scripts first."""
    return server.session_path(target) or captured().get("PATH", os.defpath)


def respawn(
    server: FleetServer,
    pane_id: str,
    *,
    start: t.Sequence[t.Any] = (),
    path: str | None = None,
) -> None:
    """Start a finished pane again: as *start* says (:func:`pane_start`, the layout's), else with the
    command the pane was created with, in the fleet's environment whoever asks (*path*, else the fleet
    session's)."""
    args: list[t.Any] = ["respawn-pane", "-k", "-t", pane_id, *start]
    for option in PUBLISHED_OPTIONS:
        args += [NEXT, "set-option", "-p", "-u", "-t", pane_id, option]
    server.run(*args, path=path or fleet_path(server, pane_id))


def start(layout: Layout, server: FleetServer, env: t.Mapping[str, str] | None = None) -> StartResult:
    """``fleet start``: build the fleet, or reconcile it when it is already running.

    The caller holds the fleet's lock (claude_shepherd.fleet.lock): nothing else changes the fleet
    between the look and the build.
    """
    run_on_project_start(layout)
    budgets.start(layout)  # before any agent runs: the hooks hold each one to its budgets from its first call
    if server.has_fleet_session(layout.name):
        return reconcile(layout, server)
    try:
        return build(layout, server, env)
    except TmuxError as exc:
        # Leave nothing half-built behind (a second start must not "reconcile" a broken fleet), but
        # only what this start built: a session another caller created first is theirs.
        if "duplicate session" not in str(exc) and server.has_fleet_session(layout.name):
            server.cmd("kill-session", "-t", f"={layout.name}")
        raise
