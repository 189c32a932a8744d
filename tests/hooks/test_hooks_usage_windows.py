"""Usage windows per credential: the status line records them, a usage-limit StopFailure parks the agent.

Through the real ``claude-hook`` console script, on payloads recorded from Claude Code 2.1.328
(tests/e2e/recorded/): the status line's ``rate_limits`` under OAuth (none under an API key) and the
StopFailure hook's ``rate_limit``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import typing as t
from pathlib import Path

import pytest
from support.claude_run import FakeClaude, FleetTmux
from support.hooks import hook_env, run

from claude_shepherd.hooks import usage_turn
from claude_shepherd.supervisor.session import limit_messages, pane_records, resume_slots, usage_windows
from claude_shepherd.supervisor.session.credentials import credential_of, windowless
from claude_shepherd.supervisor.session.identity import start_token
from claude_shepherd.supervisor.session.usage_records import file_name

RECORDED = Path(__file__).parent.parent / "e2e" / "recorded"
BIN = Path(sys.executable).parent


def recorded(name: str, project: Path, **changes: object) -> dict:
    data = json.loads((RECORDED / f"{name}.json").read_text())
    data.update(cwd=str(project), **changes)
    return data


@pytest.fixture
def env(project: Path) -> dict[str, str]:
    return hook_env(project, CLAUDE_CONFIG_DIR=str(project.parent / "config-a"))


def me() -> str:
    where = pane_records.spot(None, (os.getpid(), start_token(os.getpid())))
    assert where is not None
    return where[0]


def credential_file(project: Path, credential: str) -> Path:
    return project / "sessions" / ".shepherd" / "usage" / "credentials" / file_name(credential)


def test_the_status_line_records_each_window_per_credential_and_writes_only_a_change(
    project: Path, env: dict[str, str]
) -> None:
    root, credential = project / "sessions", str(project.parent / "config-a")
    soon = time.time() + 3600
    line = recorded("statusline.oauth", project)
    line["rate_limits"]["five_hour"]["resets_at"] = soon
    line["rate_limits"]["seven_day"]["resets_at"] = soon + 500000
    line["rate_limits"]["seven_day_opus"] = {"used_percentage": 3, "resets_at": soon + 400000}  # any window
    done = run("status-line", line, env, cwd=project)
    assert done.returncode == 0 and done.stderr == ""
    record = usage_windows.read_credential(root, credential)
    assert record is not None
    windows = record["windows"]
    assert {k: (v["used_percentage"], v["resets_at"]) for k, v in windows.items()} == {
        "five_hour": (42, soon), "seven_day": (17, soon + 500000), "seven_day_opus": (3, soon + 400000)
    }  # fmt: skip
    assert usage_windows.read_agent(root, me()) == {"agent": me(), "credential": credential}
    written = credential_file(project, credential).stat()
    run("status-line", line, env, cwd=project)
    assert credential_file(project, credential).stat().st_ino == written.st_ino, "rewritten without a change"

    stale = json.loads(json.dumps(line))
    stale["rate_limits"]["five_hour"]["used_percentage"] = 30  # an idle agent's older reading
    run("status-line", stale, env, cwd=project)
    assert usage_windows.read_credential(root, credential)["windows"]["five_hour"]["used_percentage"] == 42
    line["rate_limits"]["five_hour"]["used_percentage"] = 96
    run("status-line", line, env, cwd=project)
    assert usage_windows.read_credential(root, credential)["windows"]["five_hour"]["used_percentage"] == 96

    other = hook_env(project, CLAUDE_CONFIG_DIR=str(project.parent / "config-b"))
    run("status-line", recorded("statusline.api_key", project), other, cwd=project)
    assert usage_windows.read_credential(root, str(project.parent / "config-b")) is None, (
        "no windows: no reading"
    )
    assert usage_windows.read_agent(root, me())["credential"] == str(project.parent / "config-b")


def test_a_usage_limit_stop_failure_parks_the_agent_until_the_reset_it_read(
    project: Path, env: dict[str, str]
) -> None:
    root = project / "sessions"
    reset = int(time.time()) + 1800
    limited = recorded("statusline-limited.oauth", project)
    limited["rate_limits"]["five_hour"]["resets_at"] = reset
    run("status-line", limited, env, cwd=project)
    done = run("stop-failure", recorded("stopfailure-rate-limit.oauth", project), env, cwd=project)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    mark = usage_windows.limited_of(usage_windows.read_agent(root, me()))
    assert mark is not None and (mark["until"], mark["window"], mark["source"]) == (
        reset,
        "five_hour",
        "reading",
    )

    # A reading that shows the window open again clears the mark.
    limited["rate_limits"]["five_hour"] = {"used_percentage": 2, "resets_at": reset + 18000}
    run("status-line", limited, env, cwd=project)
    assert usage_windows.limited_of(usage_windows.read_agent(root, me())) is None


def test_without_a_reading_the_reset_is_parsed_from_claudes_message(
    project: Path, env: dict[str, str]
) -> None:
    root = project / "sessions"
    at = time.localtime(time.time() + 2 * 3600)
    hour = at.tm_hour % 12 or 12
    text = f"You've hit your 5-hour limit · resets {hour}:{at.tm_min:02d}{'pm' if at.tm_hour >= 12 else 'am'} (UTC)"
    run(
        "stop-failure",
        recorded("stopfailure-rate-limit.oauth", project, last_assistant_message=text),
        env,
        cwd=project,
    )
    mark = usage_windows.limited_of(usage_windows.read_agent(root, me()))
    assert mark is not None and mark["source"] == "message" and mark["window"] == "five_hour"
    assert 0 <= mark["until"] - (time.time() + 2 * 3600) <= 60  # the end of the minute printed


def test_other_stop_failures_park_nothing(project: Path, env: dict[str, str]) -> None:
    for name in ("stopfailure-rate-limit.api_key", "stopfailure-server-error.api_key"):
        done = run("stop-failure", recorded(name, project), env, cwd=project)
        assert (done.returncode, done.stdout) == (0, "")
    assert usage_windows.read_agent(project / "sessions", me()) is None


def test_the_weekly_message_names_its_day() -> None:
    now = time.mktime((2026, 11, 25, 12, 0, 0, 0, 0, -1))
    window, when = limit_messages.parse_message(
        "You've hit your weekly limit · resets Nov 27, 11:48pm (UTC)", now
    )
    assert window == "seven_day"
    assert when is not None and time.localtime(when)[:5] == (2026, 11, 27, 23, 48)


def test_slots_go_one_at_a_time(tmp_path: Path) -> None:
    reset = time.time() + 100
    slots = [resume_slots.take_slot(tmp_path, "/c", f"a{n}", reset, 30.0) for n in range(3)]
    assert slots == [
        pytest.approx(reset, abs=0.01),
        pytest.approx(reset + 30, abs=0.01),
        pytest.approx(reset + 60, abs=0.01),
    ]
    assert resume_slots.take_slot(tmp_path, "/c", "a1", reset, 30.0) == slots[1], (
        "asking again: the same slot"
    )
    assert resume_slots.take_slot(tmp_path, "/other", "b", reset, 30.0) == pytest.approx(reset, abs=0.01)
    again = resume_slots.take_slot(tmp_path, "/c", "a0", reset + 40, 30.0)
    assert again == pytest.approx(reset + 40, abs=0.01), "parked again by a later reset: never before it"
    late = time.time() + 500  # asked long after the slot it would get: at once, and the next after it
    assert resume_slots.take_slot(tmp_path, "/late", "a", reset, 30.0, now=late) == pytest.approx(
        late, abs=0.01
    )
    assert resume_slots.take_slot(tmp_path, "/late", "b", reset, 30.0, now=late + 1) == pytest.approx(
        late + 30, abs=0.01
    )


AUTO_CONTINUE = (
    "Your claude.ai usage limit has reset. Continue the task you were working on when the limit was reached; "
    "do not repeat work that is already complete."
)
"""Claude's own auto-continue prompt, as the UserPromptSubmit hook got it from CLI 2.1.328."""


