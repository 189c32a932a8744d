"""A checked layout: frozen dataclasses, the keys a layout file may hold, and the script each pane runs.

What builds, stops and inspects a fleet reads these alone; none of it needs the parser
(:mod:`.build` makes a model from a file, :mod:`.cache` from JSON).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.session.paths import sessions_root
from claude_shepherd.supervisor.tmux_names import DEFAULT_ALERT_ON, FLEET_SOCKET, is_fleet_socket


class LayoutError(ShepherdError):
    """A layout file that cannot be used, described in one line."""


HONOURED_KEYS: tuple[str, ...] = (
    "name",
    "root",
    "socket_name",
    "tmux_command",
    "tmux_options",
    "on_project_start",
    "pre_window",
    "startup_window",
    "startup_pane",
    "attach",
    "windows",
    "notify",
    "notify_on",
    "budget",
)
WINDOW_KEYS: tuple[str, ...] = ("layout", "root", "pre", "panes", "host", "budget", "worktree")
PANE_KEYS: tuple[str, ...] = ("commands", "budget", "worktree")
"""The keys of a labelled pane written as a mapping (``LABEL: {commands: ..., budget: ..., worktree: ...}``)."""
BUDGET_PERIODS: tuple[str, ...] = ("life", "day", "week")
MAX_BUDGET = 1e6

REFUSED_KEYS: dict[str, str] = {
    "project_name": "deprecated by tmuxinator; use name",
    "project_root": "deprecated by tmuxinator; use root",
    "tabs": "deprecated by tmuxinator; use windows",
    "pre": "deprecated by tmuxinator; use on_project_start",
    "post": "deprecated by tmuxinator; run it after `fleet start` yourself",
    "pre_tab": "deprecated by tmuxinator; use pre_window",
    "cli_args": "deprecated by tmuxinator; use tmux_options",
    "rbenv": "deprecated by tmuxinator; use pre_window",
    "rvm": "deprecated by tmuxinator; use pre_window",
    "on_project_first_start": "fleet runs only on_project_start, before every start",
    "on_project_restart": "fleet runs only on_project_start, before every start",
    "on_project_exit": "the fleet outlives your terminal; nothing runs on detach",
    "on_project_stop": "`fleet stop` ends the agents itself; wrap it in a script instead",
    "socket_path": "fleets are found by socket name in tmux's socket directory; use socket_name (fleet or fleet-*)",
    "enable_pane_titles": "fleet draws every pane border itself (label, state, context %)",
    "pane_title_position": "fleet draws every pane border itself (label, state, context %)",
    "pane_title_format": "fleet draws every pane border itself (label, state, context %)",
    "tmux_detached": "not a layout setting; use `fleet start --no-attach`",
}
REFUSED_WINDOW_KEYS: dict[str, str] = {
    "synchronize": "would type the same keystrokes into every agent of the window",
}

TMUX_LAYOUTS = frozenset({"even-horizontal", "even-vertical", "main-horizontal", "main-vertical", "tiled"})
CUSTOM_LAYOUT = re.compile(r"^[0-9a-f]{4},\d+x\d+,\d+,\d+")
_RUNS_AGENT = re.compile(r"(?:^|[\s;&|(/])claude-run(?:$|[\s;&|)])")
_SHELL_CONTROL = re.compile(r"[;&|()`<>]|\$\(|^\s*(?:if|for|while|until|case|exec|\{|!)(?:\s|$)")
_ASSIGNMENT = re.compile(r"^\s*[A-Za-z_][A-Za-z0-9_]*=")
HOST = re.compile(
    r"^(?:[A-Za-z0-9._-]+@)?(?:[A-Za-z0-9_][A-Za-z0-9._-]*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$"
)
"""``[user@]name[:port]`` as a layout's ``host:`` takes it: nothing ``ssh`` could read as an option."""


# --------------------------------------------------------------------------- the model


@dataclass(frozen=True, kw_only=True)
class Budget:
    """USD an agent (or a window's, or the fleet's agents together) may spend over *per*."""

    usd: float
    per: str = "life"

    def text(self) -> str:
        """``$5.00``, ``$5.00 a day``, ``$5.00 a week``."""
        return f"${self.usd:.2f}" + {"day": " a day", "week": " a week"}.get(self.per, "")

    def written(self) -> object:
        """As a layout writes it: the number alone for the fleet's life."""
        return self.usd if self.per == "life" else {"usd": self.usd, "per": self.per}


