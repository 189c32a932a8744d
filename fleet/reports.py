"""What ``fleet start``, ``stop``, ``restart``, ``logs`` and ``attach`` did: one frozen report per verb.

A :class:`~claude_shepherd.fleet.handle.Fleet` returns these (``status`` and
``doctor`` return theirs, :mod:`claude_shepherd.fleet.handle`); the run's
:class:`~claude_shepherd.fleet.output.Printer` shows a report's :meth:`lines`,
then raises its :meth:`failure`, and with ``--json`` puts its :meth:`as_json`
in the envelope beside the lines (``report``). Progress said while a verb works
(``Starting fleet …``, a stop's signals) goes through the printer as it happens;
the outcome is the report.

Every line here is worded as the verbs always said it: tests pin them.
"""

from __future__ import annotations

import dataclasses
import typing as t
from dataclasses import dataclass

from claude_shepherd.fleet.output import FleetFailure

if t.TYPE_CHECKING:
    from claude_shepherd.supervisor.errors import ShepherdError


def _json(report: t.Any) -> dict[str, object]:
    return {"verb": report.verb, **dataclasses.asdict(report)}


@dataclass(frozen=True)
class PaneOutcome:
    """One pane of a start, a restart or a stop: what was done to it, and for an agent started, whether
    it was then seen running."""

    name: str
    """``window:label`` (a start), ``session:window:label`` (a stop)."""
    action: str
    """The builder's word (``started``, ``added``, ``respawned``, ``running``, ``idle``, ``left alone``)
    or the stop's outcome."""
    detail: str = ""
    launched: bool = False
    """An agent this start created or respawned (whose running is checked, unless ``--wait 0``)."""
    running: bool | None = None
    """Seen running (False: not within the wait; None: not checked)."""
    why: str = ""
    """What was seen instead of running, or what running looked like."""
    last_lines: tuple[str, ...] = ()
    """The screen's last lines of an agent not running."""
    waiting: str = ""
    """What its claude-run waits for before it starts Claude (a usage window, until when): no failure."""
    dialog: str = ""
    """The dialog of Claude Code's an agent not running waits at (``trust dialog for /path``)."""

    def lines(self, width: int) -> list[str]:
        head = f"  {self.name:<{width}}  {self.action}{f' ({self.detail})' if self.detail else ''}"
        if self.waiting:
            return [f"{head}, {self.waiting}"]
        if self.running is None:
            return [head + (" (not checked: --wait 0)" if self.launched else "")]
        if self.running:
            return [f"{head}, running ({self.why})"]
        if self.dialog:
            return [f"{head}, but NOT RUNNING: waiting: {self.dialog}"]
        return [
            f"{head}, but NOT RUNNING: {self.why}",
            *(f"  {'':<{width}}  | {line}" for line in self.last_lines),
        ]


def _width(panes: t.Sequence[PaneOutcome]) -> int:
    return max((len(p.name) for p in panes), default=0)


@dataclass(frozen=True)
class AttachReport:
    """How the person is shown the fleet: the command that takes the terminal, or the hint they type."""

    socket: str
    session: str
    pane: str | None = None
    hint: str = ""
    """``Attach with: …``: said when there is no terminal (or attaching was not wanted)."""
    note: str = ""
    """What a person attaching inside another tmux needs to know to get back out."""
    argv: tuple[str, ...] = ()
    """The command that shows the fleet (empty: none is run, the hint is said)."""
    program: str = ""
    """The program *argv* runs (a path), or empty: looked up in PATH (``ssh``)."""
    takes_terminal: bool = False
    """The command attaches a client (its environment drops the caller's own tmux)."""
    verb: str = "attach"

    def lines(self) -> list[str]:
        return [self.hint] if self.hint else [self.note] if self.note else []

    def failure(self) -> ShepherdError | None:
        return None

    def as_json(self) -> dict[str, object]:
        return _json(self)


@dataclass(frozen=True)
class StartReport:
    """``fleet start`` of this machine's fleet: each pane's outcome, and how the person is shown it."""

    fleet: str
    socket: str
    panes: tuple[PaneOutcome, ...]
    reconciled: bool
    """The fleet was running already: the start reconciled it with the layout."""
    changed: bool
    """Something was created, added or respawned."""
    left_alone: tuple[str, ...] = ()
    """Windows not reconciled: their panes share a label, or an agent runs elsewhere."""
    again: str = "fleet start"
    """The command that respawns what did not run (as a person types it)."""
    then: AttachReport | None = None
    """Once started: attach, or the hint (None under ``--json``)."""
    verb: str = "start"

    @property
    def not_running(self) -> list[str]:
        return [p.name for p in self.panes if p.running is False and not p.waiting and not p.dialog]

    @property
    def at_dialog(self) -> list[PaneOutcome]:
        """The agents whose Claude waits at one of Claude Code's dialogs."""
        return [p for p in self.panes if p.running is False and p.dialog]

    def lines(self) -> list[str]:
        width = _width(self.panes)
        lines = [line for pane in self.panes for line in pane.lines(width)]
        if self.failure() is None:
            if self.reconciled and not self.changed:
                held = any(p.waiting for p in self.panes)
                lines.append(
                    "Nothing to do: every agent is running"
                    + (" or waiting for a usage window (`fleet usage` says which)." if held else ".")
                )
            lines += self.then.lines() if self.then else []
        return lines

    def failure(self) -> ShepherdError | None:
        if self.left_alone:
            return FleetFailure(
                f"window {', '.join(self.left_alone)} was left alone (see above): an agent may have relabelled its "
                f"pane or renamed its window; give each pane its own label (tmux -L {self.socket} set-option -p -t %N "
                "@pane_label NAME) and each window its name, or stop the agent that runs elsewhere, and start again"
            )
        failed = self.not_running
        if failed:
            return FleetFailure(
                f"{len(failed)} agent(s) not running: {', '.join(failed)} (their last lines are above); fix the "
                f"cause and run `{self.again}` again, which respawns them"
            )
        waiting = self.at_dialog
        if waiting:
            label = waiting[0].name.rsplit(":", 1)[-1]
            return FleetFailure(
                f"{len(waiting)} agent(s) wait at a dialog of Claude Code's: "
                f"{', '.join(f'{p.name} ({p.dialog})' for p in waiting)}; answer it in the pane: "
                f"`fleet attach {self.fleet} --pane {label}` (trust only a folder you mean the agents to work in); "
                f"`fleet status {self.fleet}` shows when they run"
            )
        return None

    def as_json(self) -> dict[str, object]:
        return _json(self)


