"""fleet watch: the rows it gathers, and the screen itself in a real terminal (a tmux pane).

The screen test runs ``fleet watch`` in a pane of a second private tmux server
(not a fleet socket) and drives it as a person would: send keys, read
``capture-pane``. The fleet it watches is a real one of stand-in agents.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import shutil
import tempfile
import time
import typing as t
import uuid
from pathlib import Path

import pytest
from support.fleet import FleetWorld
from support.waiting import wait_until

from claude_shepherd.fleet import watch as w
from claude_shepherd.fleet.pane_status import PaneStatus

BLANK = PaneStatus(
    session="duo", window="agents", label="A", pane="%1", pane_id="duo:agents:A", state="", supervisor_pid=None,
    supervisor_alive=False, claude_pid=None, session_dir=None, skill=None, phase=None, lifecycle=None,
    overflowed=None, context_usage=None, cost_usd=None, restarts=None, started_at=None,
)  # fmt: skip


def row(
    label: str, state: str = "", fleet: str = "duo", socket: str = "fleet", **fields: t.Any
) -> w.AgentRow:
    status = dataclasses.replace(BLANK, label=label, state=state, session=fleet, pane=f"%{label}",
                                 pane_id=f"{fleet}:agents:{label}", **fields)  # fmt: skip
    return w.AgentRow(socket, status)


@pytest.fixture
def no_fleets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """TMUX_TMPDIR is an empty folder: no fleet of the user's is looked at (and the keys find none)."""
    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path))


def test_rows_are_ordered_needs_you_first_then_in_layout_order() -> None:
    rows = [row("A", "done"), row("B"), row("C", "working"), row("D", "exited 1"), row("E", "needs-you"),
            row("F", "error"), row("G", "needs-you", fleet="alpha")]  # fmt: skip
    assert [r.name for r in w.ordered(rows)] == ["G", "E", "F", "D", "C", "A", "B"]
    assert row("D", "exited 1").state == "exited"


def test_a_budget_shows_beside_the_spend_and_paused_agents_come_first_and_are_counted() -> None:
    own = row("A", "paused", cost_usd=1.1, budget_usd=1.0, budget_spent=1.1, budget_scope="pane", paused=True)
    shared = row("B", "working", cost_usd=0.4, budget_usd=5.0, budget_spent=2.5, budget_scope="window",
                 budget_per="day")  # fmt: skip
    assert own.cells(now=0)[5] == "$1.10/1.00"
    assert shared.cells(now=0)[5] == "$0.40 ($2.50/5.00 a day)", "its own spend, then the window's"
    assert row("C", cost_usd=None).cells(now=0)[5] == "—", "nothing measured: unknown, not $0"
    assert [r.name for r in w.ordered([shared, row("D", "done"), own])] == ["A", "B", "D"]
    assert w.totals([own, shared]) == ["duo: 2 agents · 1 paused · 1 working · $1.50"]


def test_cells_say_unknown_plainly() -> None:
    full = row("SDK", "working", context_usage=0.456, cost_usd=3.2, session_dir="/p/sessions/2026_11_22_docs-rewrite",
               skill="implement", phase="Phase 3: Build the thing properly", started_at=1000.0, restarts=2)  # fmt: skip
    assert full.cells(now=1000.0 + 3 * 3600 + 5 * 60) == (
        "local", "duo", "SDK", "working", "46%", "$3.20", "docs-rewrite", "implement", "Phase 3: Build the thing properly",
        "3h05m", "2", "—",
    )  # fmt: skip
    assert row("B").cells(now=0) == ("local", "duo", "B", "—", "—", "—", "—", "—", "—", "—", "—", "—")
    assert row("T", worktree="T", branch="worktree-T", unsaved="1 untracked file (x)").cells(now=0)[-1] == (
        "worktree-T*"
    ), "an agent's worktree branch, * when it holds uncommitted work"
    there = dataclasses.replace(row("B"), host="box")
    assert there.cells(now=0)[:3] == ("box", "duo", "B") and there.where == "box/duo:agents:B"
    assert there.identity != row("B").identity, "two hosts may use the same labels"
    assert [w.uptime(s) for s in (0, 59, 60, 3599, 3600, 86400 + 4 * 3600, 12 * 86400 + 5)] == [
        "0s",
        "59s",
        "1m",
        "59m",
        "1h00m",
        "1d04h",
        "12d",
    ]


LONG = row("Documentation", "needs-you", fleet="agents-2x2", context_usage=0.45, cost_usd=123.45,
           session_dir="/p/sessions/2026_11_22_docs-rewrite-long", skill="implement",
           phase="Phase 3: Build the thing properly", started_at=1.0, restarts=12)  # fmt: skip
OTHER = row("SDK", "working", fleet="ops", socket="fleet-ops")


def widths(fit: w.Fit) -> dict[str, int]:
    return {w.COLUMNS[index]: width for index, width in fit.shown}


HERE = ("HOST", "TREE")
"""What the watch leaves out when every agent runs on this machine, none in a worktree."""
LOCAL_COLUMNS = [c for c in w.COLUMNS if c not in HERE]


