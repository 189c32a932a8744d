"""``fleet watch``'s screen: a Textual app over :mod:`claude_shepherd.fleet.watch`.

The attention queue on top (what needs a person, most urgent first: the one list the web page and
the notify command share), a table of every agent (needs-you first), a line of totals per fleet, and a
footer of keys: Enter attaches to the agent's pane, ``r`` restarts its agent,
``s`` stops it (each asks first, naming the agent), ``l`` shows its recent
output, ``q`` quits. Rows are gathered in a worker thread once per interval,
and every key's tmux calls run in workers too, so a slow tmux server never
freezes the keys; restarts and stops hold the fleet's lock and report in a
toast. The columns are cut to the terminal's width, never dropped without a
word. Textual draws in any terminal of 80x24 or more, over SSH included.
"""

from __future__ import annotations

import subprocess
import time
import typing as t

from rich.text import Text
from textual import events, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Log, Static
from textual.worker import Worker, WorkerState, get_current_worker

from claude_shepherd.fleet import watch as w
from claude_shepherd.fleet.hosts.relay import Relay
from claude_shepherd.fleet.status_table import state_style
from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.printable import printable
from claude_shepherd.supervisor.tmux_names import NEEDS_YOU


class LogScreen(ModalScreen[None]):
    """An agent's recent output; Escape or q goes back to the table."""

    BINDINGS: t.ClassVar[list[BindingType]] = [Binding("escape,q,l", "app.pop_screen", "Back")]
    DEFAULT_CSS = "LogScreen { background: $background; } LogScreen Log { height: 1fr; }"

    def __init__(self, title: str, lines: list[str]) -> None:
        super().__init__()
        self.heading = printable(title)
        self.lines = lines

    def compose(self) -> ComposeResult:
        yield Static(f"{self.heading} — Escape to go back", classes="heading", markup=False)
        log = Log(highlight=False, auto_scroll=True)
        log.write_lines(self.lines or ["(no output yet)"])
        yield log
        yield Footer()


