"""Numbers from outside — environment, tmux options, state files — parsed in one place: plain ASCII digits,
bounded, or nothing; and what an agent writes where a number belongs never crashes a command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.fixtures import Run
from support.hooks import activate, bash, hook_env, run, tool

from claude_shepherd.supervisor.session.fields import Lifecycle
from claude_shepherd.supervisor.session.numbers import PID_MAX, parse_count, parse_decimal, parse_pid

HOSTILE = [
    "",
    "²",
    "٣",
    "１",
    "+1",
    "-1",
    " 1",
    "1 ",
    "1\n",
    "1_0",
    "0x1",
    "1e3",
    "nan",
    "inf",
    "1.5.",
    "9" * 5000,
]


@pytest.mark.parametrize("raw", [*HOSTILE, None, 7, 1.0, b"1"])
def test_only_plain_ascii_digits_are_numbers(raw: object) -> None:
    assert parse_count(raw, maximum=10**30) is None
    assert parse_pid(raw) is None
    assert parse_decimal(raw, maximum=1e30) is None


def test_bounds() -> None:
    assert (
        parse_count("0", maximum=3) == 0
        and parse_count("3", maximum=3) == 3
        and parse_count("4", maximum=3) is None
    )
    assert (
        parse_pid("0") is None and parse_pid(str(PID_MAX)) == PID_MAX and parse_pid(str(PID_MAX + 1)) is None
    )
    assert parse_count("007", maximum=10) == 7
    assert [parse_decimal(raw, maximum=1.0) for raw in ("0.76", ".5", "1.", "1", "1.01", ".", "1.5.")] == [
        0.76,
        0.5,
        1.0,
        1.0,
        None,
        None,
        None,
    ]


@given(st.text(max_size=30))
def test_a_parsed_number_is_exactly_what_ascii_digits_say(raw: str) -> None:
    value = parse_count(raw, maximum=10**25)
    plain = raw != "" and len(raw) <= 20 and all("0" <= c <= "9" for c in raw)
    assert value == (int(raw) if plain else None)
    decimal = parse_decimal(raw, maximum=1e30)
    if decimal is not None:
        assert set(raw) <= set("0123456789.") and raw.count(".") <= 1 and decimal == float(raw)


# --------------------------------------------------------------------------- through the console scripts


def test_a_dehydrate_budget_that_is_not_a_number_is_the_default(project: Path) -> None:
    """It crashed the hook, whose failure denies every tool call."""
    activate(project, lifecycle=Lifecycle.DEHYDRATING, dehydrateToolCalls=0)
    done = run(
        "pre-tool-use",
        tool(project, "Grep", pattern="x"),
        hook_env(project, CLAUDE_DEHYDRATE_CALL_BUDGET="²"),
    )
    assert done.returncode == 0 and done.stdout == "" and "Traceback" not in done.stderr, (
        done.stdout + done.stderr
    )


def test_a_supervisor_pid_that_is_not_a_number_is_nobody(project: Path, run_session: Run) -> None:
    activate(project, currentPhase="2: Build")
    shown = run(
        "status-line", {"session_id": "s", "cwd": str(project)}, hook_env(project, CLAUDE_SUPERVISOR_PID="²")
    )
    assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr
    found = run_session("find", env={"CLAUDE_SUPERVISOR_PID": "²", "CLAUDE_PID": "٣"})
    assert found.returncode == 0 and "Traceback" not in found.stderr, (
        "its parent (this test, the owner) is who it is"
    )
    answer = run(
        "pre-tool-use",
        bash(project, "ls"),
        hook_env(project, CLAUDE_SUPERVISOR_PID="²", SESSION_REQUIRED="1"),
    )
    assert answer.returncode == 0 and "Traceback" not in answer.stderr, answer.stderr


def test_a_phase_number_past_any_plan_is_refused_in_one_line_and_shown_as_text(
    project: Path, run_session: Run
) -> None:
    session_dir = activate(project, phases=[{"major": 1, "minor": 0, "name": "Setup"}])
    huge = "9" * 5000 + ": Build"
    refused = run_session("phase", f"sessions/{session_dir.name}", huge)
    assert (
        refused.returncode == 1
        and refused.stderr.count("\n") == 1
        and "phase numbers go up to" in refused.stderr
    )
    state = json.loads((session_dir / ".state.json").read_text())
    state["currentPhase"] = huge  # written behind session's back
    (session_dir / ".state.json").write_text(json.dumps(state))
    shown = run("status-line", {"session_id": "s", "cwd": str(project)}, hook_env(project))
    assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr
