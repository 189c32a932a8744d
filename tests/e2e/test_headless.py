"""End to end in ``claude -p``: the real CLI reads our hook answers (S10, headless overflow).

Each test scripts the mock API's replies, runs the pinned Claude Code CLI under
``claude-run`` with our hooks installed through ``claude-hook install
--settings-file``, and asserts on what the CLI sent back to the model and on
the session state.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import typing as t
from pathlib import Path

from .cli import MODEL
from .mock_api import MockAPI, Turn

BIN = Path(sys.executable).parent
SESSION = "sessions/2026_11_22_E2E"


def install_hooks(world: t.Any, env: dict[str, str]) -> Path:
    """Install our hooks into a settings file of their own (passed with --settings)."""
    settings = world.home / "shepherd-settings.json"
    done = subprocess.run(
        [str(BIN / "claude-hook"), "install", "--settings-file", str(settings)],
        env=env, cwd=world.project, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (world.home / ".claude/skills/session/SKILL.md").exists()
    return settings


def claude_run_print(
    world: t.Any, env: dict[str, str], settings: Path, prompt: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    argv = [str(BIN / "claude-run"), "--", "-p", "--dangerously-skip-permissions", "--model", MODEL,
            "--settings", str(settings), *extra, prompt]  # fmt: skip
    return subprocess.run(argv, env=env, cwd=world.project, capture_output=True, text=True, timeout=180)


def result_text(result: dict[str, t.Any]) -> str:
    content = result.get("content")
    if isinstance(content, list):
        return "\n".join(c.get("text", "") for c in content if isinstance(c, dict))
    return str(content)


def last_result(api: MockAPI, request_index: int) -> dict[str, t.Any]:
    return api.tool_results(api.main_requests()[request_index])[-1]


def state(world: t.Any, rel: str = SESSION) -> dict[str, t.Any]:
    return json.loads((world.project / rel / ".state.json").read_text())


def test_s10_gate_denies_until_activation(world, mock_api: MockAPI, env_for) -> None:
    env = env_for()
    settings = install_hooks(world, env)
    mock_api.script(
        Turn.bash("echo BEFORE_ACTIVATION > before.txt"),
        Turn.bash(f"session activate {SESSION} implement"),
        Turn.bash("echo AFTER_ACTIVATION"),
        Turn.say("finished"),
    )
    run = claude_run_print(world, env, settings, "start the work")
    assert run.returncode == 0, run.stderr
    denied = last_result(mock_api, 1)
    assert denied.get("is_error") is True
    assert "session activate" in result_text(denied), "the deny reason reaches the model"
    assert not (world.project / "before.txt").exists(), "the denied command never ran"
    activated = result_text(last_result(mock_api, 2))
    assert "Session activated" in activated
    after = last_result(mock_api, 3)
    assert "AFTER_ACTIVATION" in result_text(after) and not after.get("is_error")
    st = state(world)
    assert st["lifecycle"] == "active" and st["skill"] == "implement"
    conversation = mock_api.requests[-1]["headers"].get("X-Claude-Code-Session-Id")
    assert conversation and st["sessionId"] == conversation


def test_headless_overflow_from_the_transcript(world, mock_api: MockAPI, env_for) -> None:
    """No status line runs in -p: the gate reads usage from the transcript and still denies."""
    env = env_for()
    settings = install_hooks(world, env)
    mock_api.script(
        Turn.bash(f"session activate {SESSION} implement"),
        Turn.bash("echo SHOULD_NOT_RUN > overflow.txt", input_tokens=2000, cache_read=158000),
        Turn.say("stopping"),
    )
    run = claude_run_print(world, env, settings, "work hard")
    assert run.returncode == 0, run.stderr
    denied = last_result(mock_api, 2)
    assert denied.get("is_error") is True
    assert "session dehydrate" in result_text(denied)
    assert not (world.project / "overflow.txt").exists()
    assert state(world)["overflowed"] is True


def test_claudes_files_changed_view_shows_no_machinery(world, mock_api: MockAPI, env_for) -> None:
    """Claude Code diffs the work tree around each Bash command with git (`bashEditDiff`: its
    files-changed view, and what PostToolUse hooks get): a `session` call shows the session's
    state and log, never the store's locks or index."""
    import shutil

    shutil.rmtree(world.project / ".git")
    subprocess.run(["git", "init", "-q"], cwd=world.project, check=True)
    env = env_for()
    settings = install_hooks(world, env)
    with_diff = json.loads(settings.read_text())
    with_diff["bashEditDiffEnabled"] = True  # on by default only where the model's configuration says so
    settings.write_text(json.dumps(with_diff))
    mock_api.script(
        Turn.bash(f"session activate {SESSION} implement"),
        Turn.bash(f"echo progress | session log {SESSION}"),
        Turn.say("finished"),
    )
    run = claude_run_print(world, env, settings, "start the work", "--output-format", "json")
    assert run.returncode == 0, run.stderr
    conversation = json.loads(run.stdout)["session_id"]
    transcript = next(world.home.rglob(f"{conversation}.jsonl"))
    changed = [
        [
            os.path.relpath(path, world.project)
            for path in entry["toolUseResult"]["bashEditDiff"]["changedFiles"]
        ]
        for entry in map(json.loads, transcript.read_text().splitlines())
        if isinstance(entry.get("toolUseResult"), dict) and "bashEditDiff" in entry["toolUseResult"]
    ]
    assert changed == [
        [f"{SESSION}/.state.json"],
        [f"{SESSION}/IMPLEMENT_LOG.md", f"{SESSION}/.state.json"],
    ], changed


def test_headless_overflow_when_the_newest_response_cannot_be_read(world, mock_api: MockAPI, env_for) -> None:
    """The response asking for the call reports 95 % but nests past a JSON parser (a field of its
    tool_use block 1,500 levels deep, kept by the CLI in the transcript); the one before it reported
    1 %. Unknown is not the older reading: the call is denied, and never runs."""
    deep: object = 1
    for _ in range(1500):
        deep = {"a": deep}
    env = env_for()
    settings = install_hooks(world, env)
    mock_api.script(
        Turn.bash(f"session activate {SESSION} implement"),
        Turn.bash("echo LOW"),
        Turn.bash("echo SHOULD_NOT_RUN > overflow.txt", input_tokens=2000, cache_read=188000,
                  block_extra={"caller": deep}),
        Turn.say("stopping"),
    )  # fmt: skip
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)  # the mock API (in this process) writes and reads that nesting
    try:
        run = claude_run_print(world, env, settings, "work hard")
    finally:
        sys.setrecursionlimit(limit)
    assert run.returncode == 0, run.stderr
    assert "LOW" in result_text(last_result(mock_api, 2))
    denied = last_result(mock_api, 3)
    assert denied.get("is_error") is True and "Context usage unknown" in result_text(denied)
    assert not (world.project / "overflow.txt").exists()