def test_outside_a_fleet_the_auto_continue_goes_through_in_its_slot_and_the_mark_goes(
    project: Path, env: dict[str, str]
) -> None:
    root, credential = project / "sessions", str(project.parent / "config-a")
    reset = time.time() - 5
    usage_windows.note_limited(root, me(), credential, reset, "five_hour", "reading")
    resume_slots.take_slot(root, credential, "someone else", reset, 2.0)  # the first went: ours is 2 s later
    prompt = recorded("userpromptsubmit-input", project, prompt=AUTO_CONTINUE)
    began = time.monotonic()
    done = run("user-prompt-submit", prompt, {**env, "CLAUDE_USAGE_RESUME_INTERVAL": "2"}, cwd=project)
    assert (done.returncode, done.stdout) == (0, "")
    assert time.monotonic() - began >= 1.5, "held until its slot"
    assert usage_windows.read_agent(root, me())["credential"] == credential
    assert "limited" not in usage_windows.read_agent(root, me())


def test_an_ordinary_prompt_is_never_held(project: Path, env: dict[str, str]) -> None:
    root, credential = project / "sessions", str(project.parent / "config-a")
    usage_windows.note_limited(root, me(), credential, time.time() + 3600, "five_hour", "reading")
    done = run("user-prompt-submit", recorded("userpromptsubmit-input", project), env, cwd=project)
    assert (done.returncode, done.stdout) == (0, "")
    assert usage_windows.limited_of(usage_windows.read_agent(root, me())) is not None


