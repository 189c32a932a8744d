"""The overflow gate (seed 002 S4, R4; original-system §3.8, §4.5) and where usage comes from."""

from __future__ import annotations

import json
import os
import typing as t
from pathlib import Path

import pytest
from support.hooks import activate, assistant_line, bash, call, hook_env, run, set_fields, state, tool

from claude_shepherd.hooks.context import Usage, newest, transcript_usage
from claude_shepherd.supervisor.session.fields import DEFAULT_DEHYDRATE_CALL_BUDGET, F, Lifecycle

OVERFLOW = "Context overflow"


@pytest.fixture
def env(project: Path) -> dict[str, str]:
    return hook_env(project)


def grep(project: Path, **kw) -> dict:
    return tool(project, "Grep", pattern="x", **kw)


def transcript_of(project: Path) -> Path:
    path = project.parent / "home" / ".claude" / "projects" / "p" / "main.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def write_transcript(project: Path, *lines: str) -> Path:
    path = transcript_of(project)
    path.write_text("".join(line + "\n" for line in lines))
    return path


# --------------------------------------------------------------------------- threshold


@pytest.mark.parametrize(
    "usage, blocked",
    [
        (0.0, False),
        (0.5, False),
        (0.75, False),
        (0.7599, False),
        (0.76, True),
        (0.77, True),
        (0.8, True),
        (1.0, True),
    ],
)
def test_threshold_is_076_inclusive(project: Path, env: dict[str, str], usage: float, blocked: bool) -> None:
    session_dir = activate(project, contextUsage=usage)
    answer = call("pre-tool-use", grep(project), env)
    assert answer.denied is blocked
    assert state(session_dir)[F.OVERFLOWED] is blocked


def test_overflow_deny_says_how_to_dehydrate(project: Path, env: dict[str, str]) -> None:
    activate(project, contextUsage=0.8, currentPhase="3: Build")
    reason = call("pre-tool-use", tool(project, "Edit", file_path="a.py"), env).reason
    assert reason.startswith(f"§CMD_REANCHOR_AFTER_RESTART: {OVERFLOW}")
    assert "80%" in reason and "76%" in reason
    assert "\nsession dehydrate sessions/2026_11_22_TOPIC <<'EOF'\n" in reason and "\nEOF\n" in reason
    assert "implement session at 3: Build" in reason
    assert 'Skill(skill: "session", args: "dehydrate")' in reason


@pytest.mark.parametrize(
    "name, tool_input",
    [
        ("Read", {"file_path": "/etc/hosts"}),
        ("Bash", {"command": "git status"}),
        ("Write", {"file_path": "x"}),
        ("Task", {"prompt": "x"}),
    ],
)
def test_everything_but_session_is_denied_during_overflow(
    project: Path, env: dict[str, str], name: str, tool_input: dict
) -> None:
    activate(project, contextUsage=0.9)
    assert OVERFLOW in call("pre-tool-use", tool(project, name, **tool_input), env).reason


def test_session_command_passes_during_overflow_and_sets_nothing(project: Path, env: dict[str, str]) -> None:
    session_dir = activate(project, contextUsage=0.9)
    before = state(session_dir)
    assert call(
        "pre-tool-use", bash(project, "session dehydrate sessions/2026_11_22_TOPIC <<'EOF'\nx\nEOF"), env
    ).allowed
    assert state(session_dir) == before


def test_an_overflow_blocks_its_conversation_until_a_new_one_activates(
    project: Path, env: dict[str, str]
) -> None:
    session_dir = activate(project, contextUsage=0.9)
    assert call("pre-tool-use", grep(project), env).denied
    conversation = grep(project)["session_id"]
    assert state(session_dir)[F.OVERFLOW_CONVERSATION] == conversation
    set_fields(session_dir, contextUsage=0.3)  # e.g. after a compaction
    assert OVERFLOW in call("pre-tool-use", grep(project), env).reason, "still the overflowed conversation"
    other = dict(grep(project), session_id="0ther-conversation")
    assert call("pre-tool-use", other, env).allowed, "another conversation is not held by this overflow"
    assert state(session_dir)[F.OVERFLOWED] is True  # sticky until a new conversation activates