def cents_share(usd: float, share: float) -> float:
    """*share* of *usd*, to the cent (at least one): a budget is a whole number of cents."""
    return max(0.01, round(usd * share, 2))


@dataclass(frozen=True, kw_only=True)
class PaneSpec:
    """One pane: its label (identity) and the commands it runs."""

    label: str | None = None
    commands: tuple[str, ...] = ()
    budget: Budget | None = None
    label_from_command: bool = False
    """The label was found in a ``tmux set-option ... @pane_label`` command (bash-era)."""
    worktree: str | None = None
    """The git worktree its Claude runs in (``claude -w NAME``), resolved: the pane's own ``worktree:``,
    else its window's, named after the agent when ``true`` (:func:`.build._worktrees`); None: the checkout."""
    line: int | None = None

    @property
    def runs_agent(self) -> bool:
        """Does this pane run a supervised Claude (``claude-run``)?"""
        return any(_RUNS_AGENT.search(command) for command in self.commands)


@dataclass(frozen=True, kw_only=True)
class WindowSpec:
    name: str
    layout: str | None = None
    root: Path
    """Absolute on this machine; for a window on another host, what ``root_text`` means there."""
    root_text: str | None = None
    """The window's ``root:`` as written (a window on another host resolves it there)."""
    host: str | None = None
    """The host the window runs on (``[user@]name[:port]``, anything ``ssh`` takes); None: this machine."""
    pre: tuple[str, ...] = ()
    panes: tuple[PaneSpec, ...]
    line: int | None = None
    root_line: int | None = None
    """The line of the window's own ``root:``; None when it inherits the layout's."""
    budget: Budget | None = None
    worktree: bool | str | None = None
    """The window's ``worktree:`` as written (each agent pane's own is resolved into :attr:`PaneSpec.worktree`)."""