@pytest.mark.parametrize(
    "prompt",
    [
        f"Why did I get this?\n{AUTO_CONTINUE}",  # a person's prompt quoting Claude's
        f"{AUTO_CONTINUE}\n!touch /tmp/typed-into-the-pane",  # more on a line of its own
        f"{AUTO_CONTINUE} {'x' * 2000}",  # far longer than Claude's
    ],
)
def test_a_prompt_that_only_quotes_the_auto_continue_is_neither_held_nor_clears_the_mark(
    project: Path, env: dict[str, str], prompt: str
) -> None:
    root, credential = project / "sessions", str(project.parent / "config-a")
    reset = time.time() - 5
    usage_windows.note_limited(root, me(), credential, reset, "five_hour", "reading")
    resume_slots.take_slot(root, credential, "someone else", reset, 3.0)  # ours would be 3 s later
    began = time.monotonic()
    done = run("user-prompt-submit", recorded("userpromptsubmit-input", project, prompt=prompt),
               {**env, "CLAUDE_USAGE_RESUME_INTERVAL": "3"}, cwd=project)  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "")
    assert time.monotonic() - began < 1.5, "held like Claude's own auto-continue"
    assert usage_windows.limited_of(usage_windows.read_agent(root, me())) is not None, "the mark went"


def test_in_a_fleet_pane_what_is_typed_at_the_slot_is_the_continue_prompt_never_the_hooks_input(
    fake: FakeClaude, start_run: t.Callable[..., t.Any], fleet_tmux: FleetTmux, workdir: Path
) -> None:
    """The hold blocks a continue prompt whose slot is further than it may wait and types one back
    into the pane at the slot: ours, word for word, not what the hook was given."""
    root, credential = workdir / "sessions", str(workdir.parent / "config-a")
    prompt = f"{AUTO_CONTINUE} And also this."
    reset = time.time() - 5
    agent = fleet_tmux.pane_id
    usage_windows.note_limited(root, agent, credential, reset, "five_hour", "reading")
    resume_slots.take_slot(root, credential, "someone else", reset, 6.0)  # ours: 6 s after now
    payload = json.dumps(recorded("userpromptsubmit-input", workdir, prompt=prompt))
    # The stand-in Claude under claude-run calls the hook, then reads the pane's keys as its TUI does.
    hook = {"run": [str(BIN / "claude-hook"), "user-prompt-submit"], "stdin": payload}
    fake.plan([hook, {"read_keys": {"timeout": 20}}, {"wait": None}])
    run = start_run(
        pane=fleet_tmux, env={"CLAUDE_CONFIG_DIR": credential, "CLAUDE_USAGE_RESUME_INTERVAL": "6"}
    )
    keys = fake.wait_event("keys", timeout=30)
    (called,) = fake.events("run")
    assert json.loads(called["stdout"])["decision"] == "block", called
    assert keys["text"] == usage_turn.CONTINUE_TEXT
    os.kill(run.pid, signal.SIGTERM)
    assert run.wait() == 143


