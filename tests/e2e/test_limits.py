"""End to end: what the real CLI reports of spend and usage windows, and how it can be stopped.

Budgets and usage windows (issue 28) are built on these surfaces of the pinned
Claude Code CLI, each produced here offline by the mock API: the status line's
``cost`` and ``rate_limits``, a usage-limit 429 in ``claude -p`` and
interactively, the ``StopFailure`` hook, a PreToolUse or UserPromptSubmit hook
that stops the agent, ``--max-budget-usd`` and the session's cost across a
resume. Each test counts the requests the CLI sent. The hooks' copy of the CLI's list prices is
checked against its own figure, model by model.

The payloads seen are kept in ``recorded/`` for fast tests that replay them
without the CLI; a run with ``CLAUDE_SHEPHERD_E2E_RECORD=1`` writes them anew,
and every other run checks that they still have the keys the CLI sends.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import typing as t
from pathlib import Path

import pytest
from support.waiting import wait_until

from claude_shepherd.supervisor.session import prices

from .cli import CLI_VERSION, MODEL, Tmux, transcript_path
from .mock_api import UNIFIED, MockAPI, Turn

RECORDED = Path(__file__).parent / "recorded"
RECORD_ENV = "CLAUDE_SHEPHERD_E2E_RECORD"
PROMPT_READY = "❯"
PAUSED = "paused by supervisor"


# ------------------------------------------------------------------ helpers


def write_settings(world: t.Any, **settings: t.Any) -> Path:
    path = world.home / "limits-settings.json"
    path.write_text(json.dumps(settings))
    return path


def hook(event: str, command: str, matcher: str | None = None) -> dict[str, t.Any]:
    entry: dict[str, t.Any] = {"hooks": [{"type": "command", "command": command}]}
    if matcher is not None:
        entry["matcher"] = matcher
    return {event: [entry]}


def probe(dump: Path, answer: dict[str, t.Any] | None = None) -> str:
    """A hook command that keeps its stdin in *dump* and prints *answer*."""
    command = f"cat > {shlex.quote(str(dump))}"
    if answer is not None:
        command += f"; printf '%s' {shlex.quote(json.dumps(answer))}"
    return command


def status_line_probe(world: t.Any) -> Path:
    """Settings whose status line appends each run's stdin, a line of JSON, to ``statusline.jsonl``."""
    dump = shlex.quote(str(world.home / "statusline.jsonl"))
    return write_settings(
        world, statusLine={"type": "command", "command": f"{{ cat; echo; }} >> {dump}; echo PROBE"}
    )


def status_line_runs(world: t.Any) -> list[dict[str, t.Any]]:
    """The status line's stdin, run by run (a line still being written is left out)."""
    dump = world.home / "statusline.jsonl"
    runs = []
    for line in dump.read_text().splitlines() if dump.exists() else []:
        try:
            runs.append(json.loads(line))
        except ValueError:
            continue
    return runs


def claude_print(
    claude_bin: Path, world: t.Any, env: dict[str, str], settings: Path | None, *args: str
) -> subprocess.CompletedProcess[str]:
    argv = [str(claude_bin), "-p", "--dangerously-skip-permissions", "--model", MODEL,
            *(["--settings", str(settings)] if settings else []), *args]  # fmt: skip
    return subprocess.run(argv, env=env, cwd=world.project, capture_output=True, text=True, timeout=60)


def json_result(run: subprocess.CompletedProcess[str]) -> dict[str, t.Any]:
    try:
        return t.cast(dict[str, t.Any], json.loads(run.stdout))
    except ValueError:
        raise AssertionError(f"rc {run.returncode}, not JSON: {run.stdout!r} {run.stderr!r}") from None


def interactive(tmux: Tmux, claude_bin: Path, world: t.Any, env: dict[str, str], settings: Path) -> str:
    """The real CLI full-screen in a pane, at its prompt; returns the pane."""
    argv = [str(claude_bin), "--dangerously-skip-permissions", "--model", MODEL, "--settings", str(settings)]
    pane = tmux.start(argv, env, world.project)
    tmux.wait_for(pane, PROMPT_READY, timeout=60)
    return pane


def read_json(path: Path) -> dict[str, t.Any] | None:
    try:
        return t.cast(dict[str, t.Any], json.loads(path.read_text()))
    except (OSError, ValueError):
        return None  # not yet written, or being written


