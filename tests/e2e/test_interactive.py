"""End to end, interactive in tmux: the status line, the prompt gate, overflow restart (S4, S11).

The real CLI runs full-screen under ``claude-run`` in a pane of a private tmux
server; prompts are typed with send-keys; assertions are on what the CLI sent
to the mock API and on the session state.
"""

from __future__ import annotations

import json
import sys
import typing as t
from pathlib import Path

import psutil
import pytest
from support.waiting import wait_until

from .cli import MODEL, Tmux
from .mock_api import MockAPI, Turn
from .test_headless import SESSION, install_hooks, result_text, state

BIN = Path(sys.executable).parent
PROMPT_READY = "❯"


def _cmdline(proc: psutil.Process) -> list[str]:
    try:
        return proc.cmdline()
    except psutil.Error:
        return []


def session_header(request: dict[str, t.Any]) -> str | None:
    return request["headers"].get("X-Claude-Code-Session-Id")


class Agent:
    """claude-run + the real Claude Code in a tmux pane."""

    def __init__(self, tmux: Tmux, world: t.Any, env: dict[str, str], settings: Path) -> None:
        self.tmux = tmux
        argv = [str(BIN / "claude-run"), "--", "--dangerously-skip-permissions", "--model", MODEL,
                "--settings", str(settings)]  # fmt: skip
        self.pane = tmux.start(argv, env, world.project)
        tmux.wait_for(self.pane, PROMPT_READY, timeout=60)

    def say(self, text: str) -> None:
        self.tmux.type(self.pane, text)

    def supervisor(self) -> psutil.Process:
        pane_pid = int(self.tmux("display-message", "-p", "-t", self.pane, "#{pane_pid}").strip())
        return psutil.Process(pane_pid)


@pytest.fixture
def agent(tmux: Tmux, world, env_for) -> t.Callable[[], Agent]:
    def start() -> Agent:
        env = env_for()
        return Agent(tmux, world, env, install_hooks(world, env))

    return start


def drained(api: MockAPI, requests_at_least: int = 0) -> t.Callable[[], bool]:
    return lambda: api.pending() == 0 and len(api.requests) >= requests_at_least


def test_status_line_binds_and_clear_rebinds(world, mock_api: MockAPI, agent) -> None:
    mock_api.script(
        Turn.bash(f"session activate {SESSION} implement"),
        Turn.say("activated", input_tokens=2000, cache_read=48000),
    )
    a = agent()
    a.say("please begin")
    wait_until(drained(mock_api, 2), what="the scripted turns")
    first_id = session_header(mock_api.requests[-1])
    wait_until(lambda: state(world).get("contextUsage") == 0.25, what="contextUsage from the status line")
    st = state(world)
    assert st["sessionId"] == first_id and st["contextWindowSize"] == 200000
    a.tmux.wait_for(a.pane, "E2E · implement", timeout=20)
    # /clear starts a new conversation id: SessionStart(clear) re-binds it.
    a.say("/clear")
    wait_until(lambda: state(world)["sessionId"] != first_id, timeout=30, what="the new conversation id")
    new_id = state(world)["sessionId"]
    mock_api.script(Turn.say("hello again"))
    a.say("and now?")
    wait_until(drained(mock_api), what="the reply after /clear")
    assert session_header(mock_api.requests[-1]) == new_id


def test_s11_prompt_gate_after_deactivate(world, mock_api: MockAPI, agent) -> None:
    mock_api.script(
        Turn.bash(f"session activate {SESSION} implement"),
        Turn.bash(f"session deactivate {SESSION} <<'EOF'\nBuilt the thing.\nEOF"),
        Turn.say("all wrapped up"),
    )
    a = agent()
    a.say("do the task")
    wait_until(drained(mock_api, 3), what="the first task")
    assert "No active session" in mock_api.all_text(mock_api.main_requests()[0])
    wait_until(lambda: state(world).get("lifecycle") == "completed", what="lifecycle=completed")
    mock_api.script(Turn.say("sure"))
    a.say("next task please")
    wait_until(drained(mock_api), what="the second prompt's request")
    text = mock_api.all_text(mock_api.main_requests()[-1])
    assert "UserPromptSubmit hook additional context" in text
    assert "is completed" in text and "implement" in text


