"""Budgets in a fleet, through the real console scripts: a stand-in Claude in each pane runs the real
hooks (status line, PreToolUse, UserPromptSubmit) as Claude Code would, with the figures a test gives.

A pane's budget reached: the agent is paused (its border state, ``fleet status``), its tool calls
are denied with ``continue: false`` and a prompt is refused, each naming the command that raises
it; at 80 % the fleet's notify command is run once. ``fleet budget --add`` takes effect at once,
and the paused agent is typed a resume prompt and goes on; nothing is killed.
"""

from __future__ import annotations

import json
import re
import time
import typing as t
from pathlib import Path

import pytest
from support.fleet import FleetWorld
from support.waiting import wait_until

from claude_shepherd.supervisor.session import budgets

pytestmark = pytest.mark.slow

CONVERSATION = "0b1b7cc9-6911-4d5b-9a77-b8d720a2c2c5"


def status_line(world: FleetWorld, cost: float) -> dict[str, t.Any]:
    line = {"session_id": CONVERSATION, "cwd": str(world.project), "cost": {"total_cost_usd": cost}}
    return {"run": ["claude-hook", "status-line"], "stdin": json.dumps(line)}


def hook(world: FleetWorld, event: str, **data: t.Any) -> dict[str, t.Any]:
    payload = {
        "session_id": CONVERSATION,
        "cwd": str(world.project),
        "transcript_path": "/none.jsonl",
        **data,
    }
    return {"run": ["claude-hook", event], "stdin": json.dumps(payload)}


def tool(world: FleetWorld) -> dict[str, t.Any]:
    return hook(world, "pre-tool-use", hook_event_name="PreToolUse", tool_name="Read",
                tool_input={"file_path": str(world.project / "notes.txt")}, tool_use_id="toolu_1")  # fmt: skip


def answers(world: FleetWorld, event: str) -> list[dict[str, t.Any]]:
    """What each run of hook *event* printed, as JSON ({} for nothing: allowed)."""
    ran = [e for e in world.events("A", "run") if e["args"][:2] == ["claude-hook", event]]
    return [json.loads(e["stdout"]) if e["stdout"].strip() else {} for e in ran]


def start_with_a_paused(world: FleetWorld, windows: str, extra: str = "") -> None:
    """Fleet 'duo' of *windows* started: A spends $1.20 and is paused by a tool call, B waits."""
    world.layout("duo", windows, extra=extra)
    (world.project / "notes.txt").write_text("notes\n")
    world.plan("A", [status_line(world, 1.2), tool(world), {"mark": "paused"}, {"wait": None}])
    world.plan("B", [{"mark": "ready"}, {"wait": None}])
    started = world.fleet("start", "duo", "--no-attach")
    assert started.returncode == 0, started.stdout + started.stderr
    world.wait_event("A", "mark", 30, name="paused")