def scrubbed(value: t.Any, scratch: Path) -> t.Any:
    """*value* with the test's scratch directory (and its transcript slug) written as ``/scratch``."""
    if isinstance(value, str):
        real = os.path.realpath(scratch)
        for path in (real, str(scratch)):
            value = value.replace(path, "/scratch").replace(re.sub(r"[^A-Za-z0-9]", "-", path), "-scratch")
        return value
    if isinstance(value, dict):
        return {k: scrubbed(v, scratch) for k, v in value.items()}
    if isinstance(value, list):
        return [scrubbed(v, scratch) for v in value]
    return value


def recorded(name: str, payload: t.Any, scratch: Path) -> None:
    """Keep *payload* as ``recorded/<name>.json`` (when recording), or check that the recording
    still has the keys the CLI sends now, so that replaying it stands for this CLI."""
    path = RECORDED / f"{name}.json"
    if os.environ.get(RECORD_ENV) == "1":
        RECORDED.mkdir(exist_ok=True)
        path.write_text(json.dumps(scrubbed(payload, scratch), indent=2, ensure_ascii=False) + "\n")
        return
    assert path.is_file(), f"{path.name} is not recorded: run with {RECORD_ENV}=1"
    kept = json.loads(path.read_text())
    if isinstance(payload, list):  # stream-json: the sequence of event types
        assert [e.get("type") for e in kept] == [e.get("type") for e in payload], path.name
    else:
        assert sorted(kept) == sorted(payload), f"{path.name} has other keys than CLI {CLI_VERSION} sends"


# -------------------------------------------------------------- status line


@pytest.mark.parametrize("oauth", [False, True], ids=["api_key", "oauth"])
def test_status_line_reports_cost_and_only_oauth_reports_windows(
    world, mock_api: MockAPI, env_for, claude_bin: Path, tmux: Tmux, oauth: bool
) -> None:
    """10k tokens in and 1k out at list price ($3 / $15 per million) is $0.045, the client's own
    estimate under either login; the windows of the unified headers reach the status line only
    under OAuth, as a percentage and the reset epoch."""
    reply = Turn.say("hello there", input_tokens=10_000, output_tokens=1_000)
    reply = reply.with_windows(five_hour=0.42, seven_day=0.17)
    mock_api.script(reply)
    pane = interactive(tmux, claude_bin, world, env_for(oauth=oauth), status_line_probe(world))
    tmux.type(pane, "hello")

    def costed() -> dict[str, t.Any] | None:
        runs = status_line_runs(world)
        return next((run for run in reversed(runs) if run.get("cost", {}).get("total_cost_usd")), None)

    stdin = wait_until(costed, 30, "a status line run after the reply")
    assert len(mock_api.requests) == 1, [r["body"].get("tools") is not None for r in mock_api.requests]
    assert stdin["cost"]["total_cost_usd"] == pytest.approx(0.045)
    if oauth:
        assert stdin["rate_limits"] == {
            "five_hour": {"used_percentage": 42, "resets_at": int(reply.headers[f"{UNIFIED}5h-reset"])},
            "seven_day": {"used_percentage": 17, "resets_at": int(reply.headers[f"{UNIFIED}7d-reset"])},
        }
    else:
        assert "rate_limits" not in stdin, "an API key's windows are not reported"
    recorded(f"statusline.{'oauth' if oauth else 'api_key'}", stdin, world.home.parent)


# ------------------------------------------------------------ usage limits