def test_s4_overflow_dehydrate_restart_continue(world, mock_api: MockAPI, agent) -> None:
    handover = "# Handover\n\n## Required files\n- `notes.md` - the plan\n\nNext: write the tests."
    (world.project / "notes.md").write_text("plan\n")
    is_continue = lambda body: "continue --session" in MockAPI.all_text(body)  # noqa: E731
    mock_api.script(
        Turn.bash(f"session activate {SESSION} implement"),
        Turn.bash("echo TOO_LATE > late.txt", input_tokens=2000, cache_read=158000),  # 80 % of 200k
        Turn.bash(f"session dehydrate {SESSION} <<'EOF'\n{handover}\nEOF"),
        Turn.bash(f"session continue {SESSION}", when=is_continue),
        Turn.say("picked up where we left off"),
    )
    a = agent()
    supervisor = a.supervisor()
    a.say("begin the long task")
    wait_until(drained(mock_api), timeout=90, what="the whole overflow / restart cycle")
    mains = mock_api.main_requests()
    # The tool call after the usage jump was denied with the dehydrate instruction.
    deny = [r for b in mains for r in mock_api.tool_results(b) if r.get("is_error")]
    assert deny and "session dehydrate" in result_text(deny[0])
    assert not (world.project / "late.txt").exists()
    # The restarted Claude got the continuation prompt, in a new conversation (no --resume).
    restarted = next(r for r in mock_api.requests if r["body"].get("tools") and is_continue(r["body"]))
    assert session_header(restarted) != session_header(mock_api.requests[0])
    assert "begin the long task" not in MockAPI.all_text(restarted["body"]), (
        "the old conversation was not resumed"
    )
    # `session continue` printed the handover to the new agent.
    last = mock_api.tool_results(mains[-1])[-1]
    assert "Next: write the tests." in result_text(last) and "- notes.md" in result_text(last)
    st = state(world)
    assert (st["lifecycle"], st["overflowed"], st["killRequested"]) == ("active", False, False)
    assert st["sessionId"] == session_header(restarted)
    assert supervisor.is_running(), "the same supervisor restarted Claude"
    claude = [argv for argv in map(_cmdline, supervisor.children()) if argv and "--settings" in argv]
    assert claude and all("--resume" not in argv for argv in claude)
    assert json.loads((world.project / SESSION / ".state.json").read_text())["pid"] == supervisor.pid


def test_dehydrate_leaves_the_old_conversation_silent(world, mock_api: MockAPI, agent) -> None:
    """After the tool call that runs ``session dehydrate``, the old conversation sends no request at all:
    the model never receives its result (the mock answers at once, so any request would be seen)."""
    dehydrate = Turn.bash(f"session dehydrate {SESSION} <<'EOF'\n# Handover\n\nNext: more.\nEOF",
                          input_tokens=2000, cache_read=140000)  # fmt: skip
    is_continue = lambda body: "continue --session" in MockAPI.all_text(body)  # noqa: E731
    mock_api.script(
        Turn.bash(f"session activate {SESSION} implement"),
        dehydrate,
        Turn.bash(f"session continue {SESSION}", when=is_continue),
        Turn.say("continuing"),
    )
    a = agent()
    a.say("begin")
    wait_until(drained(mock_api), timeout=90, what="the dehydrate / restart cycle")
    served = next(i for i, r in enumerate(mock_api.requests) if r["turn"] is dehydrate)
    old = session_header(mock_api.requests[served])
    later = [r for r in mock_api.requests[served + 1 :] if session_header(r) == old]
    assert old and not later, f"the old conversation sent {len(later)} request(s) after dehydrate"
    assert state(world)["lifecycle"] == "active"