def test_a_reset_beyond_a_week_is_no_reading_and_parks_nobody_until_then(
    project: Path, env: dict[str, str]
) -> None:
    """A window's reset comes from the API's headers, a printed one from its text: one further ahead
    than the longest window (a week) would park the agent, and hold its relaunch, for good. It is not
    believed: no reading is kept of it and the limit it stops at has no known reset."""
    root, credential = project / "sessions", str(project.parent / "config-a")
    limited = recorded("statusline-limited.oauth", project)
    limited["rate_limits"] = {
        "five_hour": {"used_percentage": 100, "resets_at": time.time() + 10 * 365 * 86400}
    }
    run("status-line", limited, env, cwd=project)
    assert "five_hour" not in (usage_windows.read_credential(root, credential) or {}).get("windows", {})
    month = time.localtime(time.time() + 40 * 86400)
    for text in (
        "You've hit your 5-hour limit",
        f"You've hit your weekly limit · resets {time.strftime('%b', month)} {month.tm_mday}, 11:48pm (UTC)",
    ):
        done = run("stop-failure", recorded("stopfailure-rate-limit.oauth", project,
                                            last_assistant_message=text), env, cwd=project)  # fmt: skip
        assert (done.returncode, done.stdout) == (0, "")
        mark = usage_windows.limited_of(usage_windows.read_agent(root, me()))
        assert mark is not None and mark["until"] is None, (text, mark)


def test_a_stored_window_of_any_shape_costs_only_itself_at_a_usage_limit(
    project: Path, env: dict[str, str]
) -> None:
    """The credential's record is the hooks' own; a window in it that is no reading is passed over and
    the reset Claude printed parks the agent."""
    root, credential = project / "sessions", str(project.parent / "config-a")
    path = credential_file(project, credential)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"credential": credential,
                                "windows": {"five_hour": {"used_percentage": "100", "resets_at": "soon"}}}))  # fmt: skip
    at = time.localtime(time.time() + 2 * 3600)
    text = f"You've hit your 5-hour limit · resets {at.tm_hour % 12 or 12}:{at.tm_min:02d}{'pm' if at.tm_hour >= 12 else 'am'}"
    done = run("stop-failure", recorded("stopfailure-rate-limit.oauth", project, last_assistant_message=text),
               env, cwd=project)  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    mark = usage_windows.limited_of(usage_windows.read_agent(root, me()))
    assert mark is not None and mark["source"] == "message", mark