@pytest.mark.parametrize(
    ("window", "says"),
    [
        ("five_hour", "You've hit your 5-hour limit · resets "),
        ("seven_day", "You've hit your weekly limit · resets "),
    ],
    ids=["five_hour", "seven_day"],
)
def test_usage_limit_ends_print_mode_at_once_under_oauth(
    world, mock_api: MockAPI, env_for, claude_bin: Path, window: str, says: str
) -> None:
    """A subscription's usage-limit 429 is not retried: one request, rc 1, ``usage_limit_reached``
    in the result, and in stream-json the window's reset epoch, the time to restart at."""
    limit = Turn.usage_limit(reset_in=3600, window=window, times=-1)
    mock_api.script(limit)
    env = env_for(oauth=True)
    run = claude_print(claude_bin, world, env, None, "--output-format", "json", "go on")
    assert run.returncode == 1, run.stderr
    assert len(mock_api.requests) == 1, "a usage limit is not retried under OAuth"
    result = json_result(run)
    assert result["is_error"] is True and result["subtype"] == "success", "an error, and 'success'"
    assert result["terminal_reason"] == "api_error"
    assert (result["api_error_status"], result["api_error_type"], result["api_error"]) == (
        429, "rate_limit_error", "usage_limit_reached"
    )  # fmt: skip
    assert result["result"].startswith(says), result["result"]
    assert result["total_cost_usd"] == 0, "a failed request costs nothing"

    streamed = ("--output-format", "stream-json", "--verbose", "go on")
    stream = claude_print(claude_bin, world, env, None, *streamed)
    assert stream.returncode == 1 and len(mock_api.requests) == 2
    events = [json.loads(line) for line in stream.stdout.splitlines() if line.strip()]
    assert limit.error is not None
    reset = int(limit.error.headers[f"{UNIFIED}reset"])
    info = next(e for e in events if e["type"] == "rate_limit_event")["rate_limit_info"]
    assert (info["status"], info["rateLimitType"], info["resetsAt"]) == ("rejected", window, reset)
    assert info["unifiedWindows"][window] == {"utilization": 1, "resetsAt": reset, "status": "rejected"}
    assistant = next(e for e in events if e["type"] == "assistant")
    assert (assistant["error"], assistant["api_error"]) == ("rate_limit", "usage_limit_reached")
    assert assistant["api_error_params"]["rate_limit_info"]["resetsAt"] == reset
    assert events[-1]["type"] == "result" and events[-1]["api_error"] == "usage_limit_reached"
    if window == "five_hour":
        recorded("print-usage-limit.oauth", result, world.home.parent)
        recorded("print-usage-limit-stream.oauth", events, world.home.parent)


def test_usage_limit_is_retried_under_an_api_key(world, mock_api: MockAPI, env_for, claude_bin: Path) -> None:
    """The same 429 with an API key is an ordinary rate limit: retried (here once, by
    ``CLAUDE_CODE_MAX_RETRIES=1``), no ``usage_limit_reached``, no windows."""
    mock_api.script(Turn.usage_limit(reset_in=3600, times=-1))
    env = env_for(CLAUDE_CODE_MAX_RETRIES="1")
    run = claude_print(claude_bin, world, env, None, "--output-format", "stream-json", "--verbose", "go on")
    assert run.returncode == 1, run.stderr
    assert len(mock_api.requests) == 2, "one retry"
    events = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    assert not [e for e in events if e["type"] == "rate_limit_event"]
    retry = next(e for e in events if e.get("subtype") == "api_retry")
    assert (retry["attempt"], retry["error_status"], retry["error"]) == (1, 429, "rate_limit")
    result = events[-1]
    assert result["type"] == "result" and result["is_error"] is True
    assert "api_error" not in result, "not a usage limit"
    assert result["result"].startswith("API Error: Request rejected (429)"), result["result"]
    recorded("print-rate-limit-stream.api_key", events, world.home.parent)


def wait_limited(tmux: t.Any, pane: str) -> str:
    """Until the screen says the CLI waits for the reset to go on by itself: 2.1.328 on one line
    (`Usage limit reached · continuing automatically at 3:51pm`), 2.1.332 on two (`⚠ Usage limit reached ·
    limit resets 3:51pm` / `Continuing automatically at 3:51pm`)."""
    screen = tmux.wait_for(pane, "ontinuing automatically at ")
    assert "Usage limit reached" in screen, screen
    return screen