@pytest.mark.parametrize(
    "value, blocked_at_060",
    [
        ("0.5", True),
        ("0.7", False),
        ("bogus", False),
        ("0", False),
        ("1.5", False),
        ("nan", False),
        ("-1", False),
    ],
)
def test_threshold_is_configurable(project: Path, value: str, blocked_at_060: bool) -> None:
    activate(project, contextUsage=0.6)
    env = hook_env(project, CLAUDE_OVERFLOW_THRESHOLD=value)
    assert call("pre-tool-use", grep(project), env).denied is blocked_at_060


def test_bash_era_threshold_variable(project: Path) -> None:
    activate(project, contextUsage=0.6)
    assert call("pre-tool-use", grep(project), hook_env(project, OVERFLOW_THRESHOLD="0.55")).denied


def test_no_session_or_no_state_passes(project: Path, env: dict[str, str]) -> None:
    write_transcript(project, assistant_line(190_000))
    assert call("pre-tool-use", grep(project), env).allowed
    session_dir = activate(project, contextUsage=0.9)
    (session_dir / ".state.json").unlink()
    assert call("pre-tool-use", grep(project), env).allowed


# --------------------------------------------------------------------------- dehydrating


def dehydrate_skill(project: Path, args: str = "dehydrate restart", skill: str = "session") -> dict:
    return tool(project, "Skill", skill=skill, args=args)


def test_dehydrate_skill_starts_dehydrating_and_passes(project: Path, env: dict[str, str]) -> None:
    session_dir = activate(project, contextUsage=0.9)
    assert call("pre-tool-use", grep(project), env).denied
    assert call("pre-tool-use", dehydrate_skill(project), env).allowed
    after = state(session_dir)
    assert after[F.LIFECYCLE] == Lifecycle.DEHYDRATING and after[F.DEHYDRATE_TOOL_CALLS] == 0
    assert call("pre-tool-use", tool(project, "Edit", file_path="a.py"), env).allowed
    assert state(session_dir)[F.DEHYDRATE_TOOL_CALLS] == 1


def test_bash_era_dehydrate_skill_name(project: Path, env: dict[str, str]) -> None:
    session_dir = activate(project, contextUsage=0.9)
    assert call("pre-tool-use", dehydrate_skill(project, args="restart", skill="dehydrate"), env).allowed
    assert state(session_dir)[F.LIFECYCLE] == Lifecycle.DEHYDRATING


@pytest.mark.parametrize(
    "skill, args",
    [
        ("session", "continue --session x"),
        ("session", ""),
        ("session", "x dehydrate"),
        ("implement", "dehydrate"),
        ("sessions", "dehydrate"),
    ],
)
def test_other_skill_calls_do_not_start_dehydrating(
    project: Path, env: dict[str, str], skill: str, args: str
) -> None:
    session_dir = activate(project, contextUsage=0.9)
    call("pre-tool-use", dehydrate_skill(project, args=args, skill=skill), env)
    assert state(session_dir)[F.LIFECYCLE] == Lifecycle.ACTIVE


def test_dehydrating_is_bounded(project: Path, env: dict[str, str]) -> None:
    """The original's hole: invoke dehydrate once, then work on forever past the threshold."""
    session_dir = activate(project, contextUsage=0.95)
    call("pre-tool-use", dehydrate_skill(project), env)
    for n in range(DEFAULT_DEHYDRATE_CALL_BUDGET):
        assert call("pre-tool-use", tool(project, "Read", file_path=f"/src/{n}.py"), env).allowed, n
    answer = call("pre-tool-use", tool(project, "Read", file_path="/src/more.py"), env)
    assert answer.denied
    assert f"Dehydration has used its {DEFAULT_DEHYDRATE_CALL_BUDGET} tool calls" in answer.reason
    assert "session dehydrate sessions/2026_11_22_TOPIC <<'EOF'" in answer.reason
    # invoking the skill again does not refill the budget; the session command still passes
    assert call("pre-tool-use", dehydrate_skill(project), env).allowed
    assert call("pre-tool-use", grep(project), env).denied
    assert call(
        "pre-tool-use", bash(project, "session dehydrate sessions/2026_11_22_TOPIC <<'EOF'\nx\nEOF"), env
    ).allowed
    assert state(session_dir)[F.DEHYDRATE_TOOL_CALLS] == DEFAULT_DEHYDRATE_CALL_BUDGET