@pytest.mark.parametrize("meanwhile", ["went on", "relabelled"])
def test_nothing_is_typed_at_the_slot_into_a_pane_that_is_no_longer_the_parked_agents(
    fake: FakeClaude, start_run: t.Callable[..., t.Any], fleet_tmux: FleetTmux, workdir: Path, meanwhile: str
) -> None:
    """Between the block and the slot the agent may go on by itself (its mark goes), or its pane may
    carry another label: the continue prompt then reaches nobody."""
    root, credential = workdir / "sessions", str(workdir.parent / "config-a")
    agent = fleet_tmux.pane_id
    if meanwhile == "went on":
        change = [sys.executable, "-c", "import sys, pathlib; from claude_shepherd.supervisor.session import "
                  "usage_windows as u; u.clear_limited(pathlib.Path(sys.argv[1]), sys.argv[2])", str(root), agent]  # fmt: skip
    else:
        change = [
            "tmux",
            "-L",
            fleet_tmux.socket,
            "set-option",
            "-p",
            "-t",
            fleet_tmux.pane,
            "@pane_label",
            "Other",
        ]
    reset = time.time() - 5
    usage_windows.note_limited(root, agent, credential, reset, "five_hour", "reading")
    resume_slots.take_slot(root, credential, "someone else", reset, 6.0)
    payload = json.dumps(recorded("userpromptsubmit-input", workdir, prompt=AUTO_CONTINUE))
    hook = {"run": [str(BIN / "claude-hook"), "user-prompt-submit"], "stdin": payload}
    fake.plan([hook, {"run": change}, {"read_keys": {"timeout": 12}}, {"wait": None}])
    run = start_run(
        pane=fleet_tmux, env={"CLAUDE_CONFIG_DIR": credential, "CLAUDE_USAGE_RESUME_INTERVAL": "6"}
    )
    keys = fake.wait_event("keys", timeout=30)
    called = fake.events("run")
    assert json.loads(called[0]["stdout"])["decision"] == "block" and called[1]["rc"] == 0, called
    assert keys["text"] is None
    os.kill(run.pid, signal.SIGTERM)
    assert run.wait() == 143


def test_a_limit_named_at_any_length_parks_the_agent_under_a_short_name(
    project: Path, env: dict[str, str]
) -> None:
    root = project / "sessions"
    text = "You've hit your " + "Opus " * 5000 + "limit · resets 3:47pm (UTC)"
    done = run("stop-failure", recorded("stopfailure-rate-limit.oauth", project, last_assistant_message=text),
               env, cwd=project)  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "")
    mark = usage_windows.limited_of(usage_windows.read_agent(root, me()))
    assert mark is not None and mark["window"] == "opus_" * 8, mark


def _at(seconds: float) -> tuple[str, float]:
    """Claude's clock text for *seconds* from now (``3:47pm``, ``11pm`` on the hour) and that moment."""
    when = time.localtime(time.time() + seconds)
    minute = f":{when.tm_min:02d}" if when.tm_min else ""
    return f"{when.tm_hour % 12 or 12}{minute}{'pm' if when.tm_hour >= 12 else 'am'}", time.mktime(
        (*when[:5], 0, 0, 0, -1)
    )


@pytest.mark.parametrize(
    ("text", "window"),
    [
        ("You've hit your limit · resets {at} (UTC)", "unknown"),  # 2.1.332, overage refused
        ("You've hit your 5-hour limit · resets {at} (UTC) · progress saved", "five_hour"),
        ("You've hit your session limit · resets {at} (UTC)", "five_hour"),
        ("You've hit your Opus limit · resets {at} (UTC)", "seven_day_opus"),
        ("You've hit your Sonnet limit · resets {at} (UTC)", "seven_day_sonnet"),
        ("You've hit your usage limit · resets {at} (UTC)", "unknown"),
        ("You're out of usage credits · resets {at} (UTC)", "unknown"),
    ],
)
def test_every_usage_limit_form_the_cli_prints_parks_the_agent_in_a_fleet_pane_never_error(
    project: Path, env: dict[str, str], fleet_pane: t.Any, text: str, window: str
) -> None:
    """The forms in the 2.1.328 and 2.1.332 binaries (``strings``): Claude's ``error`` is ``rate_limit``
    for each, and that decides; the pane shows ``limited``, never ``error``, and the reset printed
    (to the minute, in the zone printed) holds the agent."""
    root = project / "sessions"
    clock_text, moment = _at(2 * 3600 + 120)
    payload = recorded(
        "stopfailure-rate-limit.oauth", project, last_assistant_message=text.format(at=clock_text)
    )
    done = fleet_pane.run([str(BIN / "claude-hook"), "stop-failure"], env=env, cwd=project,
                          input=json.dumps(payload))  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert fleet_pane.tmux("show-options", "-p", "-v", "-t", fleet_pane.pane, "@pane_notify") == "limited"
    mark = usage_windows.limited_of(usage_windows.read_agent(root, fleet_pane.pane_id))
    assert mark is not None and mark["window"] == window, mark
    assert mark["until"] == pytest.approx(moment + 60, abs=1), "the end of the minute printed"


