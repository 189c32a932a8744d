"""``claude-run --budget-usd``: one agent's budget, enforced by the same hooks, through its environment.

The stand-in Claude runs the real status line and PreToolUse hook under a real ``claude-run`` on a
pty; a headless ``-p`` run (no status line) gets Claude's own ``--max-budget-usd``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from support.claude_run import FakeClaude, claude_run_path, make_transcript

CONVERSATION = "0b1b7cc9-6911-4d5b-9a77-b8d720a2c2c5"


def hook(event: str, workdir: Path, **data: object) -> dict[str, object]:
    payload = {"session_id": CONVERSATION, "cwd": str(workdir), "transcript_path": "/none.jsonl", **data}
    return {
        "run": [str(Path(claude_run_path()).with_name("claude-hook")), event],
        "stdin": json.dumps(payload),
    }


def test_the_agent_pauses_at_its_own_budget(
    fake: FakeClaude, start_run, workdir: Path, run_env: dict[str, str]
) -> None:
    read = {"tool_name": "Read", "tool_input": {"file_path": str(workdir / "x")}, "tool_use_id": "t1"}
    fake.plan(
        [
            {
                "session": ["activate", "sessions/S1", "implement"],
                "env": {"CLAUDE_CODE_SESSION_ID": CONVERSATION},
            },
            hook("status-line", workdir, cost={"total_cost_usd": 0.3}),
            hook("pre-tool-use", workdir, hook_event_name="PreToolUse", **read),
            hook("status-line", workdir, cost={"total_cost_usd": 0.55}),
            {**hook("pre-tool-use", workdir, hook_event_name="PreToolUse", **read),
             "env": {"CLAUDE_CODE_SESSION_ID": CONVERSATION}},
            {"exit": 0},
        ]
    )  # fmt: skip
    run = start_run("--budget-usd", "0.5", "--model", "opus")
    assert run.wait() == 0, run.text
    assert fake.starts()[0]["env"]["CLAUDE_SHEPHERD_BUDGET_USD"] == "0.5"
    ran = [e for e in fake.events("run") if e["args"][1] == "pre-tool-use"]
    first, second = (json.loads(e["stdout"]) if e["stdout"].strip() else {} for e in ran)
    assert first.get("continue", True), first
    assert second["continue"] is False and "budget ($0.50) is spent ($0.55 measured)" in second["stopReason"]
    # Its own budget cannot be raised while it runs: the hint is a command that works as typed, and
    # brings back the conversation with its session (claude-run takes over the session it ran in).
    hint = f"claude-run --budget-usd 0.5 -- --resume {CONVERSATION}"
    assert f"`{hint}`" in second["stopReason"], second["stopReason"]
    state = json.loads((workdir / "sessions" / "S1" / ".state.json").read_text())
    state["sessionId"] = CONVERSATION  # as the SessionStart hook of the real CLI records it
    (workdir / "sessions" / "S1" / ".state.json").write_text(json.dumps(state))
    make_transcript(Path(run_env["CLAUDE_CONFIG_DIR"]), workdir, CONVERSATION)
    fake.plan([], [{"session": ["find"]}, {"exit": 0}])  # the second invocation
    again = start_run("--budget-usd", "1", "--", "--resume", CONVERSATION)
    assert again.wait() == 0, again.text
    found = [e for e in fake.events("session") if e["args"][1:2] == ["find"]]
    assert found, (fake.events(), again.text)
    found = found[-1]
    assert found["rc"] == 0 and "S1" in found["stdout"], found
    state = json.loads((workdir / "sessions" / "S1" / ".state.json").read_text())
    assert state["pid"] == again.pid and state["lifecycle"] in ("resuming", "active"), state
    assert "--max-budget-usd" not in " ".join(fake.starts()[0]["argv"]), "interactive: the hooks hold it"


def test_a_headless_run_gets_max_budget_usd_and_a_caller_s_budget_is_not_inherited(
    fake: FakeClaude, start_run
) -> None:
    fake.plan([{"exit": 0}])
    run = start_run("--budget-usd", "2.5", "-p", "hello", env={"CLAUDE_SHEPHERD_BUDGET_USD": "0.01"})
    assert run.wait() == 0, run.text
    start = fake.starts()[0]
    assert "--max-budget-usd=2.5" in start["argv"] and start["env"]["CLAUDE_SHEPHERD_BUDGET_USD"] == "2.5"
    fake.plan([{"exit": 0}])
    plain = start_run("-p", "hello", env={"CLAUDE_SHEPHERD_BUDGET_USD": "0.01"})
    assert plain.wait() == 0
    assert "CLAUDE_SHEPHERD_BUDGET_USD" not in fake.starts()[-1]["env"], "only claude-run's own --budget-usd"


@pytest.mark.parametrize("amount", ["five", "0.0000004", "0", "1.005"])
def test_a_budget_that_is_no_amount_is_one_line_and_exit_2(
    run_env: dict[str, str], workdir: Path, amount: str
) -> None:
    done = subprocess.run([claude_run_path(), "--budget-usd", amount], env=run_env, cwd=workdir,
                          capture_output=True, text=True, timeout=30)  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == (
        "claude-run: error: --budget-usd takes USD as a whole number of cents above 0, like 5 or 2.50, "
        f"not {amount!r} (to run without a budget, leave --budget-usd out)\n"
    )