@pytest.mark.parametrize("oauth", [False, True], ids=["api_key", "oauth"])
def test_stop_failure_hook_reports_the_rate_limit(
    world, mock_api: MockAPI, env_for, claude_bin: Path, tmux: Tmux, oauth: bool
) -> None:
    """Interactively the StopFailure hook gets ``error: rate_limit`` and the text shown, once the
    retries are spent: none under OAuth (a usage limit), one here under an API key."""
    mock_api.script(Turn.usage_limit(reset_in=3600, times=-1))
    dump = world.home / "stopfailure.json"
    settings = write_settings(world, hooks=hook("StopFailure", probe(dump)))
    env = env_for(oauth=oauth, CLAUDE_CODE_MAX_RETRIES="1")
    pane = interactive(tmux, claude_bin, world, env, settings)
    tmux.type(pane, "keep going")
    payload = wait_until(lambda: read_json(dump), 30, "the StopFailure hook")
    assert payload["hook_event_name"] == "StopFailure" and payload["error"] == "rate_limit"
    if oauth:
        assert payload["last_assistant_message"].startswith("You've hit your 5-hour limit · resets ")
        wait_limited(tmux, pane)
        assert len(mock_api.requests) == 1
    else:
        assert payload["last_assistant_message"].startswith("API Error: Request rejected (429) · ")
        assert len(mock_api.requests) == 2
    recorded(f"stopfailure-rate-limit.{'oauth' if oauth else 'api_key'}", payload, world.home.parent)


CREDIT = "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing."


class Failure(t.NamedTuple):
    answer: Turn
    error: str
    says: str
    requests: int


@pytest.mark.parametrize(
    "failure",
    [
        Failure(Turn.fail(401, "authentication_error", "invalid x-api-key", times=-1),
                "authentication_failed", "Invalid API key · ", 2),
        Failure(Turn.fail(529, "overloaded_error", "Overloaded", times=-1),
                "server_error", "API Error: 529 Overloaded", 2),
        Failure(Turn.fail(400, "invalid_request_error", CREDIT, times=-1),
                "billing_error", "Credit balance is too low", 1),
    ],
    ids=["401", "529", "credit"],
)  # fmt: skip
def test_stop_failure_names_what_else_failed(
    world, mock_api: MockAPI, env_for, claude_bin: Path, tmux: Tmux, failure: Failure
) -> None:
    """What is not a rate limit says so in ``error``, after the retries (one here; none for the
    credit balance): a stop to tell from a usage limit."""
    mock_api.script(failure.answer)
    dump = world.home / "stopfailure.json"
    settings = write_settings(world, hooks=hook("StopFailure", probe(dump)))
    pane = interactive(tmux, claude_bin, world, env_for(CLAUDE_CODE_MAX_RETRIES="1"), settings)
    tmux.type(pane, "keep going")
    payload = wait_until(lambda: read_json(dump), 30, "the StopFailure hook")
    assert payload["error"] == failure.error, payload
    assert payload["last_assistant_message"].startswith(failure.says), payload
    assert len(mock_api.requests) == failure.requests
    recorded(f"stopfailure-{failure.error.replace('_', '-')}.api_key", payload, world.home.parent)


def test_a_usage_limit_reaches_the_status_line_and_a_prompt_typed_meanwhile_is_sent(
    world, mock_api: MockAPI, env_for, claude_bin: Path, tmux: Tmux
) -> None:
    """Under OAuth the 429's headers update ``rate_limits`` (five_hour at 100 %, its new reset) and
    the CLI waits to continue by itself; a prompt typed during the wait is sent: one more 429."""
    limit = Turn.usage_limit(reset_in=7200, times=-1)
    mock_api.script(Turn.say("first").with_windows(five_hour=0.93, seven_day=0.17), limit)
    pane = interactive(tmux, claude_bin, world, env_for(oauth=True), status_line_probe(world))

    def five_hour(used: int) -> t.Callable[[], dict[str, t.Any] | None]:
        def used_at(run: dict[str, t.Any]) -> t.Any:
            return run.get("rate_limits", {}).get("five_hour", {}).get("used_percentage")

        return lambda: next((run for run in reversed(status_line_runs(world)) if used_at(run) == used), None)

    tmux.type(pane, "one")
    wait_until(five_hour(93), 30, "the status line at 93 %")
    tmux.type(pane, "two")
    limited = wait_until(five_hour(100), 30, "the status line at the limit")
    assert limit.error is not None
    reset = int(limit.error.headers[f"{UNIFIED}5h-reset"])
    assert limited["rate_limits"]["five_hour"] == {"used_percentage": 100, "resets_at": reset}
    wait_limited(tmux, pane)
    assert len(mock_api.requests) == 2

    tmux.type(pane, "three")
    tmux.wait_for(pane, "Usage limit reached again")
    assert len(mock_api.requests) == 3, "a prompt typed while limited is sent"
    recorded("statusline-limited.oauth", limited, world.home.parent)


