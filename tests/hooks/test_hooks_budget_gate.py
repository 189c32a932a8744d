"""The budget gate against hostile figures and files, through the real ``claude-hook`` console script.

Outside a fleet the agent is its claude-run (here: this test process, as ``hook_env`` says), held to
``claude-run --budget-usd`` through its environment. What the status line reports comes from Claude,
whose cost estimate is the API's token counts × list price: a figure no ledger can hold must still
count as spent. A ledger or budgets file the hooks cannot read (a FIFO, a huge or deep file) makes the
spend unknown, which pauses nobody (docs/SECURITY.md) — and never hangs a hook.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from support.hooks import hook_env, run, tool

from claude_shepherd.supervisor.env import BUDGET_USD_ENV
from claude_shepherd.supervisor.session import pane_records, spend
from claude_shepherd.supervisor.session.identity import start_token
from claude_shepherd.supervisor.session.pane_records import _file_name

CONVERSATION = "0b1b7cc9-6911-4d5b-9a77-b8d720a2c2c5"


def me() -> str:
    where = pane_records.spot(None, (os.getpid(), start_token(os.getpid())))
    assert where is not None
    return where[0]


def status_line(project: Path, cost: object) -> dict[str, object]:
    return {"session_id": CONVERSATION, "cwd": str(project), "cost": {"total_cost_usd": cost}}


def stops(project: Path, env: dict[str, str]) -> bool:
    """Does the next tool call pause the agent (deny with continue: false)?"""
    done = run("pre-tool-use", tool(project, "Read", file_path=str(project / "notes.txt")), env, cwd=project)
    assert done.returncode == 0, done.stderr
    return bool(done.stdout) and json.loads(done.stdout).get("continue") is False


@pytest.mark.parametrize("cost", [1e12, 1.7e308])
def test_a_reading_no_ledger_can_hold_still_counts_as_spent(project: Path, cost: float) -> None:
    env = hook_env(project, **{BUDGET_USD_ENV: "1"})
    assert run("status-line", status_line(project, 0.5), env, cwd=project).returncode == 0
    assert not stops(project, env)
    assert run("status-line", status_line(project, cost), env, cwd=project).returncode == 0
    assert spend.spent(spend.read(project / "sessions", me())) == spend.MAX_DOLLARS
    assert stops(project, env), "a spend too large to write down made the agent unknown, and free"


@pytest.mark.parametrize("what", ["fifo", "huge", "deep"])
def test_a_ledger_the_hooks_cannot_read_never_hangs_them_and_pauses_nobody(project: Path, what: str) -> None:
    env = hook_env(project, **{BUDGET_USD_ENV: "1"})
    run("status-line", status_line(project, 2.0), env, cwd=project)
    assert stops(project, env)
    ledger = project / "sessions" / ".shepherd" / "spend" / _file_name(me())
    ledger.unlink()
    if what == "fifo":
        os.mkfifo(ledger)
    else:
        body = "[" * 100000 + "]" * 100000 if what == "deep" else " " * (8 << 20) + "{}"
        ledger.write_text(body)
    began = time.monotonic()
    assert not stops(project, env), "unknown spend pauses nobody (docs/SECURITY.md: it fails open)"
    assert time.monotonic() - began < 5


@pytest.mark.parametrize("command", ["session find", "session log --help", "session phase --help"])
def test_a_paused_agents_lone_session_command_runs_and_ends_the_turn(project: Path, command: str) -> None:
    """A model that asks only for `session` calls while paused gets no more requests than one that asks
    for anything: each call that passes also ends the turn (continue: false, no deny)."""
    env = hook_env(project, **{BUDGET_USD_ENV: "1"})
    run("status-line", status_line(project, 0.5), env, cwd=project)
    done = run("pre-tool-use", tool(project, "Bash", command=command), env, cwd=project)
    assert done.stdout == "", "within the budget a session command passes as before"
    run("status-line", status_line(project, 2.0), env, cwd=project)
    done = run("pre-tool-use", tool(project, "Bash", command=command), env, cwd=project)
    answer = json.loads(done.stdout)
    assert answer["continue"] is False and answer["stopReason"].startswith("PAUSED (budget)"), answer
    assert "permissionDecision" not in json.dumps(answer), "the session command itself runs"
    assert stops(project, env), "any other call is refused and ends the turn, as before"