def test_dehydrate_budget_is_configurable(project: Path) -> None:
    activate(project, lifecycle=Lifecycle.DEHYDRATING, dehydrateToolCalls=0)
    env = hook_env(project, CLAUDE_DEHYDRATE_CALL_BUDGET="2")
    assert [call("pre-tool-use", grep(project), env).allowed for _ in range(3)] == [True, True, False]


def test_pending_restart_denies_every_tool_but_session(project: Path, env: dict[str, str]) -> None:
    """The conversation whose restart is pending is being ended: none of its tool calls runs, not even one."""
    activate(project, killRequested=True, lifecycle=Lifecycle.DEHYDRATING, contextUsage=0.1)
    for answer in (
        call("pre-tool-use", grep(project), env),
        call("pre-tool-use", dehydrate_skill(project), env),
    ):
        assert answer.denied
        assert "restart of this session is pending" in answer.reason and "exit Claude" in answer.reason
    assert call("pre-tool-use", bash(project, "session find"), env).allowed
    through_the_script = run("pre-tool-use", bash(project, "echo more"), env)
    assert "restart of this session is pending" in through_the_script.stdout, through_the_script.stderr


def test_dehydrate_skill_does_not_reopen_a_completed_session(project: Path) -> None:
    session_dir = activate(project, lifecycle=Lifecycle.COMPLETED)
    env = hook_env(project, SESSION_REQUIRED="1")
    assert call("pre-tool-use", dehydrate_skill(project), env).allowed  # Skill always passes the gate
    assert state(session_dir)[F.LIFECYCLE] == Lifecycle.COMPLETED
    assert call("pre-tool-use", grep(project), env).denied


def test_session_dehydrate_command_end_to_end(project: Path, env: dict[str, str], run_session) -> None:
    """Overflow → deny → `session dehydrate` (allowed) → restart requested; real processes."""
    session_dir = activate(project, contextUsage=0.9)
    denied = run("pre-tool-use", grep(project), env, cwd=project)
    assert OVERFLOW in denied.stdout
    handover = "session dehydrate sessions/2026_11_22_TOPIC <<'EOF'\n# Handover\nEOF"
    assert run("pre-tool-use", bash(project, handover), env, cwd=project).stdout == ""
    done = run_session(
        "dehydrate", "sessions/2026_11_22_TOPIC", input="# Handover\n## Required files\n- a.py\n"
    )
    assert done.returncode == 0, done.stderr
    after = state(session_dir)
    assert after[F.KILL_REQUESTED] is True and after[F.LIFECYCLE] == Lifecycle.DEHYDRATING
    assert after[F.OVERFLOWED] is True and F.SESSION_ID not in after


# --------------------------------------------------------------------------- usage from the transcript (-p mode)


def test_transcript_usage_blocks_without_a_status_line(project: Path, env: dict[str, str]) -> None:
    session_dir = activate(project)  # contextUsage 0, never dated: no status line ran
    write_transcript(project, assistant_line(10_000), assistant_line(160_000))  # 160k of sonnet's 200k
    answer = call("pre-tool-use", grep(project), env)
    assert answer.denied and "80%" in answer.reason
    assert state(session_dir)[F.OVERFLOWED] is True


def test_newer_reading_wins(project: Path, env: dict[str, str]) -> None:
    session_dir = activate(project)
    write_transcript(project, assistant_line(160_000, timestamp="2026-11-22T10:00:05.000Z"))
    set_fields(session_dir, contextUsage=0.5, contextUsageAt="2026-11-22T10:00:10Z")
    assert call("pre-tool-use", grep(project), env).allowed  # status line newer: 50%
    set_fields(session_dir, contextUsageAt="2026-11-22T10:00:01Z")
    assert call("pre-tool-use", grep(project), env).denied  # transcript newer: 80%


def test_the_models_window_outvotes_a_recorded_one(project: Path, env: dict[str, str]) -> None:
    """contextWindowSize sits in a file the agent can reach: a huge one must not make usage look tiny."""
    activate(project, contextWindowSize=10**12)
    write_transcript(project, assistant_line(160_000, model="claude-sonnet-4-5"))
    assert call("pre-tool-use", grep(project), env).denied  # 80% of sonnet's 200k, whatever was recorded


