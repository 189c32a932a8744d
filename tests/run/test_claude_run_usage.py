"""claude-run at a usage limit: not a crash, no relaunch into a closed window, and no start above the threshold.

The stand-in Claude plays what the real CLI does (tests/e2e/test_usage_windows.py pins it): its
status line reports the windows, its StopFailure hook runs (``setsid -f``-detached, as installed)
and ``claude -p`` exits 1.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from support.claude_run import BIN, FakeClaude

from claude_shepherd.supervisor.claude_run.usage_wait import CONTINUE_PROMPT
from claude_shepherd.supervisor.session import usage_windows
from claude_shepherd.supervisor.session.credentials import credential_of

pytestmark = pytest.mark.slow  # waits for windows to reopen, seconds each

SID = "5f0c1d2e-aaaa-bbbb-cccc-000000000001"
LIMIT_TEXT = "You've hit your 5-hour limit · resets 3:47pm (UTC)"


def status_line(cwd: Path, resets_at: float, used: float = 100) -> dict:
    rate_limits = {"five_hour": {"used_percentage": used, "resets_at": resets_at},
                   "seven_day": {"used_percentage": 40, "resets_at": resets_at + 500000}}  # fmt: skip
    return {"session_id": SID, "cwd": str(cwd), "rate_limits": rate_limits}


def limited(cwd: Path, resets_at: float, *, hook: bool = True) -> list[dict]:
    """A Claude that reads the window at 100 % and stops at the limit: StopFailure (detached), exit 1."""
    steps: list[dict] = [
        {"transcript": SID},
        {"run": [str(BIN / "claude-hook"), "status-line"], "stdin": json.dumps(status_line(cwd, resets_at))},
    ]
    if hook:
        stop = {
            "hook_event_name": "StopFailure",
            "error": "rate_limit",
            "last_assistant_message": LIMIT_TEXT,
            "cwd": str(cwd),
        }
        steps.append(
            {"run": ["setsid", "-f", str(BIN / "claude-hook"), "stop-failure"], "stdin": json.dumps(stop)}
        )
    return [*steps, {"exit": 1}]


@pytest.mark.parametrize("hook", [True, False], ids=["stop-failure-mark", "reading-only"])
def test_a_usage_limit_is_waited_out_not_counted_as_a_crash(
    fake: FakeClaude, start_run, workdir: Path, hook: bool
) -> None:
    """Two usage-limit exits in a row under a crash limit of 2: a crash loop would give up; claude-run
    waits each reset out and goes on (the third Claude exits 0)."""
    t0, m0 = time.time(), time.monotonic()  # the stand-in logs monotonic times
    fake.plan(limited(workdir, t0 + 3, hook=hook), limited(workdir, t0 + 7, hook=hook), [{"exit": 0}])
    run = start_run(env={"CLAUDE_RUN_CRASH_LIMIT": "2", "CLAUDE_USAGE_RESUME_INTERVAL": "0"})
    assert run.wait(timeout=60) == 0, run.text
    _, second, third = fake.wait_starts(3)
    assert second["t"] >= m0 + 3 - 0.1 and third["t"] >= m0 + 7 - 0.1, "relaunched into a closed window"
    assert "usage limit" in run.text or "window at 100 %" in run.text
    assert "(crash " not in run.text and "giving up" not in run.text, run.text
    argv = third["argv"]
    assert argv[argv.index("--resume") + 1] == SID, "the same conversation goes on"
    assert CONTINUE_PROMPT in argv
    assert ("the reset read from the credential" in run.text) == hook


def test_a_window_above_the_threshold_holds_the_launch_until_its_reset(
    fake: FakeClaude, start_run, workdir: Path, run_env: dict[str, str]
) -> None:
    credential = run_env["CLAUDE_CONFIG_DIR"]
    reset, m0 = time.time() + 3, time.monotonic()
    usage_windows.note_reading(
        workdir / "sessions", credential, {"five_hour": {"used_percentage": 96, "resets_at": reset}}
    )
    fake.plan([{"exit": 0}])
    run = start_run()
    run.expect("Not starting Claude yet: the five_hour window of ")
    assert run.wait(timeout=60) == 0
    (start,) = fake.wait_starts(1)
    assert start["t"] >= m0 + 3 - 0.1
    assert "(--ignore-usage-limits or CLAUDE_USAGE_IGNORE=1 starts it at once)" in run.text


def test_ignore_usage_limits_starts_at_once(
    fake: FakeClaude, start_run, workdir: Path, run_env: dict[str, str]
) -> None:
    usage_windows.note_reading(workdir / "sessions", run_env["CLAUDE_CONFIG_DIR"],
                               {"five_hour": {"used_percentage": 99, "resets_at": time.time() + 3600}})  # fmt: skip
    fake.plan([{"exit": 0}])
    run = start_run("--ignore-usage-limits")
    assert run.wait(timeout=30) == 0
    assert "Not starting Claude yet" not in run.text


def test_a_slow_stop_failure_hook_is_let_finish_before_the_leftover_sweep(
    fake: FakeClaude, start_run, workdir: Path, tmp_path: Path
) -> None:
    """``claude -p`` at a limit leaves its StopFailure hook running (detached) and exits 1; claude-run,
    a subreaper, adopts it. Under load the hook took longer than claude-run's sweep of leftovers, which
    ended it before it wrote its mark: the exit counted as a crash and claude-run gave up. Here the hook
    takes 1.5 s and there is no status line reading to fall back on."""
    slow = tmp_path / "slow" / "claude-hook"
    slow.parent.mkdir()
    # as claude -p does not wait for its hooks' output, the stand-in must not: output goes nowhere
    slow.write_text(f'#!/bin/sh\nexec >/dev/null 2>&1\nsleep 1.5\nexec "{BIN / "claude-hook"}" "$@"\n')
    slow.chmod(0o755)
    stop = {"hook_event_name": "StopFailure", "error": "rate_limit", "last_assistant_message": LIMIT_TEXT,
            "cwd": str(workdir)}  # fmt: skip
    steps = [
        {"transcript": SID},
        {"run": ["setsid", "-f", str(slow), "stop-failure"], "stdin": json.dumps(stop)},
    ]
    fake.plan([*steps, {"exit": 1}])
    run = start_run(env={"CLAUDE_RUN_CRASH_LIMIT": "1"})
    run.expect("Claude stopped at the five_hour usage limit (the reset Claude printed)", timeout=30)
    assert "giving up" not in run.text and "leftover" not in run.text, run.text
    os.kill(run.pid, signal.SIGTERM)  # it waits for the reset Claude printed: hours
    assert run.wait(timeout=30) == 143, run.text


def test_a_reset_years_ahead_is_not_believed_and_never_holds_the_relaunch(
    fake: FakeClaude, start_run, workdir: Path, run_env: dict[str, str]
) -> None:
    """The windows come from the API's headers: a window "at 100 % until" ten years ahead is no reading
    (the longest window is a week), so the exit 1 after it is an ordinary one and Claude is relaunched
    instead of waited for until then; neither start nor relaunch waits for such a window either."""
    far = time.time() + 10 * 365 * 86400
    usage_windows.note_reading(workdir / "sessions", run_env["CLAUDE_CONFIG_DIR"],
                               {"seven_day": {"used_percentage": 100, "resets_at": far}})  # fmt: skip
    fake.plan(limited(workdir, far, hook=False), [{"exit": 0}])
    run = start_run(env={"CLAUDE_RUN_CRASH_LIMIT": "3"})
    assert run.wait(timeout=60) == 0, run.text
    fake.wait_starts(2)
    assert "Not starting Claude yet" not in run.text and "usage limit" not in run.text, run.text


def test_an_api_key_agent_is_not_held_by_the_subscription_window_of_its_config_dir(
    fake: FakeClaude, start_run, workdir: Path, run_env: dict[str, str]
) -> None:
    """A window belongs to the credential Claude uses: with ``ANTHROPIC_API_KEY`` set that is the key
    (no windows), not the login in the config directory whose 5-hour window is spent."""
    usage_windows.note_reading(workdir / "sessions", run_env["CLAUDE_CONFIG_DIR"],
                               {"five_hour": {"used_percentage": 100, "resets_at": time.time() + 3600}})  # fmt: skip
    fake.plan([{"exit": 0}])
    run = start_run(env={"ANTHROPIC_API_KEY": "sk-ant-api03-test-key"})
    assert run.wait(timeout=30) == 0, run.text
    assert "Not starting Claude yet" not in run.text


def test_an_oauth_token_agent_is_held_by_its_own_tokens_window_not_the_config_dirs(
    fake: FakeClaude, start_run, workdir: Path, run_env: dict[str, str]
) -> None:
    token = "sk-ant-oat01-test-token"
    credential = credential_of({"CLAUDE_CODE_OAUTH_TOKEN": token})
    assert credential.startswith("oauth-token:") and token not in credential, "a digest, never the secret"
    usage_windows.note_reading(workdir / "sessions", credential,
                               {"five_hour": {"used_percentage": 100, "resets_at": time.time() + 3600}})  # fmt: skip
    fake.plan([{"exit": 0}])
    run = start_run(env={"CLAUDE_CODE_OAUTH_TOKEN": token})
    run.expect(f"Not starting Claude yet: the five_hour window of {credential} is 100 % used")
    os.kill(run.pid, signal.SIGTERM)
    assert run.wait(timeout=30) == 143, run.text
    assert fake.starts() == []


def test_the_hooks_keep_an_oauth_token_agents_reading_where_claude_run_looks(
    fake: FakeClaude, start_run, workdir: Path
) -> None:
    """Claude keeps ``$CLAUDE_CODE_OAUTH_TOKEN`` from its hooks (2.1.328 and 2.1.332): the status line took
    the agent for its config directory's login, claude-run looked under the token's name."""
    token = "sk-ant-oat01-test-token"
    line = status_line(workdir, time.time() + 3600, used=97)
    scrubbed = {"CLAUDE_CODE_OAUTH_TOKEN": None}
    fake.plan([{"run": [str(BIN / "claude-hook"), "status-line"], "stdin": json.dumps(line), "env": scrubbed},
               {"exit": 0}])  # fmt: skip
    run = start_run(env={"CLAUDE_CODE_OAUTH_TOKEN": token})
    assert run.wait(timeout=30) == 0, run.text
    credential = credential_of({"CLAUDE_CODE_OAUTH_TOKEN": token})
    assert usage_windows.read_credential(workdir / "sessions", credential) is not None
