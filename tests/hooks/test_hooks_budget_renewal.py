"""An agent paused at a day's or week's budget in a fleet pane goes on by itself when the budget renews.

The gate leaves one ``claude-hook budget-renews`` per pause, for the next period as the spend counts it;
that process types the resume prompt into the pane (a real tmux pane here, running claude-run with the
stand-in Claude reading its keys as Claude's TUI does) only while the agent is paused, within every
budget it is held to, and the pane's.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import typing as t
from pathlib import Path

import psutil
import pytest
from support.claude_run import FakeClaude, FleetTmux
from support.hooks import hook_env

from claude_shepherd.hooks import MAIN, budget_renewal
from claude_shepherd.supervisor.session import budget_records, budgets, spend, spend_writes

BIN = Path(sys.executable).parent
CONVERSATION = "0b1b7cc9-6911-4d5b-9a77-b8d720a2c2c5"
DAY = 86400.0


@pytest.fixture
def local_time(monkeypatch: pytest.MonkeyPatch) -> t.Iterator[t.Callable[[str], None]]:
    def use(zone: str) -> None:
        monkeypatch.setenv("TZ", zone)
        time.tzset()

    yield use
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe"])
@pytest.mark.parametrize("per", ["day", "week"])
def test_a_budget_renews_at_the_first_moment_its_spend_counts_anew(
    local_time: t.Callable[[str], None], zone: str, per: str
) -> None:
    """At the first moment of the next local day (Monday's for a week), across daylight saving changes
    too: what the ledger counts as the new period, no sooner, no later."""
    local_time(zone)
    for start in (time.mktime((2026, 10, 24, 12, 0, 0, 0, 0, -1)), time.mktime((2026, 3, 28, 23, 59, 0, 0, 0, -1)),
                  1795000000.0, time.mktime((2026, 11, 29, 23, 59, 59, 0, 0, -1))):  # fmt: skip
        limit = budgets.Limit(budgets.PANE, "A", 1.0, per, 1.0)
        renews = limit.renews_at(start)
        assert renews is not None and start < renews <= start + 8 * DAY, (zone, start)
        same = spend.day_of if per == "day" else (lambda when: min(spend.week_days(when)))
        assert same(renews - 1) == same(start) != same(renews), (zone, time.ctime(start), time.ctime(renews))
        assert time.localtime(renews)[3:6] == (0, 0, 0)
    assert budgets.Limit(budgets.PANE, "A", 1.0, "life", 1.0).renews_at(time.time()) is None


PAUSED_A_DAY = {"scope": "pane", "name": "SDK", "usd": 1.0, "per": "day", "spent": 2.0,
                "raise": "fleet budget F --pane SDK --add 1", "since": 0.0}  # fmt: skip
"""A pause at a pane's budget per day, as the budget gate records it."""


def pane_budget(
    root: Path, agent: str, per: str = "day", fleet_budget: dict[str, t.Any] | None = None
) -> None:
    fleet, window, _ = agent.split(":")
    budgets.write_fleet(root, fleet, {"roots": [str(root)], "budget": fleet_budget, "windows": {window: None},
                                      "panes": {agent: {"usd": 1.0, "per": per}}, "changed": []})  # fmt: skip


def hook(event: str, data: dict[str, t.Any]) -> dict[str, t.Any]:
    """The stand-in Claude's step that calls our hook *event* as Claude Code does (JSON on stdin)."""
    return {"run": [str(BIN / "claude-hook"), event], "stdin": json.dumps(data)}


def typists(root: Path) -> list[psutil.Process]:
    """The processes waiting to type the renewal for an agent of *root*."""
    return [p for p in psutil.process_iter(["cmdline"]) if budget_renewal.COMMAND in (argv := p.info["cmdline"] or [])
            and str(root) in argv]  # fmt: skip


def leave_typist(root: Path, agent: str, delay: float) -> dict[str, t.Any]:
    """The stand-in Claude's step that leaves a renewal's typist due in *delay* seconds for its pane, as
    the budget gate does (detached: claude-run adopts it)."""
    script = (
        f'exec setsid -f "{sys.executable}" -I -S "{MAIN}" {budget_renewal.COMMAND} "${{TMUX%%,*}}" "$TMUX_PANE" '
        f'"$(( $(date +%s) + {delay:g} ))" "{root}" "{agent}" day </dev/null >/dev/null 2>&1'
    )
    return {"run": ["sh", "-c", script]}


def test_a_pause_at_a_day_budget_leaves_one_process_for_the_renewal_and_the_agents_turn(
    fake: FakeClaude, start_run: t.Callable[..., t.Any], fleet_tmux: FleetTmux, workdir: Path, tmp_path: Path
) -> None:
    """Paused again while it waits: no second process. Ended (claude-run ends it as the fleet stops):
    the next paused call leaves a new one."""
    root, agent = workdir / "sessions", fleet_tmux.pane_id
    pane_budget(root, agent)
    line = {"session_id": CONVERSATION, "cwd": str(workdir), "cost": {"total_cost_usd": 2.0}}
    call = {"session_id": CONVERSATION, "cwd": str(workdir), "transcript_path": "/none.jsonl",
            "hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {"file_path": str(workdir / "notes.txt")}}  # fmt: skip
    paused_call = [hook("status-line", line), hook("pre-tool-use", call)]
    go = tmp_path / "go"
    fake.plan([*paused_call, *paused_call, {"mark": "twice"}, {"wait_file": str(go)}, *paused_call,
               {"mark": "again"}, {"wait": None}])  # fmt: skip
    renews = budgets.Limit(budgets.PANE, "SDK", 1.0, "day", 2.0).renews_at(time.time())
    run = start_run(pane=fleet_tmux)
    fake.wait_event("mark", name="twice", timeout=30)
    denied = [e for e in fake.events("run") if e["args"][-1] == "pre-tool-use"]
    assert len(denied) == 2 and all(json.loads(e["stdout"])["continue"] is False for e in denied), denied
    (first,) = typists(root)
    args = first.info["cmdline"]
    at = args.index(budget_renewal.COMMAND)
    assert args[at + 1 :] == [
        fleet_tmux.socket_path,
        fleet_tmux.pane,
        f"{renews:.3f}",
        str(root),
        agent,
        "day",
    ]
    asked = budget_records.read(root, agent)["paused"]["renews"]
    assert (asked["at"], asked["pid"]) == (f"day:{renews:.0f}", first.pid), asked
    first.kill()
    first.wait(10)
    go.touch()
    fake.wait_event("mark", name="again", timeout=30)
    (second,) = typists(root)
    assert (
        second.pid != first.pid and budget_records.read(root, agent)["paused"]["renews"]["pid"] == second.pid
    )
    os.kill(run.pid, signal.SIGTERM)  # as fleet stop does: it ends the typist too
    assert run.wait() == 143
    assert typists(root) == []


@pytest.mark.parametrize(
    "meanwhile", ["nothing", "raised", "held by another budget", "relabelled", "two left"]
)
def test_at_the_renewal_the_resume_prompt_is_typed_only_to_a_paused_agent_within_its_budgets(
    fake: FakeClaude, start_run: t.Callable[..., t.Any], fleet_tmux: FleetTmux, workdir: Path, meanwhile: str
) -> None:
    root, agent = workdir / "sessions", fleet_tmux.pane_id
    now = time.time()
    pane_budget(
        root,
        agent,
        fleet_budget={"usd": 1.0, "per": "life"} if meanwhile == "held by another budget" else None,
    )
    spend_writes.measure(
        root, agent, CONVERSATION, 2.0, now=now - 2 * DAY
    )  # spent on another day: within today's
    if meanwhile != "raised":
        budget_records.pause(root, agent, PAUSED_A_DAY)
    if meanwhile == "relabelled":
        fleet_tmux.tmux("set-option", "-p", "-t", fleet_tmux.pane, "@pane_label", "Other")
    left = [leave_typist(root, agent, 1)] * (
        2 if meanwhile == "two left" else 1
    )  # two hooks at once each left one
    fake.plan([*left, {"read_keys": {"timeout": 8}}, {"wait": None}])
    run = start_run(pane=fleet_tmux)
    keys = fake.wait_event("keys", timeout=30)
    expected = budgets.resume_prompt("day") if meanwhile in ("nothing", "two left") else None
    assert keys["text"] == expected, keys
    os.kill(run.pid, signal.SIGTERM)
    assert run.wait() == 143


def test_a_renewal_nobody_waits_for_is_refused() -> None:
    """Not a number, further ahead than a week's renewal, or not a pane: nothing waits, nothing is typed."""
    for args in (["%1", "nan"], ["%1", str(time.time() + 30 * DAY)], ["1", str(time.time())]):
        argv = [str(BIN / "claude-hook"), budget_renewal.COMMAND, "/tmp/none", *args, "/tmp", "a:b:c", "day"]
        done = subprocess.run(argv, capture_output=True, timeout=10, check=False)
        assert done.returncode == 2, args


@pytest.mark.parametrize("gone", ["the fleet stopped", "the agent was resumed"])
def test_a_renewal_waiting_for_nothing_ends_within_seconds(
    project: Path, fleet_pane: t.Any, gone: str
) -> None:
    """Its fleet stopped (the pane is no more), or the agent resumed by a raise: the process waiting for
    tomorrow's renewal is not left behind until then."""
    root, agent = project / "sessions", fleet_pane.pane_id
    pane_budget(root, agent)
    budget_records.pause(root, agent, PAUSED_A_DAY)
    argv = [str(BIN / "claude-hook"), budget_renewal.COMMAND, fleet_pane.socket_path, fleet_pane.pane,
            f"{time.time() + DAY:.3f}", str(root), agent, "day"]  # fmt: skip
    waiting = subprocess.Popen(argv, env=hook_env(project))
    try:
        time.sleep(1)
        assert waiting.poll() is None, "it waits while the agent is paused in its pane"
        if gone == "the fleet stopped":
            fleet_pane.kill()
        else:
            budget_records.go_on(root, agent)
        assert waiting.wait(timeout=budget_renewal.pane_typing.CHECK_EVERY + 5) == 0
    finally:
        waiting.kill()
        waiting.wait()


@pytest.mark.parametrize("budget", ["renewed meanwhile", "still spent"])
def test_a_paused_agent_started_again_goes_on_when_its_budget_renews_or_at_once(
    fake: FakeClaude, start_run: t.Callable[..., t.Any], fleet_tmux: FleetTmux, workdir: Path, budget: str
) -> None:
    """The fleet was stopped (its process waiting for the renewal ended with it) and started again: the
    resumed Claude's SessionStart leaves one anew — typing once Claude is up when the day turned meanwhile."""
    root, agent = workdir / "sessions", fleet_tmux.pane_id
    pane_budget(root, agent)
    now = time.time()
    spend_writes.measure(
        root, agent, CONVERSATION, 2.0, now=now - (2 * DAY if budget == "renewed meanwhile" else 0)
    )
    gone = {"at": "day:0", "pid": 1, "token": "not init's"}
    budget_records.pause(root, agent, {**PAUSED_A_DAY, "renews": gone})
    start = {"session_id": CONVERSATION, "cwd": str(workdir), "hook_event_name": "SessionStart",
             "source": "resume", "transcript_path": "/none.jsonl"}  # fmt: skip
    fake.plan([hook("session-start", start), {"read_keys": {"timeout": 20}}, {"wait": None}])
    run = start_run(pane=fleet_tmux)
    keys = fake.wait_event("keys", timeout=40)
    asked = budget_records.read(root, agent)["paused"]["renews"]
    assert asked["pid"] != 1, asked
    if budget == "renewed meanwhile":
        assert keys["text"] == budgets.resume_prompt("day")
    else:
        assert keys["text"] is None
        renews = budgets.Limit(budgets.PANE, "SDK", 1.0, "day", 2.0).renews_at(time.time())
        assert asked["at"] == f"day:{renews:.0f}" and psutil.pid_exists(asked["pid"]), asked
    os.kill(run.pid, signal.SIGTERM)
    assert run.wait() == 143
    assert typists(root) == [], "the stop ended it"