@dataclass(frozen=True, kw_only=True)
class Layout:
    """A validated fleet layout; paths are absolute."""

    name: str
    source: Path
    root: Path
    socket_name: str = FLEET_SOCKET
    config_file: Path | None = None
    tmux_bin: str | None = None
    colors: int | None = None
    on_project_start: tuple[str, ...] = ()
    pre_window: tuple[str, ...] = ()
    startup_window: str | None = None
    startup_pane: int | None = None
    attach: bool = True
    windows: tuple[WindowSpec, ...]
    notify_command: tuple[str, ...] | None = None
    """The layout's ``notify`` command (argv with {fleet} {label} {state} {session}), if any."""
    notify_on: tuple[str, ...] = DEFAULT_ALERT_ON
    notify_tmux: bool = True
    """False with ``notify: false``: no tmux message, no bell, no command."""
    budget: Budget | None = None
    """The fleet's budget: what all its agents together may spend."""
    root_line: int | None = None
    """The line of the layout's ``root:``; None when the root is the working directory."""
    root_text: str | None = None
    """The layout's ``root:`` as written (windows on other hosts resolve it there)."""
    base: Path | None = None
    """The folder a relative ``root:`` (or none) was resolved from: where the layout was read, or where its
    fleet first started (:func:`claude_shepherd.fleet.known.where_it_ran`)."""
    digest: str = field(default="", compare=False)
    """The SHA-256 of the very bytes this layout was parsed from ("" for one not read from a file): what a
    start records, and what ``fleet start --all`` holds a layout to at boot."""

    @property
    def hosts(self) -> tuple[str | None, ...]:
        """The hosts the layout's windows run on, in order of first appearance; None is this machine."""
        return tuple(dict.fromkeys(w.host for w in self.windows))

    @property
    def spans_hosts(self) -> bool:
        """Does a window name a host? Then each host runs its own part (:mod:`claude_shepherd.fleet.hosts`)."""
        return any(w.host is not None for w in self.windows)

    def root_problem(self) -> str | None:
        """The first root that is not a directory, blamed on the ``root:`` that set it; None when all are.

        A window's root is relative to the layout's, so a missing layout root is the layout's fault
        whichever window meets it first.
        """
        for index, window in enumerate(self.windows):
            if window.host is not None or window.root.is_dir():  # another host's root is checked there
                continue
            if window.root_line is None or not self.root.is_dir():
                where = f"{self.source}:{self.root_line}" if self.root_line else str(self.source)
                return (
                    f"{where}: root: {self.root} is not a directory; create it or change the layout's root:"
                )
            return (
                f"{self.source}:{window.root_line}: windows[{index}].{window.name}.root: {window.root} is not "
                "a directory; create it or change the window's root:"
            )
        return None

    def window(self, name: str) -> WindowSpec | None:
        return next((w for w in self.windows if w.name == name), None)

    @property
    def pane_count(self) -> int:
        return sum(len(w.panes) for w in self.windows)

    def pane_ids(self) -> list[str]:
        """The fleet pane ids this layout creates (labelled panes only)."""
        return [f"{self.name}:{w.name}:{p.label}" for w in self.windows for p in w.panes if p.label]

    def sessions_roots(self) -> set[Path]:
        """Where the layout's agents keep their sessions (ledgers, budgets): the sessions root each finds
        from where its pane starts, its window's root (the builder's ``-c``)."""
        return {sessions_root(cwd=w.root, env=os.environ) for w in self.windows if w.panes}

    def with_socket(self, socket_name: str) -> Layout:
        if not is_fleet_socket(socket_name):
            raise LayoutError(f"--socket {socket_name!r} is not a fleet socket; use fleet or fleet-NAME")
        return replace(self, socket_name=socket_name)

    @property
    def startup(self) -> WindowSpec:
        """The window the fleet opens on: ``startup_window`` by name, else by index, else the first."""
        target = self.startup_window
        if not target:
            return self.windows[0]
        named = self.window(target)
        return named if named is not None else self.windows[int(target)]  # the parser checked the index

    def budget_share(self, host: str | None) -> Budget | None:
        """The part of the fleet's budget *host* holds: no host sees another's spend, so each holds
        its share by its labelled panes (a host without any holds none), and together they hold the
        fleet's budget. A fleet of this machine alone holds all of it."""
        budget = self.budget
        if budget is None or not self.spans_hosts:
            return budget
        total = sum(1 for w in self.windows for p in w.panes if p.label)
        mine = sum(1 for w in self.windows if w.host == host for p in w.panes if p.label)
        if not total or not mine:
            return None
        return Budget(usd=cents_share(budget.usd, mine / total), per=budget.per)

    def part(self, host: str | None) -> Layout:
        """What *host* runs (None: this machine), a layout for that host's ``fleet``
        (:func:`.build.to_document` writes it).

        Its windows only, never naming a host; not attached. This machine's part carries absolute
        roots; another host's carries the roots as written, resolved there (from the login's home
        when relative), and not what only this machine has: the ``-f`` config file, the tmux
        program, ``on_project_start``, and the notify command, which runs where the person is
        (:mod:`claude_shepherd.fleet.hosts.relay`); the host keeps the alert states and tmux's own
        bell and message. The fleet's budget becomes the host's share (:meth:`budget_share`).
        """
        windows = tuple(replace(w, host=None) for w in self.windows if w.host == host)
        if not windows:
            raise LayoutError(f"{self.source}: no window runs on {host or 'this machine'}")
        startup = self.startup
        opens_here = startup.host == host
        part = replace(
            self,
            budget=self.budget_share(host),
            windows=windows,
            attach=False,
            # An index would count this host's windows only: the window is named.
            startup_window=startup.name if opens_here and self.startup_window is not None else None,
            startup_pane=self.startup_pane if opens_here else None,
        )
        if host is None:
            here = tuple(replace(w, root_text=str(w.root)) for w in windows)
            return replace(part, root_text=str(self.root), windows=here)
        return replace(part, config_file=None, tmux_bin=None, on_project_start=(), notify_command=None)


PROVENANCE: frozenset[str] = frozenset({"source", "line", "root_line", "base"})
"""The fields of :class:`Layout`, :class:`WindowSpec` and :class:`PaneSpec` that say where the layout was
read from (its file, lines and folder), not what it is: a document carries none of them."""


def pane_script(layout: Layout, window: WindowSpec, pane: PaneSpec) -> str | None:
    """The ``/bin/sh -c`` script of a pane, or None for a plain shell.

    ``pre_window`` and the window's ``pre`` come first. The last command is
    ``exec``'d when it is a simple command, so the agent *is* the pane's
    process (its pid is ``pane_pid``, and a finished agent leaves a dead pane
    that ``remain-on-exit`` keeps readable).
    """
    pre = [*layout.pre_window, *window.pre]
    if not pane.commands:
        if not pre:
            return None
        return "\n".join([*pre, 'exec "${SHELL:-/bin/sh}"'])
    *head, last = pane.commands
    if not _SHELL_CONTROL.search(last) and not _ASSIGNMENT.match(last) and "\n" not in last:
        last = f"exec {last}"
    return "\n".join([*pre, *head, last])