def test_a_recorded_window_counts_only_for_an_unknown_model_and_never_above_1m(
    project: Path, env: dict[str, str]
) -> None:
    session_dir = activate(project, contextWindowSize=200_000)
    write_transcript(project, assistant_line(160_000, model="some-future-model"))
    assert call("pre-tool-use", grep(project), env).denied  # 80% of the recorded 200k
    set_fields(session_dir, contextWindowSize=10**12, overflowed=False, overflowConversation=None)
    write_transcript(project, assistant_line(800_000, model="some-future-model"))
    assert call("pre-tool-use", grep(project), env).denied  # 80% of at most 1M


def test_unknown_model_without_recorded_window_is_unknown(project: Path, env: dict[str, str]) -> None:
    activate(project)
    write_transcript(project, assistant_line(190_000, model="some-future-model"))
    assert call("pre-tool-use", grep(project), env).allowed


@pytest.mark.parametrize("bad", ["lots", -5, None, True, [1], 1e400])
def test_bad_numbers_are_unknown_not_zero(project: Path, env: dict[str, str], bad: object) -> None:
    session_dir = activate(project, contextUsage=0.9)  # an undated stored reading over the threshold
    line = json.loads(assistant_line(1000))
    line["message"]["usage"]["input_tokens"] = bad
    write_transcript(project, json.dumps(line))
    assert call("pre-tool-use", grep(project), env).denied  # the transcript did not count as 0%
    set_fields(session_dir, contextUsage=0.1, overflowed=False, overflowConversation=None)
    answer = call("pre-tool-use", grep(project), env)  # nor did the stored reading stand in for it
    assert answer.denied and "Context usage unknown" in answer.reason
    assert state(session_dir)[F.OVERFLOWED] is False  # unknown is denied, not made sticky


@pytest.mark.parametrize("stored", ["0.9", None, -1, True, {"x": 1}])
def test_bad_stored_usage_is_unknown(project: Path, env: dict[str, str], stored: object) -> None:
    activate(project, contextUsage=stored)
    assert call("pre-tool-use", grep(project), env).allowed
    write_transcript(project, assistant_line(170_000))
    assert call("pre-tool-use", grep(project), env).denied


def test_sidechain_synthetic_and_empty_lines_are_skipped(project: Path, env: dict[str, str]) -> None:
    activate(project)
    write_transcript(
        project,
        assistant_line(170_000),
        assistant_line(5_000, sidechain=True),  # a sub-agent's own context
        assistant_line(0, model="<synthetic>", input_tokens=0, cache_read_input_tokens=0),
        json.dumps({"type": "user", "message": {"usage": "no"}}),
        '{broken json with "usage"',
    )
    assert call("pre-tool-use", grep(project), env).denied


def nested_line(tokens: int, depth: int = 100_000, **kw: t.Any) -> str:
    """An assistant line whose tool input nests *depth* levels deep: past any JSON parser's recursion."""
    line = assistant_line(tokens, **kw)
    return line.replace('"input": {}', '"input": ' + '{"a": ' * depth + "1" + "}" * depth)


def test_an_unreadable_newest_reading_is_unknown_not_the_older_one(
    project: Path, env: dict[str, str]
) -> None:
    """At 95% the response asking for the call nests past the parser: the 5% line before it must not
    judge the call (it did, and the call ran in `claude -p`)."""
    session_dir = activate(project)
    path = write_transcript(
        project,
        assistant_line(10_000, tool_use_id="toolu_prev"),
        json.dumps({"type": "user", "message": {"content": "ok"}}),
        nested_line(190_000, tool_use_id="toolu_01"),
    )
    with pytest.raises(RecursionError):
        json.loads(path.read_text().splitlines()[-1])  # the parser really cannot read it
    answer = call("pre-tool-use", grep(project), env)
    assert answer.denied and "Context usage unknown" in answer.reason
    assert "session dehydrate sessions/2026_11_22_TOPIC" in answer.reason
    assert state(session_dir)[F.OVERFLOWED] is False  # not sticky: the next readable response judges
    usage = transcript_usage(str(path), None, "toolu_01")
    assert usage is not None and usage.unreadable
    assert call("pre-tool-use", bash(project, "session find"), env).allowed  # dehydrating stays possible


def test_an_unreadable_line_that_is_no_response_is_passed_over(project: Path, env: dict[str, str]) -> None:
    activate(project)
    deep_user_line = json.dumps({"type": "user", "usage": 1, "x": "y"}).replace(
        '"x": "y"', '"x": ' + "[" * 100_000 + "]" * 100_000
    )
    write_transcript(project, assistant_line(10_000), deep_user_line)
    assert call("pre-tool-use", grep(project), env).allowed  # 5%, from the response before it