def test_a_budget_reached_pauses_the_agent_and_raising_it_lets_it_go_on(
    world: FleetWorld, tmp_path: Path
) -> None:
    alerts = tmp_path / "alerts.txt"
    notify = json.dumps(["/bin/sh", "-c", f'echo "$1 $2" >> {alerts}', "sh", "{label}", "{state}"])
    world.layout(
        "duo",
        "  - agents:\n      panes:\n        - A:\n            budget: 1\n            commands: claude-run\n"
        "        - B: claude-run\n",
        extra=f"notify: {notify}\n",
    )
    (world.project / "notes.txt").write_text("notes\n")
    activate = f"CLAUDE_CODE_SESSION_ID={CONVERSATION} session activate sessions/S_A implement"
    world.plan(
        "A",
        [
            {"run": ["sh", "-c", activate]},
            status_line(world, 0.5), tool(world),  # 50 %: nothing
            status_line(world, 0.85), tool(world),  # 85 %: one alert, the call runs
            status_line(world, 1.1), tool(world),  # reached: paused
            hook(world, "user-prompt-submit", prompt="more"),
            {"mark": "paused"}, {"read_keys": {"timeout": 60}},  # as Claude's input box reads them
            tool(world), {"mark": "resumed"}, {"wait": None},
        ],
    )  # fmt: skip
    world.plan("B", [{"mark": "ready"}, {"wait": None}])
    started = world.fleet("start", "duo", "--no-attach")
    assert started.returncode == 0, started.stdout + started.stderr
    world.wait_event("A", "mark", 30, name="paused")

    allowed, nearly, stopped = answers(world, "pre-tool-use")[:3]
    assert allowed.get("continue", True) and nearly.get("continue", True), (allowed, nearly)
    assert stopped["continue"] is False
    assert stopped["hookSpecificOutput"]["permissionDecision"] == "deny"
    hint = "`fleet budget duo --pane A --add 1.1`"  # its own $1 above the $1.10 spent
    assert hint in stopped["stopReason"] and "$1.10 measured" in stopped["stopReason"], stopped
    (refused,) = answers(world, "user-prompt-submit")
    assert refused["decision"] == "block" and hint in refused["reason"]
    wait_until(lambda: "A paused" in (alerts.read_text() if alerts.exists() else "") or None, 10, "alerts")
    assert alerts.read_text().splitlines() == ["A budget", "A paused"], "80 % once, then the pause"

    row = {r["label"]: r for r in json.loads(world.fleet("status", "--json").stdout)}["A"]
    assert (row["state"], row["paused"], row["cost_usd"], row["spend_source"]) == (
        "paused",
        True,
        1.1,
        "measured",
    )
    assert (row["budget_usd"], row["budget_scope"], row["budget_spent"]) == (1.0, "pane", 1.1)
    shown = world.fleet("budget", "duo", "--socket", world.socket)
    assert shown.returncode == 0, shown.stderr
    assert "PAUSED (budget)" in shown.stdout and "spent $1.10 (110 %)" in shown.stdout, shown.stdout

    raised = world.fleet("budget", "duo", "--socket", world.socket, "--pane", "A", "--add", "1")
    assert raised.returncode == 0, raised.stdout + raised.stderr
    assert "Budget of pane A: $1.00 -> $2.00 (in effect now)" in raised.stdout
    assert "Resumed duo:agents:A" in raised.stdout, raised.stdout
    assert world.wait_event("A", "keys", 10)["text"] == budgets.resume_prompt(), "typed as the hooks type"
    world.wait_event("A", "mark", 30, name="resumed")
    assert answers(world, "pre-tool-use")[-1].get("continue", True), "within budget again: the call runs"
    assert len(world.starts("A")) == 1, "nothing was killed or restarted"
    row = {r["label"]: r for r in json.loads(world.fleet("status", "--json").stdout)}["A"]
    assert (row["paused"], row["budget_usd"]) == (False, 2.0)


def test_a_raise_resumes_paused_agents_one_at_a_time_in_the_queue_renewals_take(world: FleetWorld) -> None:
    """Every resume of a paused agent takes a slot in one queue, ``$FLEET_RESUME_INTERVAL`` apart:
    the agents a raise resumes, and an agent whose day's budget renews at that moment (its typist's
    slot, taken first here), never two at once."""
    from claude_shepherd.supervisor.session import resume_slots

    interval = 3.0
    world.env["FLEET_RESUME_INTERVAL"] = str(interval)
    world.layout(
        "duo",
        "  - agents:\n      budget: 1\n      panes:\n        - A: claude-run\n        - B: claude-run\n",
    )
    (world.project / "notes.txt").write_text("notes\n")
    for label in ("A", "B"):
        plan = [status_line(world, 0.6), {"mark": "spent"}, {"wait_file": str(world.dir / "go")}, tool(world),
                {"mark": "paused"}, {"read_keys": {"timeout": 60}}, {"wait": None}]  # fmt: skip
        world.plan(label, plan)
    started = world.fleet("start", "duo", "--no-attach")
    assert started.returncode == 0, started.stdout + started.stderr
    for label in ("A", "B"):
        world.wait_event(label, "mark", 30, name="spent")
    (world.dir / "go").write_text("")
    for label in ("A", "B"):
        world.wait_event(label, "mark", 30, name="paused")
    renewal = resume_slots.take_slot(
        world.project / "sessions", budgets.RESUME_QUEUE, "duo:other:C", time.time(), interval
    )

    raised = world.fleet("budget", "duo", "--socket", world.socket, "--window", "agents", "--add", "1")
    assert raised.returncode == 0, raised.stdout + raised.stderr
    assert "Resumed duo:agents:A" in raised.stdout and "Resumed duo:agents:B" in raised.stdout, raised.stdout
    typed = sorted(world.wait_event(label, "keys", 10)["at"] for label in ("A", "B"))
    assert typed[0] >= renewal + interval - 0.5, "after the renewal's slot, not at once"
    assert typed[1] - typed[0] >= interval - 0.5, typed