def test_only_the_text_left_after_claudes_own_retries_is_an_error(
    project: Path, env: dict[str, str], fleet_pane: t.Any
) -> None:
    text = "API Error: Request rejected (429) · This request would exceed your account's rate limit."
    payload = recorded("stopfailure-rate-limit.oauth", project, last_assistant_message=text)
    fleet_pane.run(
        [str(BIN / "claude-hook"), "stop-failure"], env=env, cwd=project, input=json.dumps(payload)
    )
    assert fleet_pane.tmux("show-options", "-p", "-v", "-t", fleet_pane.pane, "@pane_notify") == "error"
    assert usage_windows.read_agent(project / "sessions", fleet_pane.pane_id) is None


def test_a_plain_limit_takes_the_window_the_reading_has_at_100_percent(
    project: Path, env: dict[str, str]
) -> None:
    root = project / "sessions"
    reset = int(time.time()) + 3 * 3600
    limited = recorded("statusline-limited.oauth", project)
    limited["rate_limits"]["five_hour"]["resets_at"] = reset
    run("status-line", limited, env, cwd=project)
    clock_text, _ = _at(3 * 3600)
    text = f"You've hit your limit · resets {clock_text} (UTC)"
    run("stop-failure", recorded("stopfailure-rate-limit.oauth", project, last_assistant_message=text), env,
        cwd=project)  # fmt: skip
    mark = usage_windows.limited_of(usage_windows.read_agent(root, me()))
    assert mark is not None and (mark["window"], mark["until"], mark["source"]) == (
        "five_hour",
        reset,
        "reading",
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("You've hit your weekly limit · resets Nov 27, 11pm (UTC)", (2026, 11, 27, 23, 0)),
        ("You've hit your limit · resets 10pm (UTC)", (2026, 11, 25, 22, 0)),
        ("You've hit your limit · resets 9:15am (UTC)", (2026, 11, 26, 9, 15)),  # tomorrow
        ("You've hit your weekly limit · resets Dec 1, 2026, 1:05am (UTC)", (2026, 12, 1, 1, 5)),
    ],
)
def test_the_reset_is_read_in_each_format_the_cli_prints(text: str, expected: tuple[int, ...]) -> None:
    """Claude leaves the minutes out on the hour, dates a reset more than a day ahead and names the
    year of one in another; it prints its own time zone."""
    from datetime import UTC, datetime

    now = datetime(2026, 11, 25, 12, 0, tzinfo=UTC).timestamp()
    _, when = limit_messages.parse_message(text, now)
    assert when is not None and datetime.fromtimestamp(when, UTC).timetuple()[:5] == expected


def test_a_reset_printed_in_another_time_zone_is_read_in_that_zone() -> None:
    from datetime import UTC, datetime

    now = datetime(2026, 7, 1, 12, 0, tzinfo=UTC).timestamp()
    _, when = limit_messages.parse_message(
        "You've hit your 5-hour limit · resets 3:30pm (Europe/Berlin)", now
    )
    assert when == datetime(2026, 7, 1, 13, 30, tzinfo=UTC).timestamp()  # CEST is UTC+2


CONTINUE_332 = (
    "I hit my usage limit while you were working, but it has reset now. Please continue from where you left off.",
    "My computer went to sleep while you were working. Please continue from where you left off.",
)
"""Continue prompts 2.1.332 types itself (read from its binary), besides the 2.1.328 one."""
EARLY = (
    "Your claude.ai usage is available again before the usage-limit reset. Continue the task you were working "
    "on when the limit was reached; do not repeat work that is already complete."
)
WRAP_UP = (
    "[Usage limit reached \u2014 grace window active. Wrap up: finish or checkpoint; don't start subagents or "
    "long work.]"
)
"""The note Claude adds near a limit (both binaries): no continue prompt."""