def test_text_columns_are_cut_before_any_column_is_hidden_and_a_hidden_one_is_named() -> None:
    cells = [r.cells(now=2 * 86400) for r in (LONG, OTHER)]
    wide = widths(w.fit(cells, 200))
    assert (
        list(wide) == list(w.COLUMNS) and wide["PHASE"] == w.WIDEST and wide["AGENT"] == len("Documentation")
    )

    at80 = w.fit(cells, 80, leave_out=HERE)
    assert at80.hidden == () and list(widths(at80)) == LOCAL_COLUMNS, "every column at 80 columns, FLEET too"
    assert sum(width + w.PADDING for width in widths(at80).values()) <= 80
    shown = at80.cut(cells[0])
    assert shown[2:5] == ["needs-you", "45%", "$123.45"] and shown[8:] == ["1d23h", "12"], (
        "numbers are never cut"
    )
    assert shown[7].endswith("…") and shown[7].startswith("Pha"), shown
    remote = [dataclasses.replace(OTHER, host="buildbox").cells(now=0), *cells]
    spread = w.fit(remote, 80, leave_out=("TREE",))
    assert "HOST" in widths(spread) and spread.hidden == ("SKILL",), "HOST too, once an agent runs elsewhere"
    assert w.fit(remote, 80).hidden == ("TREE", "SKILL"), "a worktree's branch goes first"
    assert {name: widths(at80)[name] for name in ("SESSION", "SKILL", "PHASE")} == {
        "SESSION": 7,
        "SKILL": 5,
        "PHASE": 5,
    }, "what the agent does is cut to the bone before its name is"

    narrow = w.fit(cells, 64, leave_out=HERE)
    assert narrow.hidden == ("SKILL", "SESSION") and "SKILL" not in widths(narrow)
    assert sum(width + w.PADDING for width in widths(narrow).values()) <= 64
    assert w.fit(cells, 10).hidden == w.HIDDEN_FIRST, "AGENT and STATE stay, however narrow"

    one = w.fit(cells[:1], 80, leave_out=("FLEET", *HERE))
    assert "FLEET" not in widths(one) and one.hidden == () and widths(one)["AGENT"] == len("Documentation")
    assert w.cut("日本語のラベル", 6) == "日本…" and w.cut("ok", 2) == "ok", (
        "cut by the cells a terminal draws"
    )


@pytest.mark.usefixtures("no_fleets")
@pytest.mark.slow  # over a second
def test_at_80_columns_the_watch_shows_every_column_and_says_when_it_cannot() -> None:
    """One fleet: no FLEET column (the title names it); two: FLEET too; narrower: a hidden column is named."""
    from textual.widgets import Static

    from claude_shepherd.fleet.watch_app import AgentTable, WatchApp

    async def scenario(size: tuple[int, int], rows: list[w.AgentRow]) -> tuple[list[str], str, bool]:
        app = WatchApp(interval=60)
        async with app.run_test(size=size) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            app.show(rows)
            await pilot.pause()
            table = app.query_one(AgentTable)
            labels = [column.label.plain for column in table.columns.values()]
            fits = table.virtual_size.width <= table.scrollable_content_region.width
            return labels, str(app.query_one("#title", Static).render()), fits

    long = w.AgentRow(LONG.socket, dataclasses.replace(LONG.status, started_at=time.time() - 2 * 86400))
    labels, title, fits = asyncio.run(scenario((80, 24), [long, row("API", fleet="agents-2x2")]))
    assert labels == ["AGENT", "STATE", "CTX", "COST", "SESSION", "SKILL", "PHASE", "UP", "RST"] and fits
    assert title == "fleet watch — agents-2x2: 2 agents, 1 needs you"
    labels, title, fits = asyncio.run(scenario((80, 24), [long, OTHER]))
    assert labels == LOCAL_COLUMNS and fits and "widen" not in title
    labels, title, fits = asyncio.run(scenario((66, 24), [long, OTHER]))
    assert fits and "SKILL" not in labels and "+2 columns (SKILL, SESSION): widen" in title, title


@pytest.mark.usefixtures("no_fleets")
def test_the_columns_follow_the_terminals_width() -> None:
    from textual.widgets import Static

    from claude_shepherd.fleet.watch_app import AgentTable, WatchApp

    async def scenario() -> list[tuple[int, str]]:
        app = WatchApp(interval=60)
        seen = []
        async with app.run_test(size=(80, 24)) as pilot:
            await app.workers.wait_for_complete()
            app.show([LONG, OTHER])
            for width in (66, 100):
                await pilot.resize_terminal(width, 24)
                await until(
                    pilot,
                    lambda: app.query_one(AgentTable).size.width == width and app.fit.shown,  # noqa: B023
                    "a redraw",
                )
                await pilot.pause()
                seen.append(
                    (len(app.query_one(AgentTable).columns), str(app.query_one("#title", Static).render()))
                )
        return seen

    (narrow, narrow_title), (wide, wide_title) = asyncio.run(scenario())
    assert (narrow, wide) == (len(LOCAL_COLUMNS) - 2, len(LOCAL_COLUMNS))
    assert "+2 columns (SKILL, SESSION): widen" in narrow_title and "widen" not in wide_title


def test_totals_per_fleet() -> None:
    rows = [row("A", "needs-you", cost_usd=1.5), row("B", "working", cost_usd=0.25), row("C"),
            row("X", "error", fleet="ops", socket="fleet-ops")]  # fmt: skip
    assert w.totals(rows) == [
        "duo: 3 agents · 1 needs-you · 1 working · $1.75",
        "ops (fleet-ops): 1 agent · 1 error · $0.00",
    ]