# ---------------------------------------------------------- hooks as a pause


DENY = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                               "permissionDecisionReason": f"PAUSED: {PAUSED}"}}  # fmt: skip


@pytest.mark.parametrize("stop", [True, False], ids=["deny+continue_false", "deny_alone"])
def test_pretooluse_deny_with_continue_false_ends_the_turn(
    world, mock_api: MockAPI, env_for, claude_bin: Path, stop: bool
) -> None:
    """With ``"continue": false`` the denied call is the last request: the model never reads
    the denial. A deny alone is no pause: the model is asked again after every denial."""
    calls = Turn.bash("echo RAN >> ran.txt", times=3)
    mock_api.script(calls, Turn.say("giving up"))
    answer = DENY | ({"continue": False, "stopReason": PAUSED} if stop else {})
    dump = world.home / "pretooluse.json"
    settings = write_settings(world, hooks=hook("PreToolUse", probe(dump, answer), matcher=""))
    run = claude_print(claude_bin, world, env_for(), settings, "--output-format", "json", "work")
    assert run.returncode == 0, run.stderr
    assert not (world.project / "ran.txt").exists(), "no denied call ran"
    result = json_result(run)
    if stop:
        assert len(mock_api.requests) == 1, "nothing is sent after the hook stopped the turn"
        assert result["terminal_reason"] == "hook_stopped" and result["is_error"] is False
        assert result["result"] == ""
        assert [d["tool_name"] for d in result["permission_denials"]] == ["Bash"]
        recorded("print-pretooluse-stopped", result, world.home.parent)
        recorded("pretooluse-input", read_json(dump), world.home.parent)
    else:
        assert len(mock_api.requests) == 4 and mock_api.answered(calls) == 3
        assert result["terminal_reason"] == "completed" and result["result"] == "giving up"
        denied = mock_api.tool_results(mock_api.main_requests()[1])[-1]
        assert denied["is_error"] is True and PAUSED in json.dumps(denied["content"])


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ({"decision": "block", "reason": PAUSED},
         f"UserPromptSubmit operation blocked by hook:\n{PAUSED}\n\nOriginal prompt: work"),
        ({"continue": False, "stopReason": PAUSED}, f"Operation stopped by hook: {PAUSED}"),
    ],
    ids=["block", "continue_false"],
)  # fmt: skip
def test_userpromptsubmit_block_sends_nothing(
    world, mock_api: MockAPI, env_for, claude_bin: Path, answer: dict[str, t.Any], says: str
) -> None:
    """A blocked prompt never reaches the API: 0 requests, rc 0, no turn."""
    mock_api.script(Turn.say("should not be asked", times=-1))
    dump = world.home / "userpromptsubmit.json"
    settings = write_settings(world, hooks=hook("UserPromptSubmit", probe(dump, answer)))
    run = claude_print(claude_bin, world, env_for(), settings, "--output-format", "json", "work")
    assert run.returncode == 0, run.stderr
    assert mock_api.requests == []
    result = json_result(run)
    assert (result["num_turns"], result["is_error"], result["result"]) == (0, False, says)
    name = "block" if "decision" in answer else "continue-false"
    recorded(f"print-userpromptsubmit-{name}", result, world.home.parent)
    recorded("userpromptsubmit-input", read_json(dump), world.home.parent)