@dataclass(frozen=True)
class StopReport:
    """``fleet stop`` of this machine's fleet: each pane's outcome, or why there was nothing to stop."""

    socket: str
    sessions: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    """The agents asked for (``--pane``); empty: every one, and the session closed."""
    panes: tuple[PaneOutcome, ...] = ()
    seconds: float = 0.0
    grace: float = 0.0
    survivors: tuple[int, ...] = ()
    """Processes still there after SIGKILL."""
    forced: tuple[str, ...] = ()
    """Agents that ignored SIGTERM for the grace and were killed."""
    lingering: tuple[str, ...] = ()
    """The tmux server whose last session was closed, or what its hooks started, still running
    (each with its PID) when the stop gave up waiting for them, *server_wait* seconds later."""
    lingering_pids: tuple[int, ...] = ()
    server_wait: float = 0.0
    nothing: str = ""
    """Why nothing was stopped (no fleet running), said instead of the panes."""
    elsewhere: str = ""
    """What runs on after the stop though it is the layout's (a renamed session), which fails the stop."""
    verb: str = "stop"

    def lines(self) -> list[str]:
        if self.nothing:
            return [] if self.elsewhere else [self.nothing]
        width = _width(self.panes)
        lines = [line for pane in self.panes for line in pane.lines(width)]
        if self.survivors or self.lingering:  # the failure says what is left
            return lines
        if self.labels:
            it = "them" if len(self.labels) > 1 else "it"
            return [*lines, f"Stopped in {self.seconds:.1f}s; `fleet start` resumes {it}."]
        return [*lines, f"Stopped in {self.seconds:.1f}s; no process of the fleet is left."]

    def failure(self) -> ShepherdError | None:
        if self.survivors:
            pids = ", ".join(map(str, self.survivors))
            return FleetFailure(f"{len(self.survivors)} process(es) survived SIGKILL: {pids}")
        if self.lingering:
            return FleetFailure(
                f"{'; '.join(self.lingering)} still ran {self.server_wait:g}s after the fleet's session "
                f"closed (tmux's, ending by themselves: `ps -p {','.join(map(str, self.lingering_pids))}` "
                "shows what still runs)"
            )
        if self.forced:
            return FleetFailure(
                f"{len(self.forced)} agent(s) ignored SIGTERM for {self.grace:g}s and were killed: "
                f"{', '.join(self.forced)}; their sessions may not have saved their state"
            )
        return FleetFailure(self.elsewhere) if self.elsewhere else None

    def as_json(self) -> dict[str, object]:
        return _json(self)


@dataclass(frozen=True)
class RestartReport:
    """``fleet restart`` of this machine's fleet: what was stopped, then what was started again (None:
    the stop failed, so nothing was)."""

    stopped: StopReport
    started: StartReport | None
    waits: tuple[str, ...] = ()
    """Said between the two: a usage window at its threshold, whose reset the agents will wait for."""
    verb: str = "restart"

    def lines(self) -> list[str]:
        return [*self.stopped.lines(), *self.waits, *(self.started.lines() if self.started else ())]

    def failure(self) -> ShepherdError | None:
        return self.stopped.failure() or (self.started.failure() if self.started else None)

    def as_json(self) -> dict[str, object]:
        return _json(self)


@dataclass(frozen=True)
class LogsReport:
    """``fleet logs`` of one agent: its claude-run log and its screen, as each was when read."""

    identity: str
    """``session:window:label`` (``host/…`` on another host)."""
    path: str = ""
    """claude-run's log of the pane (empty: on another host, which said it)."""
    pane_id: str = ""
    log: tuple[str, ...] = ()
    screen: tuple[str, ...] = ()
    said: tuple[str, ...] = ()
    """Another host's lines, as it said them (its own headings included)."""
    status: int = 0
    """Another host's exit status (its error line went to stderr as it said it)."""
    verb: str = "logs"

    def lines(self) -> list[str]:
        if not self.path:
            return list(self.said)
        got = f" (last {len(self.log)} lines) <==" if self.log else " (none yet) <=="
        return [
            f"==> claude-run's log of {self.identity}: {self.path}{got}",
            *self.log,
            f"==> the screen of {self.identity} ({self.pane_id}, last {len(self.screen)} lines) <==",
            *self.screen,
        ]

    def failure(self) -> BaseException | None:
        return SystemExit(self.status) if self.status else None

    def as_json(self) -> dict[str, object]:
        return _json(self)


@dataclass(frozen=True)
class HostOutcome:
    """What one host of a fleet across hosts said it did (its own ``fleet VERB --json``)."""

    host: str
    lines: tuple[str, ...]
    """Its lines, as it said them (not yet under its name)."""
    problem: str | None = None
    """Why it did not do all that was asked (None: it did)."""
    report: object = None
    """Its own report's document (``as_json`` of the report above), when its version sends one."""
