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
import subprocess
import time
import typing as t
from pathlib import Path

import pytest
from support.fixtures import script
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


# ------------------------------------------------------------- replies priced from the transcript

PRICEY = {"input_tokens": 10_000, "output_tokens": 2_000}
"""$0.06 a reply on claude-sonnet-4-5."""


def stamp(when: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(when)) + f".{int(when % 1 * 1000):03d}Z"


def append_reply(transcript: Path, n: int, *, tool: bool = True, model: str = "claude-sonnet-4-5",
                 when: float | None = None, usage: dict[str, int] = PRICEY) -> None:  # fmt: skip
    """Append what Claude writes for one reply: the tool result before it, then the reply itself."""
    block = (
        {"type": "tool_use", "id": f"toolu_{n}", "name": "Read", "input": {}} if tool else {"type": "text"}
    )
    lines = [
        {"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "content": "x"}]}},
        {"type": "assistant", "timestamp": stamp(time.time() if when is None else when), "isSidechain": False,
         "message": {"id": f"msg_{n}", "model": model, "role": "assistant", "content": [block], "usage": usage}},
    ]  # fmt: skip
    with transcript.open("a") as out:
        out.write("".join(json.dumps(line) + "\n" for line in lines))


def call_for(project: Path, transcript: Path, n: int) -> dict[str, object]:
    payload = tool(project, "Read", transcript=str(transcript), file_path=str(project / "notes.txt"))
    return {**payload, "session_id": CONVERSATION, "tool_use_id": f"toolu_{n}"}


def answer(done: subprocess.CompletedProcess[str]) -> dict[str, t.Any]:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else {}


@pytest.fixture
def transcript(project: Path) -> Path:
    path = project.parent / "home" / ".claude" / "projects" / "p" / f"{CONVERSATION}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": "spend"}}) + "\n")
    return path