def test_a_window_budget_counts_its_agents_together_alerts_once_and_pauses_each(
    world: FleetWorld, tmp_path: Path
) -> None:
    alerts = tmp_path / "alerts.txt"
    notify = json.dumps(["/bin/sh", "-c", f'echo "$1 $2" >> {alerts}', "sh", "{label}", "{state}"])
    world.layout(
        "duo",
        "  - agents:\n      budget: {usd: 1, per: day}\n      panes:\n        - A: claude-run\n        - B: claude-run\n",
        extra=f"notify: {notify}\n",
    )
    go = {name: tmp_path / name for name in ("b", "a1", "b2", "a2")}

    def wait(name: str) -> dict[str, t.Any]:
        return {"wait_file": str(go[name]), "timeout": 60}

    world.plan("A", [status_line(world, 0.5), {"mark": "spent"}, wait("a1"), tool(world), {"mark": "t1"},
                     wait("a2"), tool(world), {"mark": "t2"}, {"wait": None}])  # fmt: skip
    world.plan("B", [wait("b"), status_line(world, 0.35), tool(world), {"mark": "spent"},
                     wait("b2"), status_line(world, 0.6), {"mark": "over"}, {"wait": None}])  # fmt: skip
    started = world.fleet("start", "duo", "--no-attach")
    assert started.returncode == 0, started.stdout + started.stderr
    world.wait_event("A", "mark", 30, name="spent")
    for step, label, mark in (("b", "B", "spent"), ("a1", "A", "t1"), ("b2", "B", "over"), ("a2", "A", "t2")):
        go[step].touch()
        world.wait_event(label, "mark", 30, name=mark)
    first, second = answers(world, "pre-tool-use")
    assert "continue" not in first, "85 % of the window's budget: the call is judged by the other gates"
    assert second["continue"] is False, "B's spend reached the window's budget: A pauses too"
    assert "the budget of window agents ($1.00 a day) is spent ($1.10 measured)" in second["stopReason"]
    assert "`fleet budget duo --window agents --add 1.1`" in second["stopReason"]
    wait_until(lambda: "A paused" in (alerts.read_text() if alerts.exists() else "") or None, 10, "alerts")
    assert alerts.read_text().splitlines() == ["B budget", "A paused"], "the window's 80 % alerted once"


def test_fleet_budget_resumes_no_agent_paused_by_its_own_claude_run_budget(
    world: FleetWorld, tmp_path: Path
) -> None:
    """`claude-run --budget-usd` is the agent's own cap, which `fleet budget` does not change: raising the
    fleet's budget types it no resume prompt (its hooks would refuse it again) and does not say it went on."""
    start_with_a_paused(
        world, "  - agents:\n      panes:\n        - A: claude-run --budget-usd 1\n        - B: claude-run\n",
        extra="budget: 10\n",
    )  # fmt: skip
    (stopped,) = answers(world, "pre-tool-use")
    assert stopped["continue"] is False and "this agent's budget ($1.00)" in stopped["stopReason"], stopped
    assert "the pane's spend so far" in stopped["stopReason"], "a new claude-run in the pane counts on"
    raised = world.fleet("budget", "duo", "--socket", world.socket, "--add", "5")
    assert raised.returncode == 0, raised.stdout + raised.stderr
    assert "Resumed" not in raised.stdout, raised.stdout
    assert "Your budget was raised" not in world.capture("A").replace("\n", "")
    row = {r["label"]: r for r in json.loads(world.fleet("status", "--json").stdout)}["A"]
    assert (row["state"], row["paused"]) == ("paused", True), row