class ConfirmScreen(ModalScreen[bool]):
    """Asks before a key stops or restarts an agent, naming it: the same key again goes ahead, any
    other key (Escape too) or a click leaves the agent alone."""

    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Static { width: auto; max-width: 90%; padding: 1 2; border: round $warning; background: $surface; }
    """

    def __init__(self, question: str, key: str) -> None:
        super().__init__()
        self.question = printable(question)
        self.confirm_key = key

    def compose(self) -> ComposeResult:
        yield Static(
            f"{self.question}\nPress {self.confirm_key} again to confirm; any other key cancels.",
            markup=False,
        )

    def on_key(self, event: events.Key) -> None:
        event.stop()
        event.prevent_default()
        self.dismiss(event.key == self.confirm_key)

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.dismiss(False)


class AgentTable(DataTable[t.Any]):
    """The agents' table; its cursor is hidden while no agent is chosen (see :meth:`WatchApp.show`).

    A key that moves the cursor shows it again, on the row it names.
    """

    MOVES = frozenset({"up", "down", "pageup", "pagedown", "home", "end"})

    class Chosen(Message):
        """The cursor is back: an agent is chosen again."""

    class Resized(Message):
        """The table has a new width: the columns that fit are others."""

    def on_resize(self, _: events.Resize) -> None:
        self.post_message(self.Resized())

    def on_key(self, event: events.Key) -> None:
        if not self.show_cursor and event.key in self.MOVES:
            self.show_cursor = True
            self.post_message(self.Chosen())


class WatchApp(App[None]):
    """Every agent of every running fleet (or of the fleets in *only*), refreshed every *interval* seconds."""

    TITLE = "fleet watch"
    CSS = """
    DataTable { height: 1fr; }
    #totals { height: auto; max-height: 10; color: $text-muted; padding: 0 1; }
    #queue { height: auto; max-height: 7; padding: 0 1; color: $warning; }
    .heading { padding: 0 1; text-style: bold; }
    """
    BINDINGS: t.ClassVar[list[BindingType]] = [
        Binding("q", "quit", "Quit"),
        Binding("enter", "attach", "Attach", priority=True),
        Binding("r", "restart", "Restart"),
        Binding("s", "stop", "Stop"),
        Binding("l", "log", "Log"),
    ]

    def __init__(self, *, interval: float = 1.0, grace: float = 10.0, only: t.Sequence[str] = ()) -> None:
        super().__init__()
        self.interval = interval
        self.grace = grace
        self.only = tuple(only)
        """The fleets to show (session or socket names); all when empty."""
        self.rows: list[w.AgentRow] = []
        self.gone: w.AgentRow | None = None
        """The agent that was chosen when its row went away: chosen again if it comes back."""
        self.silent: list[str] = []
        """Fleet sockets whose server did not answer the last gathering."""
        self.fit = w.Fit((), ())
        """The columns the table has now."""
        self.relay = Relay()
        """Alerts of agents on other hosts, given here."""

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: t.Any = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Every toast as plain text, whatever *markup* says: toasts name agents and hosts and quote
        errors, which carry what agents and hosts wrote (read as markup, a label is a link or a click
        action). Safe from a worker thread, as Textual's own is."""
        super().notify(
            printable(message), title=printable(title), severity=severity, timeout=timeout, markup=False
        )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """No key of the table acts while a question or a log is on top of it: the key answers that."""
        return action not in ("attach", "restart", "stop", "log", "quit") or len(self.screen_stack) == 1

    def compose(self) -> ComposeResult:
        yield Static("fleet watch — gathering…", classes="heading", id="title", markup=False)
        yield Static("", id="queue", markup=False)
        yield AgentTable(cursor_type="row", zebra_stripes=True)
        yield Static("", id="totals", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(AgentTable).focus()
        self.refresh_rows()
        self.set_interval(self.interval, self.refresh_rows)

    # ------------------------------------------------------------------ rows

    def refresh_rows(self) -> None:
        """Gather again, unless a gathering is still under way: one that outlasts the interval (a
        server that does not answer) must finish and be shown, not be replaced before it can."""
        if not any(wk.group == "gather" and wk.state in (WorkerState.PENDING, WorkerState.RUNNING)
                   for wk in self.workers):  # fmt: skip
            self.gather()

    @work(thread=True, group="gather", exit_on_error=False)
    def gather(self) -> tuple[w.Gathered, list[str]]:
        """The rows, and the attention queue they leave (taken in as the web page takes them)."""
        gathered = w.gather(self.only, self.relay)
        try:
            queue = w.queue_lines(w.observed(gathered.rows, gathered.looked), time.time())
        except (ShepherdError, OSError) as exc:  # a queue that cannot be kept: the table still shows
            queue = [f"the attention queue cannot be kept: {exc}"]
        return gathered, queue

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Results of the workers, handled here in the app's thread (a worker thread never waits
        on the app: one still running when the app quits would keep the process alive)."""
        worker = event.worker
        if event.state == WorkerState.ERROR:
            error = worker.error
            self.notify(str(error) if isinstance(error, ShepherdError) else f"{type(error).__name__}: {error}",
                        severity="error")  # fmt: skip
        elif event.state == WorkerState.SUCCESS and worker.group == "gather":
            gathered, queue = t.cast("tuple[w.Gathered, list[str]]", worker.result)
            self.query_one("#queue", Static).update("\n".join(printable(line) for line in queue))
            self.show(gathered.rows, gathered.silent)
            for alert in gathered.alerts:  # an agent on another host changed into an alerting state
                self.bell()
                self.notify(alert, severity="warning")
        elif event.state == WorkerState.SUCCESS and worker.group == "attach" and worker.result is not None:
            self.attach(t.cast("list[str]", worker.result))
        elif event.state == WorkerState.SUCCESS and worker.group == "log" and len(self.screen_stack) == 1:
            title, lines = t.cast("tuple[str, list[str]]", worker.result)
            self.push_screen(LogScreen(title, lines))
        elif event.state == WorkerState.SUCCESS and worker.group == "act":
            self.notify(str(worker.result))
            self.refresh_rows()

    def show(self, rows: list[w.AgentRow], silent: t.Sequence[str] = ()) -> None:
        """Redraw the table from *rows*; the chosen agent stays chosen wherever its row moved.

        When it is gone (stopped by someone else, its fleet ended), no row is
        chosen: a key pressed for it must not act on whichever agent took its
        place under the cursor. The cursor comes back with the next move, or
        on the agent itself when its row comes back (its fleet started again).
        """
        table = self.query_one(AgentTable)
        current = self.selected()
        self.rows = rows
        self.silent = list(silent)
        self.draw(table, rows)
        if current is not None:
            index = self.index_of(current)
            if index is not None:
                table.move_cursor(row=index, animate=False)
            else:
                table.show_cursor = False
                self.gone = current
        elif self.gone is not None and not table.show_cursor:
            index = self.index_of(self.gone)
            if index is not None:
                table.show_cursor = True
                table.move_cursor(row=index, animate=False)
                self.gone = None
        self.query_one("#title", Static).update(self.title_text())
        self.query_one("#totals", Static).update("\n".join(printable(line) for line in w.totals(rows)))

    def draw(self, table: AgentTable, rows: list[w.AgentRow]) -> None:
        """The rows, in the columns that fit the table's width (FLEET only when there are two fleets)."""
        now = time.time()
        cells = [row.cells(now) for row in rows]
        scrollbar = table.styles.scrollbar_size_vertical if len(rows) > table.size.height - 1 else 0
        leave_out = (
            *(("FLEET",) if len(w.fleets_of(rows)) <= 1 else ()),
            *(() if any(r.remote for r in rows) else ("HOST",)),
            *(() if any(r.status.worktree for r in rows) else ("TREE",)),
        )
        fit = w.fit(cells, max(0, table.size.width - scrollbar), leave_out=leave_out)
        if fit != self.fit:
            table.clear(columns=True)
            for index, width in fit.shown:
                table.add_column(w.COLUMNS[index], width=width, key=w.COLUMNS[index])
            self.fit = fit
        else:
            table.clear()
        state = next((n for n, (index, _) in enumerate(fit.shown) if w.COLUMNS[index] == "STATE"), None)
        for row, row_cells in zip(rows, cells):
            # Text, never a str: a DataTable parses str cells as markup, and agents name their phases.
            texts = [Text(cell) for cell in fit.cut(row_cells)]
            if state is not None:
                texts[state].stylize(state_style(row.state))
            table.add_row(*texts, key=row.key)

    def index_of(self, agent: w.AgentRow) -> int | None:
        """Where *agent*'s row is now: its own pane's, else the one row of its identity (its fleet was
        started again); None when it is gone or two rows claim it (an agent can take another's label)."""
        index = next((i for i, row in enumerate(self.rows) if row.key == agent.key), None)
        if index is not None:
            return index
        same = [i for i, row in enumerate(self.rows) if row.identity == agent.identity]
        return same[0] if len(same) == 1 else None

    def on_agent_table_resized(self, _: AgentTable.Resized) -> None:
        if self.rows:  # before the first gathering the title says so: no rows to fit yet
            self.show(self.rows, self.silent)

    def on_agent_table_chosen(self, _: AgentTable.Chosen) -> None:
        self.gone = None
        self.query_one("#title", Static).update(self.title_text())

    def title_text(self) -> str:
        rows = self.rows
        names = ", ".join(self.silent) if len(self.silent) <= 3 else f"{len(self.silent)} fleet sockets"
        silent = f" — {names} did not answer" if self.silent else ""
        if not rows:
            what = f"no fleet named {', '.join(self.only)} is running" if self.only else "no fleet is running"
            return printable(f"fleet watch — {what}{silent}")
        fleets = w.fleets_of(rows)
        waiting = sum(row.state == NEEDS_YOU for row in rows)
        title = "fleet watch — " + (
            f"{fleets[0][0]}: " if len(fleets) == 1 else ""
        )  # its socket: in the totals
        title += f"{len(rows)} agent{'s' * (len(rows) != 1)}"
        title += f", {waiting} need{'s' * (waiting == 1)} you" if waiting else ""
        if self.fit.hidden:
            title += (
                f" — +{len(self.fit.hidden)} column{'s' * (len(self.fit.hidden) != 1)} "
                f"({', '.join(self.fit.hidden)}): widen"
            )
        if self.gone is not None and not self.query_one(AgentTable).show_cursor:
            # its whole identity: another fleet shown may have an agent of the same label
            title += f" — {self.gone.status.pane_id or self.gone.name} is gone; ↑/↓ to choose an agent"
        return printable(title + silent)

    def selected(self) -> w.AgentRow | None:
        """The chosen agent: the row under a visible cursor."""
        table = self.query_one(AgentTable)
        if not self.rows or not table.show_cursor or not 0 <= table.cursor_row < len(self.rows):
            return None
        return self.rows[table.cursor_row]

    def chosen(self) -> w.AgentRow | None:
        """:meth:`selected`, or None after telling the person why no key can act."""
        row = self.selected()
        if row is None and self.rows:
            name = (self.gone.status.pane_id or self.gone.name) if self.gone is not None else "The agent"
            self.notify(f"{name} is gone from the fleet; choose an agent with ↑/↓ first", severity="warning")
        return row

    # ------------------------------------------------------------------ keys

    def action_attach(self) -> None:
        row = self.chosen()
        if row is not None:
            self.find_pane(row)

    @work(thread=True, group="attach", exclusive=True, exit_on_error=False)
    def find_pane(self, row: w.AgentRow) -> list[str] | None:
        """Select *row*'s pane off the app's thread (a server that does not answer costs its timeout
        there); inside the fleet's tmux, switch to it too. The attach command that takes the
        terminal, for the app's thread to run; None when there is none."""
        argv, takes_terminal = w.attach_command(row)
        if not takes_terminal:
            subprocess.run(argv, check=False, stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
            return None
        return argv

    def attach(self, argv: list[str]) -> None:
        with self.suspend():  # the terminal is tmux's until the person detaches
            subprocess.run(argv, check=False, env=w.attach_env())
        self.refresh_rows()

    def action_restart(self) -> None:
        self.confirm("r", ("Restart", "Restarting"), w.restart_agent)

    def action_stop(self) -> None:
        self.confirm("s", ("Stop", "Stopping"), w.stop_agent)

    def confirm(self, key: str, verb: tuple[str, str], action: Action) -> None:
        """Ask before *action* ends an agent's Claude, naming the agent; act on that agent's own pane
        (the row it was asked about) once the person says yes."""
        row = self.chosen()
        if row is None:
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.notify(f"{verb[1]} {row.where}…")
                self.act(action, row)
            else:
                self.notify(f"{row.where} left alone")

        self.push_screen(ConfirmScreen(f"{verb[0]} {row.where}?", key), answered)

    @work(thread=True, group="act", exit_on_error=False)
    def act(self, action: Action, row: w.AgentRow) -> str:
        """*action* on *row*, off the app's thread: it waits for the fleet's lock and for the agent's grace."""
        worker = get_current_worker()
        return action(row, self.grace, told=lambda line: self.notify(line, severity="warning"),
                      cancelled=lambda: worker.is_cancelled)  # fmt: skip

    def action_log(self) -> None:
        row = self.chosen()
        if row is not None:
            self.read_log(row)

    @work(thread=True, group="log", exclusive=True, exit_on_error=False)
    def read_log(self, row: w.AgentRow) -> tuple[str, list[str]]:
        """*row*'s recent output, read off the app's thread: a server that does not answer costs
        its timeout there, not a frozen screen."""
        return row.where, w.log_lines(row)


class Action(t.Protocol):
    """What ``r`` and ``s`` do (:func:`~claude_shepherd.fleet.watch.restart_agent`, ``stop_agent``)."""

    def __call__(
        self, row: w.AgentRow, grace: float, *, told: w.Told = ..., cancelled: t.Callable[[], bool] = ...
    ) -> str: ...


def run(*, interval: float, grace: float, only: t.Sequence[str] = ()) -> None:
    WatchApp(interval=interval, grace=grace, only=only).run()
