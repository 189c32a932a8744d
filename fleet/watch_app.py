"""``fleet watch``'s screen: a Textual app over :mod:`claude_shepherd.fleet.watch`.

A table of every agent (needs-you first), a line of totals per fleet, and a
footer of keys: Enter attaches to the agent's pane, ``r`` restarts its agent,
``s`` stops it, ``l`` shows its recent output, ``q`` quits. Rows are gathered
in a worker thread once per interval, so a slow tmux server never freezes the
keys; restarts and stops run in workers too and report in a toast. Textual
draws in any terminal of 80x24 or more, over SSH included.
"""

from __future__ import annotations

import subprocess
import time
import typing as t

from rich.text import Text
from textual import events, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Log, Static
from textual.worker import Worker, WorkerState

from claude_shepherd.fleet import watch as w
from claude_shepherd.fleet.status import state_style
from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.printable import printable



class LogScreen(ModalScreen[None]):
    """An agent's recent output; Escape or q goes back to the table."""

    BINDINGS = [Binding("escape,q,l", "app.pop_screen", "Back")]
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


class AgentTable(DataTable[t.Any]):
    """The agents' table; its cursor is hidden while no agent is chosen (see :meth:`WatchApp.show`).

    A key that moves the cursor shows it again, on the row it names.
    """

    MOVES = frozenset({"up", "down", "pageup", "pagedown", "home", "end"})

    class Chosen(Message):
        """The cursor is back: an agent is chosen again."""

    def on_key(self, event: events.Key) -> None:
        if not self.show_cursor and event.key in self.MOVES:
            self.show_cursor = True
            self.post_message(self.Chosen())


class WatchApp(App[None]):
    """Every agent of every running fleet, refreshed every *interval* seconds."""

    TITLE = "fleet watch"
    CSS = """
    DataTable { height: 1fr; }
    #totals { height: auto; max-height: 6; color: $text-muted; padding: 0 1; }
    .heading { padding: 0 1; text-style: bold; }
    """
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("enter", "attach", "Attach", priority=True),
        Binding("r", "restart", "Restart"),
        Binding("s", "stop", "Stop"),
        Binding("l", "log", "Log"),
    ]

    def __init__(self, *, interval: float = 1.0, grace: float = 10.0) -> None:
        super().__init__()
        self.interval = interval
        self.grace = grace
        self.rows: list[w.AgentRow] = []
        self.gone = ""
        """The agent that was chosen when its row went away."""
        self.silent: list[str] = []
        """Fleet sockets whose server did not answer the last gathering."""

    def notify(
        self, message: str, *, title: str = "", severity: t.Any = "information", timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Every toast as plain text: they name agents and quote errors, which carry what agents wrote."""
        super().notify(printable(message), title=printable(title), severity=severity, timeout=timeout)

    def compose(self) -> ComposeResult:
        yield Static("fleet watch — gathering…", classes="heading", id="title", markup=False)
        table = AgentTable(cursor_type="row", zebra_stripes=True)
        table.add_columns(*w.COLUMNS)
        yield table
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
    def gather(self) -> w.Gathered:
        return w.gather()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Results of the workers, handled here in the app's thread (a worker thread never waits
        on the app: one still running when the app quits would keep the process alive)."""
        worker = event.worker
        if event.state == WorkerState.ERROR:
            error = worker.error
            self.notify(str(error) if isinstance(error, ShepherdError) else f"{type(error).__name__}: {error}",
                        severity="error")  # fmt: skip
        elif event.state == WorkerState.SUCCESS and worker.group == "gather":
            gathered = t.cast("w.Gathered", worker.result)
            self.show(gathered.rows, gathered.silent)
        elif event.state == WorkerState.SUCCESS and worker.group == "act":
            self.notify(str(worker.result))
            self.refresh_rows()

    def show(self, rows: list[w.AgentRow], silent: t.Sequence[str] = ()) -> None:
        """Redraw the table from *rows*; the chosen agent stays chosen wherever its row moved.

        When it is gone (stopped by someone else, its fleet ended), no row is
        chosen: a key pressed for it must not act on whichever agent took its
        place under the cursor. The cursor comes back with the next move.
        """
        table = self.query_one(AgentTable)
        current = self.selected()
        self.rows = rows
        self.silent = list(silent)
        table.clear()
        now = time.time()
        for row in rows:
            # Text, never a str: a DataTable parses str cells as markup, and agents name their phases.
            cells = [Text(cell) for cell in row.cells(now)]
            cells[2].stylize(state_style(row.state))
            table.add_row(*cells, key=row.key)
        if current is not None:
            index = next((i for i, row in enumerate(rows) if row.key == current.key), None)
            if index is not None:
                table.move_cursor(row=index, animate=False)
            else:
                table.show_cursor = False
                self.gone = current.name
        self.query_one("#title", Static).update(self.title_text())
        self.query_one("#totals", Static).update("\n".join(printable(line) for line in w.totals(rows)))

    def on_agent_table_chosen(self, _: AgentTable.Chosen) -> None:
        self.query_one("#title", Static).update(self.title_text())

    def title_text(self) -> str:
        rows = self.rows
        names = ", ".join(self.silent) if len(self.silent) <= 3 else f"{len(self.silent)} fleet sockets"
        silent = f" — {names} did not answer" if self.silent else ""
        if not rows:
            return printable(f"fleet watch — no fleet is running{silent}")
        waiting = sum(row.state == w.NEEDS_YOU for row in rows)
        title = f"fleet watch — {len(rows)} agent{'s' * (len(rows) != 1)}"
        title += f", {waiting} need{'s' * (waiting == 1)} you" if waiting else ""
        if not self.query_one(AgentTable).show_cursor:
            title += f" — {self.gone} is gone; ↑/↓ to choose an agent"
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
            self.notify(f"{self.gone} is gone from the fleet; choose an agent with ↑/↓ first", severity="warning")
        return row

    # ------------------------------------------------------------------ keys

    def action_attach(self) -> None:
        row = self.chosen()
        if row is None:
            return
        try:
            argv, takes_terminal = w.attach_command(row)
        except ShepherdError as exc:
            self.notify(str(exc), severity="error")
            return
        if not takes_terminal:
            subprocess.run(argv, check=False, stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
            return
        with self.suspend():  # the terminal is tmux's until the person detaches
            subprocess.run(argv, check=False, env=w.attach_env())
        self.refresh_rows()

    def action_restart(self) -> None:
        row = self.chosen()
        if row is not None:
            self.notify(f"Restarting {row.name} of {row.fleet}…")
            self.act(w.restart_agent, row)

    def action_stop(self) -> None:
        row = self.chosen()
        if row is not None:
            self.notify(f"Stopping {row.name} of {row.fleet}…")
            self.act(w.stop_agent, row)

    @work(thread=True, group="act", exit_on_error=False)
    def act(self, action: t.Callable[[w.AgentRow, float], str], row: w.AgentRow) -> str:
        return action(row, self.grace)

    def action_log(self) -> None:
        row = self.chosen()
        if row is None:
            return
        try:
            lines = w.log_lines(row)
        except ShepherdError as exc:
            self.notify(str(exc), severity="error")
            return
        self.push_screen(LogScreen(f"{row.fleet}:{row.status.window}:{row.name}", lines))


def run(*, interval: float, grace: float) -> None:
    WatchApp(interval=interval, grace=grace).run()