def test_totals_of_a_fleet_across_hosts_give_each_host_a_line_that_fits_80_columns() -> None:
    rows = [row("A", "needs-you", cost_usd=1.5), row("B", "working", cost_usd=0.25),
            *(dataclasses.replace(row(x, "error", cost_usd=2.0), host="dev@nc4box.example.org") for x in "XY")]  # fmt: skip
    lines = w.totals(rows)
    assert lines == [
        "duo: 4 agents · 1 needs-you · 2 error · 1 working · $5.75",
        "  local: 2 agents · 1 needs-you · 1 working · $1.75",
        "  dev@nc4box.example.org: 2 agents · 2 error · $4.00",
    ]
    assert max(map(len, lines)) <= 78, "the watch pads its totals by a column each side"


def test_watch_in_a_real_terminal_attach_restart_stop_log_quit(world: FleetWorld) -> None:
    panes = "".join(f"        - {label}: claude-run\n" for label in ("A", "B", "C"))
    world.layout("duo", f"  - agents:\n      layout: tiled\n      panes:\n{panes}")
    activate = 'L=$(fleet pane-id | cut -d: -f3) && CLAUDE_CODE_SESSION_ID="conv-$L" session activate "sessions/S_$L" implement'
    status_input = json.dumps({"cwd": str(world.project), "cost": {"total_cost_usd": 1.239}})
    for label in ("A", "B", "C"):
        steps: list[dict[str, t.Any]] = [{"run": ["sh", "-c", activate]}, {"transcript": f"conv-{label}"}]
        if label == "B":  # B asks for permission: it needs the person
            steps += [{"run": ["claude-hook", "status-line"], "stdin": status_input},
                      {"run": ["claude-hook", "notification"], "stdin": '{"notification_type": "permission_prompt"}'}]  # fmt: skip
        world.plan(label, [*steps, {"mark": "ready"}, {"wait": None}])
    assert world.fleet("start", "duo", "--no-attach").returncode == 0
    for label in ("A", "B", "C"):
        world.wait_event(label, "mark", name="ready")

    outer = f"watch-pytest-{uuid.uuid4().hex}"  # a terminal for the watch: its own server, not a fleet
    exit_file = world.base / "watch.status"

    def screen() -> str:
        return world.tmux("capture-pane", "-p", "-t", "view", socket=outer)

    def shows(*texts: str, timeout: float = 15) -> str:
        def found() -> str | None:
            now = screen()
            return now if all(text in now for text in texts) else None

        try:
            return wait_until(found, timeout, f"{texts} on the watch's screen")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the screen:\n{screen()}") from None

    def key(name: str) -> None:
        world.tmux("send-keys", "-t", "view", name, socket=outer)

    try:
        world.tmux("-f", "/dev/null", "new-session", "-d", "-s", "view", "-x", "80", "-y", "24",
                   f"{world.env['PATH'].split(':')[0]}/fleet watch --interval 0.3; echo $? > {exit_file}", socket=outer)  # fmt: skip
        first = shows(
            "duo: 3 agents, 1 needs you", "$1.24", "3 agents · 1 needs-you ·"
        )  # the totals: drawn last
        lines = first.splitlines()
        assert lines[1].strip().startswith("! B needs you — duo:agents:B, waiting"), (
            "the attention queue on top"
        )
        head = next(i for i, line in enumerate(lines) if line.split()[:2] == ["AGENT", "STATE"])
        lines = lines[head - 1 :]  # the table, as without the queue
        assert lines[1].split() == [
            "AGENT",
            "STATE",
            "CTX",
            "COST",
            "SESSION",
            "SKILL",
            "PHASE",
            "UP",
            "RST",
        ], "every column at 80 columns; FLEET only when there are two fleets"
        assert "needs-you" in lines[2] and " B " in lines[2], "needs-you first, and the cursor is on it"
        assert f"duo ({world.socket}): 3 agents · 1 needs-you · $1.24" in " ".join(first.split()), "totals"
        assert max(len(line) for line in lines) <= 80

        key("l")  # B's log: claude-run's own lines
        shows("[claude-run] Fleet pane ID: duo:agents:B", "Escape")
        key("Escape")
        shows("AGENT", "STATE")

        key("r")  # restart B, once the person says yes: it resumes its own conversation
        shows("Restart duo:agents:B?", "Press r again")
        assert len(world.starts("B")) == 1, "nothing restarted before the answer"
        key("r")
        _, second_start = world.wait_starts("B", 2)
        assert second_start["argv"][second_start["argv"].index("--resume") + 1] == "conv-B"
        assert len(world.starts("A")) == len(world.starts("C")) == 1, "only B was restarted"
        shows("restarted")

        # B's state is cleared by the restart: rows are now A, B, C in layout order, the cursor still on B.
        def order() -> list[str]:
            now = screen().splitlines()
            head = next((i for i, line in enumerate(now) if line.split()[:2] == ["AGENT", "STATE"]), 0)
            return [line.split()[0] for line in now[head + 1 : head + 4] if len(line.split()) > 3]

        wait_until(
            lambda: (order() == ["A", "B", "C"] and "exited" not in screen()) or None, 15, "rows A, B, C"
        )

        def attach_to(label: str) -> bool:
            """Enter on the chosen row: did the terminal show the fleet with *label*'s pane selected?"""
            key("Enter")
            wait_until(
                lambda: world.tmux("list-clients", "-F", "#{client_name}") or None,
                15,
                "a client on the fleet",
            )
            try:
                wait_until(lambda: world.panes()[label]["pane_active"] == "1" or None, 3, f"{label}'s pane")
                return True
            except AssertionError:
                return False
            finally:
                world.tmux("detach-client", "-s", "duo")
                shows("AGENT", "STATE")  # back in the watch once the person detaches

        # -> C, the last row, wherever the cursor was: B's restart may have hidden it, and a refresh
        # may land between two keys; Enter always attaches to the row chosen, and C is reached.
        for _ in range(4):
            for _ in range(3):
                key("Down")
            if attach_to("C"):
                break
        else:
            raise AssertionError(f"Enter never showed C's pane; the screen:\n{screen()}")

        key("s")  # stop C: its pane stays, its agent exits
        shows("Stop duo:agents:C?")
        key("s")
        wait_until(lambda: world.panes()["C"]["pane_dead"] == "1" or None, 20, "C's agent stopped")
        shows("exited")
        assert world.panes()["A"]["pane_dead"] == "0" and world.panes()["B"]["pane_dead"] == "0"

        key("q")
        status = wait_until(
            lambda: exit_file.exists() and exit_file.read_text().strip(), 10, "the watch to quit"
        )
        assert status == "0", screen()
    finally:
        world.tmux("kill-server", socket=outer, check=False)


