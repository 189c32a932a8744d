"""``claude-run --budget-usd``: one agent's budget, enforced by the same hooks, through its environment.

The stand-in Claude runs the real status line and PreToolUse hook under a real ``claude-run`` on a
pty; a headless ``-p`` run (no status line) gets Claude's own ``--max-budget-usd`` for what is left
of the whole run's budget, and claude-run stops for good, exit 4, once it is spent.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from support.claude_run import FakeClaude, FleetTmux, claude_run_path, make_transcript

from claude_shepherd.supervisor.session import spend_writes

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
    assert run.wait() == 4, "Claude ended paused at its budget: no goodbye, " + run.text
    assert fake.starts()[0]["env"]["CLAUDE_SHEPHERD_BUDGET_USD"] == "0.5"
    ran = [e for e in fake.events("run") if e["args"][1] == "pre-tool-use"]
    first, second = (json.loads(e["stdout"]) if e["stdout"].strip() else {} for e in ran)
    assert first.get("continue", True), first
    assert second["continue"] is False and "budget ($0.50) is spent ($0.55 measured)" in second["stopReason"]
    # Its own budget cannot be raised while it runs: the hint is a command that works as typed, and
    # brings back the conversation with its session (claude-run takes over the session it ran in).
    hint = f"claude-run --budget-usd 0.5 -- --resume {CONVERSATION}"
    assert f"`{hint}`" in second["stopReason"], second["stopReason"]
    assert f"Paused at its budget ($0.55 of $0.50); the conversation is kept. To go on: {hint}" in run.text
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


# ------------------------------------------------------------------ a headless run's budget is its whole run

TURN = {"input_tokens": 10_000, "output_tokens": 2_000}
"""$0.06 a reply on claude-sonnet-4-5."""


def lines(*entries: dict[str, object]) -> str:
    return "".join(json.dumps(entry) + "\n" for entry in entries)


def reply(n: int, tool: bool = True) -> dict[str, object]:
    block = (
        {"type": "tool_use", "id": f"toolu_{n}", "name": "Read", "input": {}} if tool else {"type": "text"}
    )
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    message = {
        "id": f"msg_{n}",
        "model": "claude-sonnet-4-5",
        "role": "assistant",
        "content": [block],
        "usage": TURN,
    }
    return {"type": "assistant", "timestamp": stamp, "message": message}


def cost_state(usd: float) -> dict[str, object]:
    return {"type": "cost-state", "sessionId": CONVERSATION, "totalCostUSD": usd}


class Headless:
    """Steps of a stand-in ``claude -p`` that spends as the real one does: its transcript, its hooks."""

    def __init__(self, run_env: dict[str, str], workdir: Path) -> None:
        self.workdir = workdir
        slug = str(workdir).replace("/", "-")
        self.transcript = Path(run_env["CLAUDE_CONFIG_DIR"]) / "projects" / slug / f"{CONVERSATION}.jsonl"
        self.transcript.parent.mkdir(parents=True)

    def write(self, *entries: dict[str, object]) -> dict[str, object]:
        return {"run": ["sh", "-c", f"cat >> '{self.transcript}'"], "stdin": lines(*entries)}

    def hook(self, event: str, **data: object) -> dict[str, object]:
        payload = {
            "session_id": CONVERSATION,
            "cwd": str(self.workdir),
            "transcript_path": str(self.transcript),
        }
        return {"run": [str(Path(claude_run_path()).with_name("claude-hook")), event],
                "stdin": json.dumps({**payload, **data})}  # fmt: skip

    def turn(self, n: int) -> list[dict[str, object]]:
        """Reply *n* asks for a tool; the PreToolUse hook sees it."""
        call = {
            "hook_event_name": "PreToolUse",
            "tool_name": "Read",
            "tool_input": {},
            "tool_use_id": f"toolu_{n}",
        }
        return [self.write(reply(n)), self.hook("pre-tool-use", **call)]


def test_a_headless_run_counts_every_launch_and_stops_for_good_at_its_budget(
    fake: FakeClaude, start_run, run_env: dict[str, str], workdir: Path
) -> None:
    """Claude's own --max-budget-usd stop is status 1, like a crash: relaunched, each launch had the
    whole budget again. Now each launch gets what is left, and the stop at the budget is the run's."""
    claude = Headless(run_env, workdir)
    started = claude.hook("session-start", hook_event_name="SessionStart", source="startup")
    fake.plan(
        [started, *claude.turn(1), claude.write(cost_state(0.06)), {"exit": 1}],  # a crash
        {"resume": "check", "steps": [started, claude.write(reply(2), cost_state(0.12)),
                                      {"print": "Error: Exceeded USD budget (0.04)"}, {"exit": 1}]},
        default=[{"exit": 0}],
    )  # fmt: skip
    run = start_run("--budget-usd", "0.10", "-p", "spend")
    assert run.wait() == 4, run.text
    assert "claude-run: the budget of $0.10 is spent ($0.12 measured); nothing more is sent" in run.text
    starts = fake.starts()
    assert len(starts) == 2, "no launch after the budget is spent"
    assert "--max-budget-usd=0.1" in starts[0]["argv"]
    assert "--max-budget-usd=0.04" in starts[1]["argv"], (
        "the relaunch gets what is left, not the budget again"
    )
    assert "crash" in run.text and "crash 2" not in run.text, run.text


def test_a_headless_claude_our_hook_stopped_at_the_cap_is_not_relaunched(
    fake: FakeClaude, start_run, run_env: dict[str, str], workdir: Path
) -> None:
    """The PreToolUse hook prices each reply (no status line runs in -p) and stops the turn at the cap:
    Claude exits 0, which is the budget's stop too, said as such."""
    claude = Headless(run_env, workdir)
    started = claude.hook("session-start", hook_event_name="SessionStart", source="startup")
    fake.plan([started, *claude.turn(1), *claude.turn(2), {"exit": 0}], default=[{"exit": 0}])
    run = start_run("--budget-usd", "0.10", "-p", "spend")
    assert run.wait() == 4, run.text
    stopped = [json.loads(e["stdout"]) for e in fake.events("run") if e["args"][1:] == ["pre-tool-use"]]
    assert stopped[0].get("continue", True) and stopped[1]["continue"] is False, stopped
    assert "the budget of $0.10 is spent ($0.12 estimated); nothing more is sent" in run.text, run.text
    assert len(fake.starts()) == 1


def test_a_headless_run_in_a_pane_that_spent_its_budget_launches_nothing(
    fake: FakeClaude, start_run, workdir: Path, fleet_tmux: FleetTmux
) -> None:
    """In a fleet pane --budget-usd counts the pane's spend so far: nothing is left, nothing is sent."""
    spend_writes.measure(workdir / "sessions", fleet_tmux.pane_id, "earlier", 0.15)
    fake.plan(default=[{"exit": 0}])
    run = start_run("--budget-usd", "0.10", "-p", "spend", pane=fleet_tmux)
    assert run.wait() == 4, run.text
    assert "the budget of $0.10 is spent ($0.15 measured); nothing more is sent" in run.text
    assert fake.starts() == []