@pytest.mark.parametrize(
    "bad",
    [
        {"usd": "5"},
        {"per": "day"},
        {"usd": 1e309},
        {"usd": -1, "per": "day"},
        {"usd": 5, "per": "ever"},
        [5],
        7,
    ],
)
def test_fleet_budget_reads_a_broken_budgets_file_as_the_hooks_do(world: FleetWorld, bad: t.Any) -> None:
    """A budget the hooks would not hold an agent to (a file changed by hand or by an agent's Bash) is no
    budget to `fleet budget` either: it shows none, and a change starts from the layout's, in one piece."""
    world.layout("duo", "  - agents:\n      budget: 1\n      panes:\n        - A: claude-run\n")
    world.plan("A", [{"mark": "ready"}, {"wait": None}])
    started = world.fleet("start", "duo", "--no-attach")
    assert started.returncode == 0, started.stdout + started.stderr
    path = next((world.project / "sessions" / ".shepherd" / "budgets").glob("duo-*.json"))
    doc = json.loads(path.read_text())
    doc["windows"]["agents"] = bad
    doc["budget"] = bad
    path.write_text(json.dumps(doc).replace("Infinity", "1e309"))
    shown = world.fleet("budget", "duo", "--socket", world.socket)
    assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr
    assert shown.stdout.count("no budget") == 3, shown.stdout
    raised = world.fleet("budget", "duo", "--socket", world.socket, "--window", "agents", "--add", "2")
    assert raised.returncode == 0 and "Traceback" not in raised.stderr, raised.stderr
    assert "Budget of window agents: $1.00 -> $3.00 (in effect now)" in raised.stdout, (
        raised.stdout
    )  # the layout's


def test_fleet_budget_types_no_resume_into_a_pane_that_took_a_paused_agents_label(world: FleetWorld) -> None:
    """An agent's Bash can relabel its own pane to a paused neighbour's label; the identity both carry is
    nobody's, so raising the budget types the resume prompt into neither pane."""
    start_with_a_paused(world, "  - agents:\n      panes:\n        - A:\n            budget: 1\n"
                               "            commands: claude-run\n        - B: claude-run\n")  # fmt: skip
    world.wait_event("B", "mark", 30, name="ready")
    b = world.panes()["B"]["pane_id"]
    world.tmux("set-option", "-p", "-t", b, "@pane_label", "A")
    raised = world.fleet("budget", "duo", "--socket", world.socket, "--pane", "A", "--add", "5")
    assert raised.returncode == 0, raised.stdout + raised.stderr
    assert "Resumed" not in raised.stdout, raised.stdout
    time.sleep(1)
    screens = world.tmux("capture-pane", "-p", "-t", b)
    assert "Your budget was raised" not in screens.replace("\n", ""), screens


def test_a_spend_far_past_its_budget_gets_hints_that_work_typed_as_given(
    world: FleetWorld, tmp_path: Path
) -> None:
    """The reply that crosses a budget can cost many times the budget (or a resumed conversation
    arrives with its spend): the hint raises by enough, and a raise that one budget lets go while
    another still holds the agent says so, with the command for that one."""
    world.layout(
        "duo",
        "  - agents:\n      panes:\n        - A:\n            budget: 0.3\n            commands: claude-run\n",
        extra="budget: 1\n",
    )
    activate = f"CLAUDE_CODE_SESSION_ID={CONVERSATION} session activate sessions/S_A implement"
    world.plan(
        "A",
        [
            {"run": ["sh", "-c", activate]},
            status_line(world, 14.4), tool(world),  # 48 times the pane's budget
            {"mark": "paused"}, {"read_keys": {"timeout": 60}},
            tool(world), {"mark": "resumed"}, {"wait": None},
        ],
    )  # fmt: skip
    started = world.fleet("start", "duo", "--no-attach")
    assert started.returncode == 0, started.stdout + started.stderr
    world.wait_event("A", "mark", 30, name="paused")
    (stopped,) = answers(world, "pre-tool-use")
    hint = "fleet budget duo --pane A --add 14.4"
    assert f"`{hint}`" in stopped["stopReason"], stopped["stopReason"]

    raised = world.fleet(*hint.split()[1:], "--socket", world.socket)
    assert raised.returncode == 0, raised.stdout + raised.stderr
    assert "Budget of pane A: $0.30 -> $14.70 (in effect now)" in raised.stdout, raised.stdout
    assert "Resumed" not in raised.stdout, "the fleet's $1 budget still holds it"
    fleet_hint = "fleet budget duo --add 14.4"
    assert (
        f"Still paused: duo:agents:A, at the fleet budget $1.00 (spent $14.40); to let it go on: `{fleet_hint}`"
        in raised.stdout
    ), raised.stdout

    again = world.fleet(*fleet_hint.split()[1:], "--socket", world.socket)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Resumed duo:agents:A" in again.stdout and "Still paused" not in again.stdout, again.stdout
    world.wait_event("A", "mark", 30, name="resumed")
    assert answers(world, "pre-tool-use")[-1].get("continue", True), "within every budget: the call runs"