def test_a_line_still_being_written_is_waited_for(project: Path, env: dict[str, str]) -> None:
    """The transcript's last line, cut short because it is being written, is neither skipped (the older
    reading would judge) nor taken as unreadable: the hook waits for the rest."""
    import threading
    import time

    activate(project)
    whole = assistant_line(170_000, tool_use_id="toolu_01") + "\n"
    path = write_transcript(project, assistant_line(10_000, tool_use_id="toolu_prev"))
    with path.open("a") as handle:
        handle.write(whole[:-12])  # its usage and its tool_use id written, not its end

    def finish() -> None:
        time.sleep(0.05)
        with path.open("a") as handle:
            handle.write(whole[-12:])

    writer = threading.Thread(target=finish)
    writer.start()
    try:
        answer = call("pre-tool-use", grep(project), env)
    finally:
        writer.join()
    assert answer.denied and "85%" in answer.reason


def test_a_line_cut_short_for_good_is_unreadable(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(assistant_line(10_000, tool_use_id="toolu_prev") + "\n" + assistant_line(170_000)[:-30])
    usage = transcript_usage(str(path), None, "toolu_01", wait=0.05)
    assert usage is not None and usage.unreadable


def test_usage_found_behind_a_huge_line(project: Path, env: dict[str, str]) -> None:
    activate(project)
    huge = json.dumps({"type": "user", "message": {"content": "x" * 3_000_000}})
    write_transcript(project, assistant_line(170_000), huge)
    assert call("pre-tool-use", grep(project), env).denied


def test_missing_or_odd_transcript_paths(project: Path, env: dict[str, str]) -> None:
    activate(project)
    for path in ("", "relative.jsonl", str(project / "nope.jsonl"), str(project), "/dev/null"):
        payload = grep(project)
        payload["transcript_path"] = path
        assert call("pre-tool-use", payload, env).allowed, path


def test_newest_rules() -> None:
    early, late = (
        Usage(0.9, "2026-11-22T10:00:00Z", "status line"),
        Usage(0.1, "2026-11-22T10:00:01.5Z", "transcript"),
    )
    assert newest(early, late) is late and newest(late, early) is late
    assert newest(None, early) is early and newest(early, None) is early and newest(None, None) is None
    undated = Usage(0.95, "", "status line")
    assert newest(undated, early) is early  # a dated reading beats an undated one
    same = Usage(0.5, "2026-11-22T10:00:00.900Z", "transcript")
    assert newest(early, same) is early  # same second: the fuller one
    unknown = Usage(None, "", "transcript")
    assert newest(late, unknown) is unknown and newest(unknown, late) is unknown  # never an older one


def test_transcript_usage_parses_real_shape(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        assistant_line(
            161_000,
            model="claude-opus-5-5",
            input_tokens=1000,
            cache_creation_input_tokens=10_000,
            cache_read_input_tokens=150_000,
        )
        + "\n"
    )
    usage = transcript_usage(str(path))
    assert usage is not None and usage.fraction == pytest.approx(0.161) and usage.source == "transcript"
    # A recorded window does not outvote the model's own.
    assert transcript_usage(str(path), 200_000).fraction == pytest.approx(0.161)  # type: ignore[union-attr]


def test_waits_for_the_line_of_this_tool_call(project: Path, env: dict[str, str]) -> None:
    """Claude Code writes the transcript asynchronously: the line asking for this call may land
    just after the hook starts (seen with the real CLI). The hook waits for it briefly."""
    import threading
    import time

    activate(project)
    path = write_transcript(project, assistant_line(10_000, tool_use_id="toolu_prev"))
    payload = grep(project)
    payload["tool_use_id"] = "toolu_now"

    def late_write() -> None:
        time.sleep(0.05)
        with path.open("a") as handle:
            handle.write(assistant_line(170_000, tool_use_id="toolu_now") + "\n")

    writer = threading.Thread(target=late_write)
    writer.start()
    try:
        answer = call("pre-tool-use", payload, env)
    finally:
        writer.join()
    assert answer.denied and OVERFLOW in answer.reason


def test_no_wait_when_nobody_writes_the_transcript(project: Path, env: dict[str, str]) -> None:
    import time

    activate(project)
    path = write_transcript(project, assistant_line(10_000, tool_use_id="toolu_prev"))
    os.utime(path, (time.time() - 60, time.time() - 60))
    payload = grep(project)
    payload["tool_use_id"] = "toolu_elsewhere"  # e.g. a sub-agent's call, in another transcript
    start = time.monotonic()
    assert call("pre-tool-use", payload, env).allowed
    assert time.monotonic() - start < 0.2
    assert transcript_usage(str(path), None, "toolu_elsewhere").fraction == pytest.approx(0.05)  # type: ignore[union-attr]


def test_wait_is_bounded(tmp_path: Path) -> None:
    import time

    path = tmp_path / "t.jsonl"
    path.write_text(assistant_line(10_000, tool_use_id="toolu_prev") + "\n")
    start = time.monotonic()
    usage = transcript_usage(str(path), None, "toolu_never", wait=0.1)
    assert 0.1 <= time.monotonic() - start < 1.0
    assert usage is not None and usage.fraction == pytest.approx(0.05)  # the previous reading, not unknown


def test_a_stored_reading_from_the_future_does_not_outvote_the_transcript(
    project: Path, env: dict[str, str]
) -> None:
    """In `claude -p` an agent could Edit contextUsageAt to 2999 and contextUsage to 0 for ever."""
    activate(project, contextUsage=0.01, contextUsageAt="2999-01-01T00:00:00Z")
    write_transcript(project, assistant_line(170_000, timestamp="2026-11-22T10:00:00.000Z"))
    assert OVERFLOW in call("pre-tool-use", grep(project), env).reason


# --------------------------------------------------------------------------- a restart that returns to the model

RESTART = "session restart sessions/2026_11_22_TOPIC"
DEHYDRATE = "session dehydrate sessions/2026_11_22_TOPIC <<'EOF'\n# Handover\nEOF"


@pytest.mark.parametrize("command", [RESTART, DEHYDRATE])
@pytest.mark.parametrize(
    "extra",
    [
        {"run_in_background": True},
        {"run_in_background": "true"},
        {"run_in_background": 1},
        {"run_in_background": "false"},
        {"timeout": 1000},
        {"timeout": 4999.5},
        {"timeout": "100"},
        {"timeout": True},
        {"timeout": -1},
        {"timeout": float("nan")},
        {"timeout": 10**30},
        {"timeout": [6000]},
        {"timeout": 600000, "run_in_background": True},
    ],
)
def test_a_restart_the_bash_tool_would_return_from_is_denied(
    project: Path, env: dict[str, str], command: str, extra: dict
) -> None:
    """In the background, or killed by a timeout before the watchdog acts, the model would read its result."""
    answer = call("pre-tool-use", bash(project, command, **extra), env)
    assert answer.denied, extra
    assert "in the foreground (no run_in_background) and without a timeout" in answer.reason
    assert "5000 ms" in answer.reason, "the watchdog's grace (3 s) and the restart's margin (2 s)"


@pytest.mark.parametrize(
    "command, extra",
    [
        (RESTART, {}),
        (RESTART, {"run_in_background": False}),
        (RESTART, {"timeout": 5000}),
        (DEHYDRATE, {"timeout": "600000"}),
        (
            "session dehydrate sessions/2026_11_22_TOPIC --no-restart <<'EOF'\n# Handover\nEOF",
            {"run_in_background": True},
        ),
        ("session find", {"run_in_background": True, "timeout": 1}),
        ("session restart --help", {}),
    ],
)
def test_a_restart_in_the_foreground_and_other_session_commands_pass(
    project: Path, env: dict[str, str], command: str, extra: dict
) -> None:
    assert call("pre-tool-use", bash(project, command, **extra), env).allowed


def test_the_restart_timeout_follows_the_watchdogs_grace(project: Path) -> None:
    """Through the installed claude-hook: a longer grace needs a longer timeout."""
    env = hook_env(project, CLAUDE_RUN_KILL_GRACE="10")
    denied = run("pre-tool-use", bash(project, RESTART, timeout=6000), env, cwd=project)
    assert denied.returncode == 0 and "at least 12000 ms" in denied.stdout
    assert run("pre-tool-use", bash(project, RESTART, timeout=12000), env, cwd=project).stdout == ""