@pytest.mark.parametrize("prompt", CONTINUE_332, ids=["usage-limit", "slept"])
def test_the_continue_prompts_of_2_1_332_are_held_for_their_slot_too(
    project: Path, env: dict[str, str], prompt: str
) -> None:
    root, credential = project / "sessions", str(project.parent / "config-a")
    reset = time.time() - 5
    usage_windows.note_limited(root, me(), credential, reset, "five_hour", "reading")
    resume_slots.take_slot(root, credential, "someone else", reset, 2.0)
    began = time.monotonic()
    done = run("user-prompt-submit", recorded("userpromptsubmit-input", project, prompt=prompt),
               {**env, "CLAUDE_USAGE_RESUME_INTERVAL": "2"}, cwd=project)  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "")
    assert time.monotonic() - began >= 1.5, "went on at once, beside the agent before it"
    assert "limited" not in usage_windows.read_agent(root, me())


def test_an_early_resume_goes_on_now_not_at_the_old_reset(project: Path, env: dict[str, str]) -> None:
    """Usage came back before the reset: Claude says so and goes on; the mark, which waited for a
    reset an hour ahead, goes too (else the agent shows limited, and a relaunch waits, until then)."""
    root, credential = project / "sessions", str(project.parent / "config-a")
    usage_windows.note_limited(root, me(), credential, time.time() + 3600, "five_hour", "reading")
    began = time.monotonic()
    done = run(
        "user-prompt-submit", recorded("userpromptsubmit-input", project, prompt=EARLY), env, cwd=project
    )
    assert (done.returncode, done.stdout) == (0, "")
    assert time.monotonic() - began < 1.5
    assert "limited" not in usage_windows.read_agent(root, me()), "held until the old reset"


def test_the_wrap_up_note_near_a_limit_is_no_continue_prompt(project: Path, env: dict[str, str]) -> None:
    root, credential = project / "sessions", str(project.parent / "config-a")
    usage_windows.note_limited(root, me(), credential, time.time() - 5, "five_hour", "reading")
    resume_slots.take_slot(root, credential, "someone else", time.time() - 5, 3.0)
    began = time.monotonic()
    done = run("user-prompt-submit", recorded("userpromptsubmit-input", project, prompt=WRAP_UP),
               {**env, "CLAUDE_USAGE_RESUME_INTERVAL": "3"}, cwd=project)  # fmt: skip
    assert (done.returncode, done.stdout) == (0, "")
    assert time.monotonic() - began < 1.5, "held like a continue prompt"
    assert usage_windows.limited_of(usage_windows.read_agent(root, me())) is not None
    assert me() not in resume_slots.read_slots(root)[credential]["agents"]


def test_a_continue_prompt_blocked_for_an_agent_never_parked_is_typed_at_its_slot(
    fake: FakeClaude, start_run: t.Callable[..., t.Any], fleet_tmux: FleetTmux, workdir: Path
) -> None:
    """An agent whose limit showed as ``error`` has no mark; its continue prompt, blocked for a later
    slot, was never typed again, since the typist types only for a parked agent: stuck for good."""
    root, credential = workdir / "sessions", str(workdir.parent / "config-a")
    resume_slots.take_slot(root, credential, "someone else", time.time(), 6.0)  # ours: 6 s after now
    payload = json.dumps(recorded("userpromptsubmit-input", workdir, prompt=CONTINUE_332[0]))
    hook = {"run": [str(BIN / "claude-hook"), "user-prompt-submit"], "stdin": payload}
    fake.plan([hook, {"read_keys": {"timeout": 20}}, {"wait": None}])
    run = start_run(
        pane=fleet_tmux, env={"CLAUDE_CONFIG_DIR": credential, "CLAUDE_USAGE_RESUME_INTERVAL": "6"}
    )
    keys = fake.wait_event("keys", timeout=30)
    (called,) = fake.events("run")
    assert json.loads(called["stdout"])["decision"] == "block", called
    assert keys["text"] == usage_turn.CONTINUE_TEXT
    os.kill(run.pid, signal.SIGTERM)
    assert run.wait() == 143