def test_watch_without_a_terminal_says_what_to_use(world: FleetWorld) -> None:
    done = world.fleet("watch")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "fleet: error: fleet watch needs a terminal; in scripts use fleet status --json\n"
    empty = world.fleet("watch", "--fleet", " ")
    assert (empty.returncode, empty.stderr) == (
        2,
        "fleet: error: --fleet needs a fleet's name or socket (`fleet status` names them)\n",
    )


def test_fleet_NAME_shows_that_fleet_only(world: FleetWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    """--fleet takes a fleet's name or its socket; the watch says when no such fleet runs."""
    from textual.widgets import Static

    from claude_shepherd.fleet.watch_app import WatchApp

    world.layout("duo", "  - agents:\n      panes:\n        - A: claude-run\n")
    world.plan("A", [{"mark": "ready"}, {"wait": None}])
    assert world.fleet("start", "duo", "--no-attach").returncode == 0
    world.wait_event("A", "mark", name="ready")
    monkeypatch.setenv("TMUX_TMPDIR", str(world.tmux_tmpdir))
    assert (
        [r.name for r in w.gather(["duo"]).rows] == [r.name for r in w.gather([world.socket]).rows] == ["A"]
    )
    assert w.gather(["ops", "fleet-ops"]).rows == []

    async def scenario() -> str:
        app = WatchApp(interval=60, only=["ops"])
        async with app.run_test(size=(80, 24)) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            return str(app.query_one("#title", Static).render())

    assert asyncio.run(scenario()) == "fleet watch — no fleet named ops is running"


@pytest.mark.usefixtures("no_fleets")
def test_what_agents_write_is_shown_as_text_never_as_markup() -> None:
    """Labels, skills and phases are the agents' words: markup in them neither styles nor crashes the view."""
    from textual.widgets import DataTable, Static

    from claude_shepherd.fleet.watch_app import WatchApp

    hostile = row("[/]", "needs-you", fleet="[bold]f", skill="[link=https://x]s[/link]", phase="[red]p[/")

    async def scenario() -> tuple[list[str], str, str]:
        app = WatchApp(interval=60)
        async with app.run_test(size=(100, 24)) as pilot:
            await app.workers.wait_for_complete()  # the first gathering (no fleet here) is over
            await pilot.pause()
            app.show([hostile])
            await pilot.pause()
            cells = [cell.plain for cell in app.query_one(DataTable).get_row_at(0)]
            return (
                cells,
                str(app.query_one("#totals", Static).render()),
                str(app.query_one("#title", Static).render()),
            )

    cells, totals, title = asyncio.run(scenario())
    assert cells[:2] == ["[/]", "needs-you"] and cells[5:7] == ["[link=https://x]s[/link]", "[red]p[/"]
    assert totals.startswith("[bold]f: 1 agent") and title.startswith("fleet watch — [bold]f: 1 agent")


HOSTILE_PHASE = "3: \x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J[/x]Build\u202e"
"""An OSC 52 clipboard write, a screen clear, a markup closing tag and a bidi override."""


def test_fleet_status_shows_what_agents_write_as_text(capsys: pytest.CaptureFixture[str]) -> None:
    from claude_shepherd.fleet.status_table import render

    hostile = dataclasses.replace(BLANK, label="[bold]A\x1b]0;title\x07", skill="[red]s", phase=HOSTILE_PHASE,
                                  state="needs-you", lifecycle="active\x1b[31m")  # fmt: skip
    render([hostile])
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out
    assert "agents:[bold]A\ufffd]0;title\ufffd" in out and "[red]s" in out
    assert "3: \ufffd]52;c;cm0gLXJmIH4=\ufffd\ufffd[2J[/x]Build\ufffd" in " ".join(out.split())


def test_watch_cells_carry_no_escapes() -> None:
    cells = row("A\x1b[2J", "needs-you\x1b", phase=HOSTILE_PHASE, skill="\x1b]8;;http://x\x07s").cells(now=0)
    assert not any(c in cell for cell in cells for c in "\x1b\x07\u202e"), cells
    assert cells[2] == "A\ufffd[2J" and cells[3] == "needs-you\ufffd"


@pytest.mark.usefixtures("no_fleets")
def test_a_key_for_an_agent_that_went_away_acts_on_no_other() -> None:
    """The chosen agent's row vanished under the cursor: r/s/Enter/l refuse until the person chooses again."""
    from claude_shepherd.fleet.watch_app import AgentTable, WatchApp

    a, b, c = row("A", "needs-you"), row("B", "working"), row("C", "working")

    async def scenario() -> dict[str, t.Any]:
        app = WatchApp(interval=60)
        seen: dict[str, t.Any] = {}
        async with app.run_test(size=(100, 24)) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            app.show([a, b, c])
            await pilot.press("down")
            await pilot.pause()
            seen["before"] = app.selected()
            app.show([a, c])  # B was stopped from elsewhere
            await pilot.pause()
            seen["after"] = app.selected()
            seen["title"] = str(app.query_one("#title", Static).render())
            for key in ("s", "r", "l", "enter"):
                await pilot.press(key)
            await pilot.pause()
            seen["acting"] = [wk for wk in app.workers if wk.group == "act"]
            seen["screens"] = len(app.screen_stack)
            seen["told"] = [n.message for n in app._notifications]
            app.show([c, a])  # a refresh while no agent is chosen chooses none
            await pilot.pause()
            seen["still"] = app.selected()
            await pilot.press("down")
            await pilot.pause()
            seen["again"] = app.selected()
            seen["cursor"] = app.query_one(AgentTable).show_cursor
            seen["title_again"] = str(app.query_one("#title", Static).render())
        return seen

    from textual.widgets import Static

    seen = asyncio.run(scenario())
    assert seen["before"] is not None and seen["before"].name == "B"
    assert seen["after"] is None and "duo:agents:B is gone" in seen["title"]
    assert seen["acting"] == [] and seen["screens"] == 1, "no stop, restart or log of another agent"
    assert seen["told"].count("duo:agents:B is gone from the fleet; choose an agent with ↑/↓ first") == 4
    assert seen["still"] is None
    assert seen["cursor"] and seen["again"] is not None and "gone" not in seen["title_again"]


@pytest.mark.usefixtures("no_fleets")
@pytest.mark.slow  # over a second
def test_nothing_on_the_watch_screen_carries_an_agents_escapes() -> None:
    """Title, totals, toasts and the log's heading name agents too: all of it is shown safe."""
    from textual.widgets import Static

    from claude_shepherd.fleet.watch_app import LogScreen, WatchApp

    hostile = row("A\x1b]52;c;UFdO\x1b\\", "needs-you", fleet="f\x1b]2;PWN\x1b\\\u202e")
    other = row("B", "working")

    async def scenario() -> list[str]:
        app = WatchApp(interval=60)
        shown: list[str] = []
        async with app.run_test(size=(100, 24)) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            app.show([hostile, other])
            await pilot.pause()
            shown.append(str(app.query_one("#totals", Static).render()))
            await pilot.press(
                "s", "s"
            )  # the question and a toast name the agent; the stop finds no server here
            await app.workers.wait_for_complete()
            await pilot.pause()
            app.show([other])  # the chosen agent went away: the title names it
            await pilot.pause()
            shown.append(str(app.query_one("#title", Static).render()))
            await pilot.press("r")
            await pilot.pause()
            shown += [n.message for n in app._notifications]
            app.show([hostile, other])
            await pilot.pause()  # back: chosen again
            await pilot.press("r")
            await pilot.pause()
            shown += [str(static.render()) for static in app.screen.query(Static)]
            await pilot.press("escape")
            app.push_screen(LogScreen(f"{hostile.fleet}:agents:{hostile.name}", ["x"]))
            await pilot.pause()
            shown.append(str(app.screen.query_one(".heading", Static).render()))
        return shown

    shown = asyncio.run(scenario())
    assert any("A\ufffd]52;c;UFdO\ufffd\\" in text for text in shown), shown
    assert len(shown) >= 5 and not any(c in text for text in shown for c in "\x1b\u202e"), shown


def test_a_fleet_server_that_does_not_answer_neither_freezes_the_watch_nor_hides_the_others(
    world: FleetWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fleet socket nobody answers on costs each gathering its deadline; the rows still come, and the
    title names the silent socket."""
    import socket as sockets

    from textual.widgets import Static

    from claude_shepherd.fleet.watch_app import WatchApp

    world.layout("duo", "  - agents:\n      panes:\n        - A: claude-run\n")
    world.plan("A", [{"mark": "ready"}, {"wait": None}])
    assert world.fleet("start", "duo", "--no-attach").returncode == 0
    world.wait_event("A", "mark", name="ready")
    silent_name = f"fleet-pytest-silent-{uuid.uuid4().hex[:8]}"
    silent = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
    silent.bind(str(world.socket_path.parent / silent_name))
    silent.listen(8)  # accepts connections, never says a word
    monkeypatch.setenv("TMUX_TMPDIR", str(world.tmux_tmpdir))

    async def scenario() -> tuple[list[str], str]:
        app = WatchApp(interval=0.3)
        async with app.run_test(size=(100, 24)) as pilot:
            for _ in range(100):
                await pilot.pause(0.1)
                if app.rows:
                    break
            return [row.name for row in app.rows], str(app.query_one("#title", Static).render())

    try:
        names, title = asyncio.run(scenario())
    finally:
        silent.close()
        (world.socket_path.parent / silent_name).unlink(missing_ok=True)
    assert names == ["A"], "the answering fleet's agents are shown"
    assert f"{silent_name} did not answer" in title, title


def test_many_silent_fleet_sockets_cost_one_deadline_and_the_real_fleet_comes_first(
    world: FleetWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An agent can listen on any number of fleet-* sockets: a look still ends at its one deadline, the
    socket a tmux server listens on is asked first, and doctor says what it could not check."""
    import socket as sockets
    import time

    from claude_shepherd.fleet import live

    world.layout("duo", "  - agents:\n      panes:\n        - A: claude-run\n")
    world.plan("A", [{"mark": "ready"}, {"wait": None}])
    assert world.fleet("start", "duo", "--no-attach").returncode == 0
    world.wait_event("A", "mark", name="ready")
    directory = world.socket_path.parent
    silent = []
    for number in range(3 * live.MAX_ASKING):  # named to sort before the real fleet's socket
        listener = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
        listener.bind(str(directory / f"fleet-a-silent-{number:03d}"))
        listener.listen(8)
        silent.append(listener)
    monkeypatch.setenv("TMUX_TMPDIR", str(world.tmux_tmpdir))
    try:
        began = time.monotonic()
        gathered = w.gather()
        took = time.monotonic() - began
        doctor = world.fleet("doctor")
    finally:
        for listener in silent:
            listener.close()
        for path in directory.glob("fleet-a-silent-*"):
            path.unlink()
    assert [row.name for row in gathered.rows] == ["A"]
    assert len(gathered.silent) == len(silent)
    # Asked 32 at a time, each silent one would take its 2 s: 6 s and more; one deadline is 3 s.
    assert took < 2 * live.LOOK_DEADLINE, f"a look took {took:.1f}s"
    assert doctor.stdout.count("unanswered: the fleet server on fleet-a-silent-") == len(silent), (
        doctor.stdout
    )


async def until(pilot: t.Any, predicate: t.Callable[[], t.Any], what: str, timeout: float = 15) -> t.Any:
    """Let the app run until *predicate* holds (a deadline, never a fixed sleep)."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await pilot.pause(0.05)
    return value


def toasts(app: t.Any) -> list[str]:
    return [n.message for n in app._notifications]


@pytest.mark.usefixtures("no_fleets")
def test_an_agent_that_comes_back_is_chosen_again() -> None:
    """Its fleet stopped and started (a new pane, the same identity): its row is the chosen one again;
    while two rows claim its identity, neither is chosen."""
    from textual.widgets import Static

    from claude_shepherd.fleet.watch_app import WatchApp

    a, b, c = row("A", "needs-you"), row("B", "working"), row("C", "working")
    b_again = w.AgentRow(b.socket, dataclasses.replace(b.status, pane="%9"))
    impostor = w.AgentRow(b.socket, dataclasses.replace(b.status, pane="%10"))

    async def scenario() -> dict[str, t.Any]:
        app = WatchApp(interval=60)
        seen: dict[str, t.Any] = {}
        async with app.run_test(size=(80, 24)) as pilot:
            await app.workers.wait_for_complete()
            app.show([a, b, c])
            await pilot.press("down")
            app.show([])  # the fleet stopped
            await pilot.pause()
            seen["gone"] = app.selected()
            app.show([a, b_again, impostor, c])  # two panes say they are B: no guess
            await pilot.pause()
            seen["two"] = (app.selected(), str(app.query_one("#title", Static).render()))
            app.show([a, b_again, c])
            await pilot.pause()
            seen["back"] = (app.selected(), str(app.query_one("#title", Static).render()))
        return seen

    seen = asyncio.run(scenario())
    assert seen["gone"] is None
    assert seen["two"][0] is None and "B is gone" in seen["two"][1]
    chosen, title = seen["back"]
    assert (
        chosen is not None
        and chosen.status.pane == "%9"
        and title == "fleet watch — duo: 3 agents, 1 needs you"
    )


def _running_duo(world: FleetWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    """A running fleet 'duo' of agents A and B, both ready, that the watch (in this process) can see."""
    world.layout("duo", "  - agents:\n      panes:\n        - A: claude-run\n        - B: claude-run\n")
    for label in ("A", "B"):
        world.plan(label, [{"mark": "ready"}, {"wait": None}])
    assert world.fleet("start", "duo", "--no-attach").returncode == 0
    world.wait_event("B", "mark", name="ready")
    monkeypatch.setenv("TMUX_TMPDIR", str(world.tmux_tmpdir))


def test_a_closed_pane_started_again_shows_its_row_again(
    world: FleetWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chosen agent's pane is closed: the watch says it is gone; fleet start adds it again: its row is
    back and chosen."""
    from textual.widgets import Static

    from claude_shepherd.fleet.watch_app import WatchApp

    _running_duo(world, monkeypatch)

    async def scenario() -> tuple[str, str]:
        app = WatchApp(interval=0.2)
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: len(app.rows) == 2, "both agents' rows")
            await pilot.press(*["down"] * [r.name for r in app.rows].index("B"))
            first = app.selected()
            assert first is not None and first.name == "B"
            world.tmux("kill-pane", "-t", first.status.pane)

            def title() -> str:
                return str(app.query_one("#title", Static).render())

            await until(pilot, lambda: "B is gone" in title(), "the watch to say B is gone")
            assert world.fleet("start", "duo", "--no-attach").returncode == 0
            back = await until(pilot, app.selected, "B chosen again")
            return f"{back.name} {back.status.pane != first.status.pane}", title()

    chosen, title = asyncio.run(scenario())
    assert chosen == "B True" and "gone" not in title, title


@pytest.mark.usefixtures("no_fleets")
@pytest.mark.slow  # over a second
def test_r_and_s_ask_first_naming_the_agent_and_any_other_key_leaves_it_alone() -> None:
    from textual.widgets import Static

    from claude_shepherd.fleet.watch_app import ConfirmScreen, WatchApp

    async def scenario() -> dict[str, t.Any]:
        app = WatchApp(interval=60)
        seen: dict[str, t.Any] = {"questions": [], "answers": []}
        async with app.run_test(size=(80, 24)) as pilot:
            await app.workers.wait_for_complete()
            app.show([row("SDK", fleet="agents-2x2"), row("API", fleet="agents-2x2")])
            await pilot.pause()
            for ask, answer in (("r", "q"), ("r", "enter"), ("s", "escape"), ("s", "r"), ("r", "x")):
                await pilot.press(ask)
                seen["questions"].append(str(app.screen.query_one(Static).render()))
                await pilot.press(answer)
                await pilot.pause()
                seen["answers"].append(
                    (type(app.screen) is ConfirmScreen, app.is_running, len(app.screen_stack))
                )
            seen["acted"] = [wk for wk in app.workers if wk.group == "act"]
            await pilot.press("s", "s")
            await until(pilot, lambda: "SDK: its pane is gone already" in toasts(app), "the stop's outcome")
            seen["told"] = toasts(app)
        return seen

    seen = asyncio.run(scenario())
    assert (
        seen["questions"][0]
        == "Restart agents-2x2:agents:SDK?\nPress r again to confirm; any other key cancels."
    )
    assert seen["questions"][2].startswith("Stop agents-2x2:agents:SDK?\nPress s again")
    assert seen["answers"] == [(False, True, 1)] * 5, "q does not quit, Enter does not attach: they answer no"
    assert seen["acted"] == [] and seen["told"].count("agents-2x2:agents:SDK left alone") == 5
    assert "Stopping agents-2x2:agents:SDK…" in seen["told"], "yes acts (here on a fleet that is not there)"


def test_the_watchs_keys_hold_the_fleets_lock_and_restart_in_the_fleets_environment(
    world: FleetWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """r waits (saying for whom) while another verb changes the fleet, then restarts through the fleet's own
    PATH though the watch's has no claude-run; s is refused past the lock's timeout, as a toast; a watch that
    quits while it waits acts on nothing."""
    from claude_shepherd.fleet.lock import fleet_lock
    from claude_shepherd.fleet.watch_app import WatchApp
    from claude_shepherd.supervisor.env import FLEET_LOCK_TIMEOUT_ENV

    _running_duo(world, monkeypatch)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # the watch's own: no claude-run on it
    holder = f"fleet start (pid {__import__('os').getpid()})"

    async def on_b(app: WatchApp, pilot: t.Any) -> None:
        await until(
            pilot, lambda: len(app.rows) == 2 and "exited" not in {r.state for r in app.rows}, "both agents"
        )
        await pilot.press(*["down"] * [r.name for r in app.rows].index("B"))

    async def restart_and_refuse() -> list[str]:
        app = WatchApp(interval=0.2, grace=5)
        async with app.run_test(size=(80, 24)) as pilot:
            await on_b(app, pilot)
            with fleet_lock(world.socket, "fleet start"):
                await pilot.press("r", "r")
                await until(pilot, lambda: f"B: waiting for {holder} to finish with socket {world.socket}…" in toasts(app),
                            "the watch to say whom it waits for")  # fmt: skip
                assert len(world.starts("B")) == 1, "nothing restarted while another verb holds the fleet"
            await until(
                pilot, lambda: len(world.starts("B")) == 2, "B started again, by the fleet's claude-run"
            )
            await until(pilot, lambda: any(m.endswith("; restarted") for m in toasts(app)), "restarted")
            monkeypatch.setenv(FLEET_LOCK_TIMEOUT_ENV, "0.3")
            await on_b(app, pilot)
            with fleet_lock(world.socket, "fleet start"):
                await pilot.press("s", "s")
                await until(
                    pilot, lambda: any(m.startswith("B was not stopped") for m in toasts(app)), "a refusal"
                )
            return toasts(app)

    told = asyncio.run(restart_and_refuse())
    refusal = next(m for m in told if m.startswith("B was not stopped"))
    assert refusal.startswith(
        f"B was not stopped: {holder} has been changing the fleet on socket {world.socket}"
    )
    assert refusal.endswith("try again when it has finished") and "Traceback" not in " ".join(told)
    assert world.panes()["B"]["pane_dead"] == "0" and len(world.starts("B")) == 2

    async def quit_while_waiting() -> None:
        app = WatchApp(interval=0.2, grace=5)
        async with app.run_test(size=(80, 24)) as pilot:
            await on_b(app, pilot)
            await pilot.press("s", "s")
            await until(pilot, lambda: any("waiting for" in m for m in toasts(app)), "the wait")

    monkeypatch.setenv(FLEET_LOCK_TIMEOUT_ENV, "30")
    with fleet_lock(world.socket, "fleet start"):
        began = time.monotonic()
        asyncio.run(quit_while_waiting())
        took = time.monotonic() - began
    assert took < 10, f"the watch took {took:.1f}s to quit"
    assert world.panes()["B"]["pane_dead"] == "0", "a key of a watch that quit did nothing"


@pytest.mark.slow  # over a second
def test_a_log_or_an_attach_on_a_server_that_does_not_answer_never_freezes_the_screen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """l and Enter ask tmux in a worker: the keys still move the cursor while the server keeps silent, and
    each timeout comes as a toast."""
    import socket as sockets

    from claude_shepherd.fleet.watch_app import AgentTable, WatchApp
    from claude_shepherd.supervisor.env import FLEET_TMUX_TIMEOUT_ENV

    tmux_dir = Path(tempfile.mkdtemp(prefix="flw-", dir="/tmp"))  # short enough for a socket path
    directory = tmux_dir / f"tmux-{os.getuid()}"
    directory.mkdir(mode=0o700)
    name = f"fleet-pytest-silent-{uuid.uuid4().hex[:8]}"
    silent = sockets.socket(sockets.AF_UNIX, sockets.SOCK_STREAM)
    silent.bind(str(directory / name))
    silent.listen(8)  # accepts connections, never says a word
    monkeypatch.setenv("TMUX_TMPDIR", str(tmux_dir))
    monkeypatch.setenv(FLEET_TMUX_TIMEOUT_ENV, "1.5")

    async def scenario() -> tuple[float, int, list[str]]:
        app = WatchApp(interval=60)
        async with app.run_test(size=(80, 24)) as pilot:
            await app.workers.wait_for_complete()
            app.show([row("A", "needs-you", socket=name), row("B", socket=name)])
            await pilot.pause()
            began = time.monotonic()
            await pilot.press("l", "enter", "down")
            took = time.monotonic() - began
            cursor = app.query_one(AgentTable).cursor_row
            await until(
                pilot,
                lambda: sum(n.severity == "error" for n in app._notifications) == 2,
                "the timeouts' toasts",
            )
            return took, cursor, toasts(app)

    try:
        took, cursor, told = asyncio.run(scenario())
    finally:
        silent.close()
        shutil.rmtree(tmux_dir, ignore_errors=True)
    assert took < 1.0 and cursor == 1, f"the keys waited {took:.1f}s for the log and the pane"
    assert len(told) == 2 and all(name in toast for toast in told), told


MARKUP_LABEL = "[link=https://x]a[/link][@click=app.quit]b"
"""A label that, read as markup, is a link to a URL the agent chose and a click that quits the watch."""


@pytest.mark.usefixtures("no_fleets")
def test_a_label_made_of_markup_is_shown_literally_in_toasts_questions_titles_and_the_log() -> None:
    """Every place the watch names an agent shows its label as the text it is: the toast a key's answer
    gives, the confirm question, the title, the totals, the log's heading and lines."""
    from textual.widgets import Log, Static
    from textual.widgets._toast import Toast

    from claude_shepherd.fleet.watch_app import LogScreen, WatchApp

    hostile = row(MARKUP_LABEL, "needs-you", fleet=MARKUP_LABEL)

    async def scenario() -> dict[str, list[str]]:
        app = WatchApp(interval=60)
        seen: dict[str, list[str]] = {}
        async with app.run_test(size=(160, 30), notifications=True) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            app.show([hostile])
            await pilot.pause()
            seen["title"] = [str(app.query_one("#title", Static).render())]
            seen["totals"] = [str(app.query_one("#totals", Static).render())]
            await pilot.press("s")
            await pilot.pause()
            seen["question"] = [str(s.render()) for s in app.screen.query(Static)]
            await pilot.press("escape")  # leaves the agent alone: a toast names it
            await until(pilot, lambda: list(app.screen.query(Toast)), "the toast")
            app.notify(f"{hostile.where} needs you", title=MARKUP_LABEL)  # as a relayed alert is shown
            await until(pilot, lambda: len(app.screen.query(Toast)) >= 2, "the second toast")
            seen["toasts"] = [toast.render().plain for toast in app.screen.query(Toast)]
            app.push_screen(LogScreen(hostile.where, [MARKUP_LABEL]))
            await pilot.pause()
            seen["log"] = [
                str(app.screen.query_one(".heading", Static).render()),
                *app.screen.query_one(Log).lines,
            ]
            seen["running"] = [str(app.is_running)]
        return seen

    seen = asyncio.run(scenario())
    assert seen["running"] == ["True"]
    where = f"{MARKUP_LABEL}:agents:{MARKUP_LABEL}"
    assert seen["title"][0].startswith(f"fleet watch — {MARKUP_LABEL}: 1 agent"), seen
    assert seen["totals"][0].startswith(f"{MARKUP_LABEL}: 1 agent"), seen
    assert any(f"Stop {where}?" in text for text in seen["question"]), seen
    assert seen["toasts"] == [f"{where} left alone", f"{MARKUP_LABEL}\n{where} needs you"], seen
    assert seen["log"] == [f"{where} — Escape to go back", MARKUP_LABEL], seen