def test_a_budget_changed_while_the_fleet_is_stopped_says_so_and_holds_from_the_next_start(
    world: FleetWorld,
) -> None:
    """No agent runs to hold: the line says the change waits for the start its hint names, and that
    start keeps it over the layout's; an amount to add that is not one is refused in one line."""
    world.layout("duo", "  - agents:\n      panes:\n        - A: claude-run\n", extra="budget: 1\n")
    raised = world.fleet("budget", "duo", "--socket", world.socket, "--add", "2")
    assert (raised.returncode, raised.stderr) == (0, ""), raised.stderr
    assert (
        "Budget of fleet duo: $1.00 -> $3.00 (the fleet is stopped: in effect once `fleet start duo` starts it)"
        in raised.stdout
    ), raised.stdout
    for amount in ("-5", "0"):
        refused = world.fleet("budget", "duo", "--socket", world.socket, "--add", amount)
        assert (refused.returncode, refused.stderr) == (
            2,
            f"fleet: error: --add takes the USD to add, more than 0; to lower a budget, --set it; got {amount}\n",
        )
    world.plan("A", [{"wait": None}])
    started = world.fleet("start", "duo", "--no-attach")
    assert started.returncode == 0, started.stdout + started.stderr
    shown = world.fleet("budget", "duo", "--socket", world.socket)
    assert re.search(r"^  fleet  duo +\$3\.00 ", shown.stdout, re.M), shown.stdout


def test_amounts_are_whole_cents_a_budget_can_be_removed_and_a_pane_without_one_names_its_holder(
    world: FleetWorld,
) -> None:
    """An amount below a cent showed as $0.00 and held nobody: refused in one line, wherever it is given.
    A pane with no budget of its own is held by its window's or the fleet's: --add says which, with the
    command for that one (a new budget below its spend would pause it twice over). --set below what was
    spent says the agents pause now; --remove takes a budget away."""
    from claude_shepherd.supervisor.session import spend_writes

    world.layout("duo", "  - agents:\n      panes:\n        - A: claude-run\n        - C: claude-run\n",
                 extra="budget: 2\n")  # fmt: skip
    spend_writes.measure(world.project / "sessions", "duo:agents:C", CONVERSATION, 1.6)

    def budget(*args: str) -> t.Any:
        return world.fleet("budget", "duo", "--socket", world.socket, *args)

    for args in (["--set", "0.0000004"], ["--add", "0.001"], ["--pane", "C", "--set", "1.005"]):
        refused = budget(*args)
        assert refused.returncode == 2 and "is not a whole number of cents" in refused.stderr, refused.stderr
        assert refused.stderr.count("\n") == 1 and "--remove" in refused.stderr
    held = budget("--pane", "C", "--add", "1")
    assert held.returncode == 2, held.stdout
    assert (
        "pane C has no budget of its own to raise; it is held by the budget of fleet duo ($2.00, spent "
        "$1.60): `fleet budget duo --add 1`; or give pane C its own with --set USD"
    ) in held.stderr, held.stderr
    lowered = budget("--set", "1.5")
    assert lowered.returncode == 0, lowered.stderr
    assert (
        "Budget of fleet duo: $2.00 -> $1.50; that is below the $1.60 spent: its agents pause"
        in lowered.stdout
    )
    removed = budget("--remove")
    assert removed.returncode == 0 and "Budget of fleet duo: $1.50 -> none (removed" in removed.stdout
    assert re.search(r"^  fleet  duo +no budget", budget().stdout, re.M)
    again = budget("--remove")
    assert again.returncode == 2 and "fleet duo has no budget to remove" in again.stderr

    bad = world.layout(
        "cents", "  - agents:\n      panes:\n        - A: claude-run\n", extra="budget: 0.005\n"
    )
    started = world.fleet("start", "cents", "--no-attach")
    assert started.returncode != 0 and "a whole number of cents" in started.stderr, (bad, started.stderr)