def test_interactive_pause_refuses_prompts_and_a_prompt_resumes_it(
    world, mock_api: MockAPI, env_for, claude_bin: Path, tmux: Tmux
) -> None:
    """PreToolUse pauses the agent (deny with ``continue: false``, and a flag file) and
    UserPromptSubmit blocks while the flag stands: the turn ends after the one request, a prompt
    typed meanwhile sends nothing and comes back into the input box. With the flag gone, a
    prompt (after Ctrl-U) goes on in the same conversation."""
    flag = shlex.quote(str(world.home / "PAUSED"))
    stop = DENY | {"continue": False, "stopReason": PAUSED}
    block = {"decision": "block", "reason": PAUSED}
    pause = f"cat > /dev/null; touch {flag}; printf '%s' {shlex.quote(json.dumps(stop))}"
    refuse = f"cat > /dev/null; if [ -e {flag} ]; then printf '%s' {shlex.quote(json.dumps(block))}; fi"
    hooks = hook("PreToolUse", pause, matcher="") | hook("UserPromptSubmit", refuse)
    settings = write_settings(world, hooks=hooks)
    mock_api.script(Turn.bash("echo RAN >> ran.txt"), Turn.say("carrying on"))
    pane = interactive(tmux, claude_bin, world, env_for(), settings)
    tmux.type(pane, "start the work")
    tmux.wait_for(pane, "hook stopped Claude")
    assert len(mock_api.requests) == 1 and not (world.project / "ran.txt").exists()

    tmux.type(pane, "are you there")
    tmux.wait_for(pane, "UserPromptSubmit operation blocked by hook")
    assert len(mock_api.requests) == 1, "a blocked prompt is not sent"

    (world.home / "PAUSED").unlink()
    tmux("send-keys", "-t", pane, "C-u")
    tmux.type(pane, "go on")
    wait_until(lambda: len(mock_api.requests) == 2, 30, "the prompt after the pause")
    tmux.wait_for(pane, "carrying on")
    first, resumed = mock_api.requests
    assert first["headers"]["X-Claude-Code-Session-Id"] == resumed["headers"]["X-Claude-Code-Session-Id"]
    prompts = [m for m in resumed["body"]["messages"] if m["role"] == "user"]
    assert "go on" in MockAPI.all_text({"messages": prompts[-1:]})
    assert "are you there" not in MockAPI.all_text(resumed["body"]), "a blocked prompt is not history"


# ----------------------------------------------------------- --max-budget-usd


def test_max_budget_stops_between_replies(world, mock_api: MockAPI, env_for, claude_bin: Path) -> None:
    """At $0.06 a reply (10k in, 2k out) a $0.10 budget buys two replies: the second crosses it and
    nothing more is sent; rc 1 and ``error_max_budget_usd``."""
    calls = Turn.bash("echo RAN >> ran.txt", input_tokens=10_000, output_tokens=2_000, times=5)
    mock_api.script(calls)
    args = ("--output-format", "json", "--max-budget-usd", "0.10", "spend")
    run = claude_print(claude_bin, world, env_for(), None, *args)
    assert run.returncode == 1, run.stderr
    assert len(mock_api.requests) == 2, "the budget is checked after each reply, before the next request"
    result = json_result(run)
    assert (result["subtype"], result["terminal_reason"], result["is_error"]) == (
        "error_max_budget_usd", "budget_exhausted", True
    )  # fmt: skip
    assert result["errors"] == ["Reached maximum budget ($0.1)"]
    assert result["total_cost_usd"] == pytest.approx(0.12)
    assert "result" not in result or result["result"] is None
    ran = (world.project / "ran.txt").read_text().split()
    assert ran[:1] == ["RAN"] and len(ran) <= 2, "the call of the reply over budget may start, not more"
    recorded("print-max-budget", result, world.home.parent)


def test_max_budget_counts_only_this_runs_spend_on_resume(
    world, mock_api: MockAPI, env_for, claude_bin: Path
) -> None:
    """A resumed session's ``total_cost_usd`` carries on from the session's, but the budget counts
    this run alone: a session at $0.06 resumed with $0.10 still buys two replies."""
    mock_api.script(Turn.say("first", input_tokens=10_000, output_tokens=2_000))
    env = env_for()
    first = json_result(claude_print(claude_bin, world, env, None, "--output-format", "json", "one"))
    assert first["total_cost_usd"] == pytest.approx(0.06)
    mock_api.script(Turn.bash("echo RAN >> ran.txt", input_tokens=10_000, output_tokens=2_000, times=5))
    args = ("--output-format", "json", "--resume", first["session_id"], "--max-budget-usd", "0.10", "more")
    run = claude_print(claude_bin, world, env, None, *args)
    assert run.returncode == 1, run.stderr
    result = json_result(run)
    assert len(mock_api.requests) == 3, "two replies bought by this run's budget"
    assert (result["subtype"], result["session_id"]) == ("error_max_budget_usd", first["session_id"])
    assert result["total_cost_usd"] == pytest.approx(0.18)