def test_a_reply_the_status_line_has_not_drawn_counts_and_pauses_at_the_cap(
    project: Path, transcript: Path
) -> None:
    """Requests faster than the status line (or in ``claude -p``, where it never runs): the hook prices
    the reply asking for its call from the transcript, waiting for it when Claude writes it late, and
    pauses at the cap — the reply that crossed it is the last request. Claude's later figure for the
    same replies does not count them again."""
    env = hook_env(project, **{BUDGET_USD_ENV: "0.1"})
    append_reply(transcript, 1)
    assert answer(run("pre-tool-use", call_for(project, transcript, 1), env, cwd=project)) == {}
    assert spend.read(project / "sessions", me())["source"] == spend.ESTIMATED  # type: ignore[index]

    late = subprocess.Popen(
        [script("claude-hook"), "pre-tool-use"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=env, cwd=project,
    )  # fmt: skip
    try:
        late.stdin.write(json.dumps(call_for(project, transcript, 2)))  # type: ignore[union-attr]
        late.stdin.close()  # type: ignore[union-attr]
        time.sleep(0.3)  # the reply lands after the hook started
        append_reply(transcript, 2)
        late.wait(timeout=30)
        out, err = late.stdout.read(), late.stderr.read()  # type: ignore[union-attr]
    finally:
        late.kill()
        late.wait()
    paused = answer(subprocess.CompletedProcess([], late.returncode, out, err))
    assert paused["continue"] is False, paused
    assert "budget ($0.10) is spent ($0.12 estimated)" in paused["stopReason"], paused["stopReason"]
    assert run("status-line", status_line(project, 0.12), env, cwd=project).returncode == 0
    ledger = spend.read(project / "sessions", me())
    assert ledger is not None and (spend.spent(ledger), ledger["source"]) == (0.12, spend.MEASURED)


def test_the_reply_that_ends_a_turn_is_counted_by_the_stop_hook(project: Path, transcript: Path) -> None:
    """It asks for no tool, so no PreToolUse sees it: in ``claude -p`` it is the run's last reply."""
    env = hook_env(project, **{BUDGET_USD_ENV: "1"})
    append_reply(transcript, 1)
    run("pre-tool-use", call_for(project, transcript, 1), env, cwd=project)
    append_reply(transcript, 2, tool=False)
    stop = {"session_id": CONVERSATION, "transcript_path": str(transcript), "cwd": str(project),
            "hook_event_name": "Stop", "stop_hook_active": False}  # fmt: skip
    done = run("stop", stop, env, cwd=project)
    assert (done.returncode, done.stdout) == (0, "")
    assert spend.spent(spend.read(project / "sessions", me())) == 0.12
    assert run("stop", stop, env, cwd=project).returncode == 0
    assert spend.spent(spend.read(project / "sessions", me())) == 0.12, "each reply once"


def test_a_long_conversation_is_read_from_where_the_hooks_stopped(project: Path, transcript: Path) -> None:
    """A conversation the status line measured (its replies an hour old, $1 by Claude's figure) with a
    large transcript: only its newest part is read, its old replies are in Claude's figure, and from
    then on each hook reads only what was appended."""
    env = hook_env(project, **{BUDGET_USD_ENV: "5"})
    hour_ago = time.time() - 3600
    with transcript.open("a") as out:
        out.write((json.dumps({"type": "user", "message": {"content": "y" * 1000}}) + "\n") * 20_000)
    for n in range(1, 17):
        append_reply(transcript, n, when=hour_ago + n)
    assert run("status-line", {**status_line(project, 1.0), "transcript_path": str(transcript)}, env,
               cwd=project).returncode == 0  # fmt: skip
    append_reply(transcript, 17)
    began = time.monotonic()
    assert answer(run("pre-tool-use", call_for(project, transcript, 17), env, cwd=project)) == {}
    assert time.monotonic() - began < 5
    ledger = spend.read(project / "sessions", me())
    assert ledger is not None and spend.spent(ledger) == 1.06, "the old replies are in Claude's $1"
    assert ledger["conversations"][CONVERSATION]["o"] == transcript.stat().st_size


def test_a_sub_agents_call_does_not_wait_for_a_reply_the_main_transcript_never_gets(
    project: Path, transcript: Path
) -> None:
    """Claude gives a sub-agent's hooks the main conversation's transcript (and an ``agent_id``); the
    sub-agent's replies are not in it, so its calls are not held up waiting for them."""
    env = hook_env(project, **{BUDGET_USD_ENV: "5"})
    append_reply(transcript, 1)
    run("pre-tool-use", call_for(project, transcript, 1), env, cwd=project)

    def took(**extra: object) -> float:
        append_reply(transcript, 0, tool=False)  # the main transcript is being written
        began = time.monotonic()
        assert (
            answer(run("pre-tool-use", {**call_for(project, transcript, 99), **extra}, env, cwd=project))
            == {}
        )
        return time.monotonic() - began

    waited, sub_agent = took(), took(agent_id="a1b2c3")
    assert waited >= 1.0, "a call of the main agent waits for its reply while the transcript is written"
    assert sub_agent < waited - 0.5, (sub_agent, waited)


def _reply_with_subagents(project: Path, ids: list[str]) -> Path:
    """A transcript whose last reply asks for sub-agents *ids* at once, one line per block as Claude
    Code writes a reply."""
    transcript = project / "conversation.jsonl"
    lines = [
        {"type": "assistant", "isSidechain": False, "message": {"id": "msg_1", "role": "assistant",
         "content": [{"type": "tool_use", "id": i, "name": "Task", "input": {"prompt": "x"}}],
         "usage": {"input_tokens": 10, "output_tokens": 10}, "model": "claude-sonnet-4-5"}}
        for i in ids
    ]  # fmt: skip
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return transcript


def test_sub_agents_run_one_at_a_time_while_a_budget_holds(project: Path) -> None:
    """Sub-agents running together each spend before any reply is priced (attacks measured $0.46 on a
    $0.10 budget with eight in one reply, and more with one per reply, Claude Code running the main
    agent's sub-agents in the background unless told not to): while a budget holds the agent, only the
    first of one reply's runs, only in the foreground, and no sub-agent starts sub-agents."""
    env = hook_env(project, **{BUDGET_USD_ENV: "1"})
    run("status-line", status_line(project, 0.01), env, cwd=project)
    transcript = str(_reply_with_subagents(project, ["toolu_a", "toolu_b", "toolu_c"]))

    def ask(tool_use_id: str, environment: dict[str, str] = env, agent: str = "", **extra: object) -> str:
        call = tool(project, "Task", transcript=transcript, prompt="x", **extra)
        call["tool_use_id"] = tool_use_id
        if agent:
            call["agent_id"] = agent  # a sub-agent's own call, as Claude Code says it
        return run("pre-tool-use", call, environment, cwd=project).stdout

    def reason(answer: str) -> str:
        decided = json.loads(answer)
        assert "continue" not in decided, "refused, not paused: the model asks again later"
        return str(decided["hookSpecificOutput"]["permissionDecisionReason"])

    assert ask("toolu_a", run_in_background=False) == "", (
        "the first sub-agent of the reply, in the foreground"
    )
    for later in ("toolu_b", "toolu_c"):
        assert "one sub-agent at a time" in reason(ask(later, run_in_background=False))
    assert "run_in_background: false" in reason(ask("toolu_a")), "the CLI's default is the background"
    assert "run_in_background: false" in reason(ask("toolu_a", run_in_background=True))
    assert "no sub-agents of its own" in reason(ask("toolu_a", agent="sub-1", run_in_background=False))
    (project / ".claude" / "agents").mkdir(parents=True)
    (project / ".claude" / "agents" / "bg.md").write_text("---\nname: bg\nbackground: true\n---\nwork\n")
    defined = ask("toolu_a", run_in_background=False, subagent_type="bg")
    assert "background: true" in reason(defined)
    # Claude Code knows a definition by its name:, whatever its file is called, in sub-folders too
    (project / ".claude" / "agents" / "team").mkdir()
    (project / ".claude" / "agents" / "team" / "helper.md").write_text(
        "---\ndescription: x\nname: 'sneaky'\nbackground: True\n---\nwork\n"
    )
    assert "background: true" in reason(ask("toolu_a", run_in_background=False, subagent_type="sneaky"))
    assert ask("toolu_a", run_in_background=False, subagent_type="helper") == "", "helper.md names another"
    for n in range(300):  # one could hide among too many to read: refused
        (project / ".claude" / "agents" / f"filler{n}.md").write_text("---\nname: x\n---\n")
    assert "background: true" in reason(ask("toolu_a", run_in_background=False, subagent_type="other"))
    assert ask("toolu_b", environment=hook_env(project)) == "", "without a budget, sub-agents as asked"


@pytest.mark.parametrize("how", ["too_long", "unreadable"])
def test_a_refusal_before_the_rules_ends_the_turn_of_an_agent_at_its_budget(project: Path, how: str) -> None:
    """An input too long to check, or one that cannot be read, is refused before the rules run: for an
    agent at its budget that refusal must end the turn too, or the model asks again, each time a request
    past the cap (an attack made 11 that way); below the budget it stays a plain refusal."""
    env = hook_env(project, **{BUDGET_USD_ENV: "1"})

    def refused() -> dict[str, t.Any]:
        if how == "too_long":
            done = run("pre-tool-use", tool(project, "Read", file_path="/" + "a" * 5000), env, cwd=project)
        else:
            done = subprocess.run([script("claude-hook"), "pre-tool-use"], input="{not json", env=env,
                                  cwd=project, capture_output=True, text=True, timeout=30)  # fmt: skip
        assert done.returncode == 0, done.stderr
        out = json.loads(done.stdout)
        assert out["hookSpecificOutput"]["permissionDecision"] == "deny", out
        return out

    run("status-line", status_line(project, 0.5), env, cwd=project)
    assert refused().get("continue") is None, "below its budget a refusal is only a refusal"
    run("status-line", status_line(project, 2.0), env, cwd=project)
    assert refused().get("continue") is False, "at its budget a refusal ends the turn"


def test_the_tool_batch_hook_ends_the_turn_at_the_budget_before_the_next_request(
    project: Path, transcript: Path
) -> None:
    """PostToolBatch runs before Claude asks the model again, also after calls Claude refused before any
    PreToolUse (an unknown tool): it prices the reply that asked for the batch and stops at the budget."""
    env = hook_env(project, **{BUDGET_USD_ENV: "0.10"})
    batch = {"session_id": CONVERSATION, "cwd": str(project), "transcript_path": str(transcript),
             "hook_event_name": "PostToolBatch", "tool_calls": []}  # fmt: skip
    append_reply(transcript, 1)
    done = run("post-tool-batch", batch, env, cwd=project)
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr
    append_reply(transcript, 2)  # $0.12: past $0.10
    done = run("post-tool-batch", batch, env, cwd=project)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout).get("continue") is False, done.stdout
    assert "hookSpecificOutput" not in json.loads(done.stdout), "PostToolBatch takes no deny"