def _notify(fleet_pane: t.Any, project: Path, env: dict[str, str], kind: str, message: str) -> str:
    """Run ``claude-hook notification`` in the pane, which shows ``limited``; the pane's state after."""
    fleet_pane.tmux("set-option", "-p", "-t", fleet_pane.pane, "@pane_notify", "limited")
    payload = {"session_id": "s", "cwd": str(project), "hook_event_name": "Notification",
               "message": message, "notification_type": kind}  # fmt: skip
    done = fleet_pane.run([str(BIN / "claude-hook"), "notification"], env=env, cwd=project,
                          input=json.dumps(payload))  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    return fleet_pane.tmux("show-options", "-p", "-v", "-t", fleet_pane.pane, "@pane_notify")


def test_claudes_own_auto_continue_pages_nobody_and_needs_nobody(
    project: Path, env: dict[str, str], fleet_pane: t.Any
) -> None:
    """Every parked agent of the account gets ``quota_auto_resume_fired`` within the same minute: each
    marked needs-you paged the person once per agent, for nothing they had to do."""
    for message in ("Usage limit reset \u2014 Claude is continuing your task",
                    "Usage limit available \u2014 Claude is continuing your task"):  # fmt: skip
        assert _notify(fleet_pane, project, env, "quota_auto_resume_fired", message) == "limited"
    assert "@pane_alerted" not in fleet_pane.tmux("show-options", "-p", "-t", fleet_pane.pane), "paged"


DROPPED = (
    "Automatic continue did not run \u2014 the continuation was blocked before it reached the model; send a "
    "prompt to continue"
)


def test_a_continuation_our_hold_blocked_needs_nobody_but_one_nobody_types_does(
    project: Path, env: dict[str, str], fleet_pane: t.Any
) -> None:
    """Claude says a blocked continue prompt needs a prompt; the hold's typist sends it at the slot, so
    the agent does not need the person then. Blocked by anything else, it does."""
    root, credential = project / "sessions", str(project.parent / "config-a")
    agent = fleet_pane.pane_id
    usage_windows.note_limited(root, agent, credential, time.time() - 5, "five_hour", "reading",
                               held=time.time() + 60)  # fmt: skip
    assert _notify(fleet_pane, project, env, "quota_auto_resume_disabled", DROPPED) == "limited"
    usage_windows.clear_limited(root, agent)
    assert _notify(fleet_pane, project, env, "quota_auto_resume_disabled", DROPPED) == "needs-you"


def test_a_reading_is_kept_for_the_credential_claude_uses_not_its_config_dir(
    project: Path, env: dict[str, str]
) -> None:
    """Under ``CLAUDE_CODE_OAUTH_TOKEN`` or a Claude gateway's token the windows are that login's; the
    config directory of the same agent keeps no reading (an API-key agent beside it is not held)."""
    import base64

    root = project / "sessions"
    payload = base64.urlsafe_b64encode(json.dumps({"aud": "claude-gateway"}).encode()).decode().rstrip("=")
    gateway = {
        "ANTHROPIC_AUTH_TOKEN": f"e30.{payload}.sig",
        "ANTHROPIC_BASE_URL": "https://gw.example:8443/v1",
    }
    for extra in ({"CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-x"}, gateway):
        line = recorded("statusline.oauth", project)
        line["rate_limits"]["five_hour"]["resets_at"] = time.time() + 3600
        run("status-line", line, {**env, **extra}, cwd=project)
        credential = credential_of(extra)
        assert usage_windows.read_credential(root, credential) is not None, credential
        assert usage_windows.read_agent(root, me())["credential"] == credential
    assert credential_of(gateway).startswith("gateway:gw.example:8443:")
    assert usage_windows.read_credential(root, str(project.parent / "config-a")) is None
    assert windowless(credential_of({"ANTHROPIC_API_KEY": "k"}))
    assert windowless(credential_of({"ANTHROPIC_AUTH_TOKEN": "plain"}))