# ------------------------------------------------------------ spend, recorded


def test_cost_is_per_session_and_kept_in_the_transcript(
    world, mock_api: MockAPI, env_for, claude_bin: Path
) -> None:
    """``total_cost_usd`` is the session's: a resume goes on from it, a new session starts at 0;
    each run ends by writing a ``cost-state`` line with the total into the transcript."""
    mock_api.script(Turn.say("reply", input_tokens=10_000, output_tokens=1_000, times=-1))
    env = env_for()
    first = json_result(claude_print(claude_bin, world, env, None, "--output-format", "json", "one"))
    session = first["session_id"]
    resumed = json_result(
        claude_print(claude_bin, world, env, None, "--output-format", "json", "--resume", session, "two")
    )
    fresh = json_result(claude_print(claude_bin, world, env, None, "--output-format", "json", "three"))
    assert len(mock_api.requests) == 3
    assert [r["total_cost_usd"] for r in (first, resumed, fresh)] == pytest.approx([0.045, 0.09, 0.045])
    assert resumed["session_id"] == session != fresh["session_id"]
    lines = map(json.loads, transcript_path(world.home, world.project, session).read_text().splitlines())
    states = [line for line in lines if line.get("type") == "cost-state"]
    assert [s["totalCostUSD"] for s in states] == pytest.approx([0.045, 0.09])
    assert states[-1]["modelUsage"][MODEL]["inputTokens"] == 20_000
    recorded("transcript-cost-state", states[-1], world.home.parent)


# ------------------------------------------------------------------- list prices


SHAPES = (
    {"input_tokens": 1234, "output_tokens": 567},
    {"input_tokens": 20, "output_tokens": 300, "cache_read": 150_000, "cache_creation": 10_000},
    {"input_tokens": 20, "output_tokens": 300, "cache_creation": 40_000,
     "usage": {"cache_creation": {"ephemeral_1h_input_tokens": 30_000, "ephemeral_5m_input_tokens": 10_000}}},
    {"input_tokens": 120_000, "output_tokens": 1000,
     "usage": {"inference_geo": "us", "server_tool_use": {"web_search_requests": 2}}},
    {"input_tokens": 5000, "output_tokens": 700, "usage": {"speed": "fast"}},
)  # fmt: skip
"""Replies of every kind a price depends on: plain, cache reads and 5-minute writes, 1-hour writes,
US inference and web searches, a prompt over 100k tokens, fast mode."""


@pytest.mark.parametrize("model", [*prices.MODELS, "claude-sonnet-4-5-20250929", "claude-next-9"])
def test_replies_priced_from_the_transcript_cost_what_claude_says(
    world, mock_api: MockAPI, env_for, claude_bin: Path, model: str
) -> None:
    """The hooks price each reply of the transcript at our copy of the CLI's list prices: for every
    model of its catalog, the sum is the CLI's own ``total_cost_usd`` (the status line's figure) for
    the same replies. A model the CLI has no price for it prices at its default model's rate; ours is
    the dearest rate, never below it."""
    mock_api.model = model
    mock_api.script(*(Turn.bash("echo hi", **shape) for shape in SHAPES), Turn.say("done"))
    run = claude_print(claude_bin, world, env_for(), None, "--model", model, "--output-format", "json", "go")
    result = json_result(run)
    assert len(mock_api.requests) == len(SHAPES) + 1, "no request but the scripted replies"
    priced: dict[str, tuple[float, bool]] = {}
    for line in transcript_path(world.home, world.project, result["session_id"]).read_text().splitlines():
        entry = json.loads(line)
        if entry.get("type") == "assistant" and not entry.get("isSidechain"):
            cost = prices.reply_cost(entry["message"]["model"], entry["message"]["usage"])
            assert cost is not None, entry
            priced[entry["message"]["id"]] = cost
    ours = sum(usd for usd, _ in priced.values())
    (basis,) = {usage.get("costBasis") for usage in result["modelUsage"].values()}
    if model == "claude-next-9":
        assert basis == "unknown" and {known for _, known in priced.values()} == {False}
        assert ours > result["total_cost_usd"] > 0
    else:
        assert basis == "list" and {known for _, known in priced.values()} == {True}
        assert ours == pytest.approx(result["total_cost_usd"], rel=1e-9), model