def test_a_tool_batch_whose_input_cannot_be_read_still_stops_an_agent_at_its_budget(project: Path) -> None:
    """A batch holding input nested too deep to parse (an unknown tool's, which no PreToolUse saw) must not
    let an agent at its budget send its next request: the ledger alone says it is at the budget."""
    env = hook_env(project, **{BUDGET_USD_ENV: "1"})
    deep = (
        '{"hook_event_name": "PostToolBatch", "tool_calls": [{"tool_input": '
        + "[" * 5000
        + "]" * 5000
        + "}]}"
    )
    run("status-line", status_line(project, 0.5), env, cwd=project)
    below = run("post-tool-batch", deep, env, cwd=project)
    assert below.returncode == 0 and below.stdout == "", below.stdout + below.stderr
    run("status-line", status_line(project, 2.0), env, cwd=project)
    at = run("post-tool-batch", deep, env, cwd=project)
    assert at.returncode == 0 and json.loads(at.stdout).get("continue") is False, at.stdout + at.stderr


def test_a_line_nested_too_deep_does_not_break_one_sub_agent_at_a_time(tmp_path: Path) -> None:
    """The reply's other calls are read from the transcript: a line the parser cannot take is skipped,
    and the second sub-agent of the reply is still told to wait (it used to escape, admitted)."""
    from claude_shepherd.hooks.subagent_admission import first_subagent_call

    reply = {"type": "assistant", "message": {"id": "m1", "content": [
        {"type": "tool_use", "id": "a1", "name": "Agent", "input": {}},
        {"type": "tool_use", "id": "a2", "name": "Agent", "input": {}}]}}  # fmt: skip
    path = tmp_path / "t.jsonl"
    deep = '{"type": "tool_use", "x": ' + "[" * 5000 + "]" * 5000 + "}"
    path.write_text(json.dumps(reply) + "\n" + deep + "\n")
    assert first_subagent_call(str(path), "a2") == "a1"


def test_a_reply_whose_calls_begin_before_the_tail_read_still_has_its_first_call(tmp_path: Path) -> None:
    """Claude writes each block of a reply on a line of its own: eight sub-agent calls with long prompts
    make a reply longer than the 1 MiB searched first. Its first call is still found (it used to be
    missed, so a later call of the same reply was taken for the first and ran beside it)."""
    from claude_shepherd.hooks.subagent_admission import TAIL, first_subagent_call

    path = tmp_path / "t.jsonl"
    with path.open("w") as out:
        out.write(json.dumps({"type": "user", "message": {"content": "go"}}) + "\n")
        for n in range(8):
            block = {
                "type": "tool_use",
                "id": f"a{n}",
                "name": "Agent",
                "input": {"prompt": "x" * (TAIL // 4)},
            }
            out.write(json.dumps({"type": "assistant", "message": {"id": "m1", "content": [block]}}) + "\n")
    assert path.stat().st_size > TAIL
    assert {first_subagent_call(str(path), f"a{n}") for n in range(8)} == {"a0"}
