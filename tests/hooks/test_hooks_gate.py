"""The session gate (PreToolUse) and the prompt gate (UserPromptSubmit), seed 002 S10/S11.

Behaviour of the original's test-session-gate.sh and test-prompt-gate.sh
(original-system §4.4), plus the Read whitelist's normalisation, which closes
the original's traversal holes (§5.3).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.hooks import activate, bash, call, hook_env, run, set_fields, tool

from claude_shepherd.supervisor.session.fields import Lifecycle

GATE = "§CMD_REQUIRE_ACTIVE_SESSION"


@pytest.fixture
def env(project: Path) -> dict[str, str]:
    (project.parent / "home" / ".claude").mkdir(parents=True, exist_ok=True)
    return hook_env(project, SESSION_REQUIRED="1")


# --------------------------------------------------------------------------- gate on / off


@pytest.mark.parametrize("value", [None, "", "0", "true", "yes", " 1"])
def test_gate_off_unless_session_required_is_exactly_1(project: Path, value: str | None) -> None:
    env = hook_env(project) if value is None else hook_env(project, SESSION_REQUIRED=value)
    assert call("pre-tool-use", bash(project, "git status"), env).allowed
    assert call("pre-tool-use", tool(project, "Edit", file_path=str(project / "a.py")), env).allowed
    assert call("user-prompt-submit", {"cwd": str(project), "prompt": "hi"}, env).stdout == ""


@pytest.mark.parametrize("name", ["AskUserQuestion", "Skill"])
def test_ask_and_skill_always_pass(project: Path, env: dict[str, str], name: str) -> None:
    assert call("pre-tool-use", tool(project, name, skill="implement", questions=[]), env).allowed


@pytest.mark.parametrize("name", ["Edit", "Write", "Grep", "Glob", "WebFetch", "Task", "mcp__x__y", ""])
def test_other_tools_denied_without_session(project: Path, env: dict[str, str], name: str) -> None:
    answer = call("pre-tool-use", tool(project, name, file_path=str(project / "a.py")), env)
    assert answer.denied
    assert answer.reason.startswith(f"{GATE}: No active session. Tool use blocked.")
    assert "AskUserQuestion" in answer.reason and "session activate" in answer.reason


def test_deny_reason_has_real_newlines_and_no_explicit_allow(project: Path, env: dict[str, str]) -> None:
    answer = call("pre-tool-use", bash(project, "git status"), env)
    assert "\n" in answer.reason and "\\n" not in answer.reason
    assert call("pre-tool-use", bash(project, "session find"), env).stdout == ""  # never "allow"


# --------------------------------------------------------------------------- Read whitelist


def read(project: Path, path: str) -> dict:
    return tool(project, "Read", file_path=path)


def test_read_whitelist_allows_standards_and_sessions(project: Path, env: dict[str, str]) -> None:
    home = Path(env["HOME"])
    (project / ".claude" / ".directives").mkdir(parents=True)
    (home / ".claude" / ".directives").mkdir(parents=True)
    allowed = [
        str(home / ".claude" / ".directives" / "COMMANDS.md"),
        "~/.claude/.directives/COMMANDS.md",
        str(home / ".claude" / "projects" / "foo" / "memory" / "MEMORY.md"),
        str(project / ".claude" / ".directives" / "INVARIANTS.md"),
        ".claude/.directives/INVARIANTS.md",  # relative to the hook's cwd
        str(project / "CLAUDE.md"),
        "/somewhere/else/CLAUDE.md",
        str(project / "sessions" / "foo" / "DEHYDRATED_CONTEXT.md"),
        "sessions/foo/IMPLEMENTATION_LOG.md",
    ]
    for path in allowed:
        assert call("pre-tool-use", read(project, path), env).allowed, path


def test_read_whitelist_denies_traversal_and_lookalikes(
    project: Path, env: dict[str, str], tmp_path: Path
) -> None:
    home = Path(env["HOME"])
    denied = [
        "/tmp/random-file.ts",
        "/etc/.claude/../passwd",
        str(project / "sessions" / ".." / ".." / ".." / "etc" / "x.md"),
        "/tmp/memory/../etc/passwd",
        str(home / ".claude" / ".." / ".ssh" / "id_rsa"),
        str(home / ".claude-evil" / "x"),
        str(home / ".claudex" / "settings.json"),
        str(project / "sessionsX" / "a.md"),
        str(project / "src" / "main.py"),
        str(project / "CLAUDE.md.bak"),
        str(project / "NOTCLAUDE.md"),
        "",
        "relative/file.py",
    ]
    for path in denied:
        assert call("pre-tool-use", read(project, path), env).denied, path
    for bad in (None, 3, ["a"], {"p": 1}):
        assert call("pre-tool-use", tool(project, "Read", file_path=bad), env).denied


def test_read_through_symlink_out_of_claude_dir_is_denied(
    project: Path, env: dict[str, str], tmp_path: Path
) -> None:
    home = Path(env["HOME"])
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "key").write_text("s3cret")
    (home / ".claude" / "link").symlink_to(secret)
    (home / ".claude" / "CLAUDE.md").symlink_to(secret / "key")  # a lookalike name pointing out
    (project / "sessions" / "escape").symlink_to(secret)
    for path in (
        home / ".claude" / "link" / "key",
        home / ".claude" / "CLAUDE.md",
        project / "sessions" / "escape" / "key",
    ):
        assert call("pre-tool-use", read(project, str(path)), env).denied, path


def test_symlinked_home_claude_dir_is_still_whitelisted(
    project: Path, env: dict[str, str], tmp_path: Path
) -> None:
    real = tmp_path / "dotfiles-claude"
    real.mkdir()
    home = Path(env["HOME"])
    (home / ".claude").rmdir()
    (home / ".claude").symlink_to(real)
    assert call("pre-tool-use", read(project, str(home / ".claude" / "COMMANDS.md")), env).allowed


def test_config_dir_and_project_dir_from_claude_env(project: Path, tmp_path: Path) -> None:
    config, other = tmp_path / "cfg", tmp_path / "other-project"
    env = hook_env(
        project, SESSION_REQUIRED="1", CLAUDE_CONFIG_DIR=str(config), CLAUDE_PROJECT_DIR=str(other)
    )
    assert call("pre-tool-use", read(project, str(config / "x.md")), env).allowed
    assert call("pre-tool-use", read(project, str(other / ".claude" / "x.md")), env).allowed
    assert call("pre-tool-use", read(project, str(other / "x.md")), env).denied


# --------------------------------------------------------------------------- session state


def test_active_session_opens_the_gate(project: Path, env: dict[str, str]) -> None:
    activate(project)
    assert call("pre-tool-use", tool(project, "Edit", file_path=str(project / "a.py")), env).allowed
    assert call("pre-tool-use", bash(project, "git status"), env).allowed


@pytest.mark.parametrize("lifecycle", [Lifecycle.DEHYDRATING, Lifecycle.RESUMING])
def test_dehydrating_and_resuming_pass(project: Path, env: dict[str, str], lifecycle: str) -> None:
    activate(project, lifecycle=lifecycle)
    assert call("pre-tool-use", tool(project, "Edit", file_path="a.py"), env).allowed


def test_bash_era_state_without_lifecycle_counts_as_active(project: Path, env: dict[str, str]) -> None:
    session_dir = activate(project)
    set_fields(session_dir, lifecycle=None)
    assert call("pre-tool-use", tool(project, "Edit", file_path="a.py"), env).allowed


def test_completed_session_denies_with_continue_instructions(project: Path, env: dict[str, str]) -> None:
    activate(project, lifecycle=Lifecycle.COMPLETED)
    answer = call("pre-tool-use", tool(project, "Write", file_path="a.py"), env)
    assert answer.denied
    assert answer.reason.startswith(
        f"{GATE}: Previous session '2026_11_22_TOPIC' (skill: implement) is completed."
    )
    assert "session continue sessions/2026_11_22_TOPIC" in answer.reason
    assert "session activate sessions/YYYY_MM_DD_TOPIC SKILL" in answer.reason
    assert "AskUserQuestion" in answer.reason


@pytest.mark.parametrize("lifecycle", [Lifecycle.RESTARTING, "weird", 7])
def test_restarting_or_unknown_lifecycle_denies_without_saying_completed(
    project: Path, env: dict[str, str], lifecycle: object
) -> None:
    activate(project, lifecycle=lifecycle)
    answer = call("pre-tool-use", tool(project, "Write", file_path="a.py"), env)
    assert answer.denied and "completed" not in answer.reason
    assert "not active" in answer.reason and "session continue sessions/2026_11_22_TOPIC" in answer.reason


def test_removed_state_denies_again(project: Path, env: dict[str, str]) -> None:
    session_dir = activate(project)
    assert call("pre-tool-use", tool(project, "Write", file_path="a.py"), env).allowed
    (session_dir / ".state.json").unlink()
    answer = call("pre-tool-use", tool(project, "Write", file_path="a.py"), env)
    assert answer.denied and GATE in answer.reason


def test_session_of_another_supervisor_does_not_open_the_gate(project: Path, env: dict[str, str]) -> None:
    activate(project, pid=os.getppid())  # alive, but not our supervisor
    assert call("pre-tool-use", tool(project, "Write", file_path="a.py"), env).denied


def test_session_dir_with_spaces_is_quoted_in_the_instructions(project: Path, env: dict[str, str]) -> None:
    activate(project, name="2026_11_22_A B", lifecycle=Lifecycle.COMPLETED)
    reason = call("pre-tool-use", tool(project, "Write", file_path="a.py"), env).reason
    assert "session continue 'sessions/2026_11_22_A B'" in reason


# --------------------------------------------------------------------------- prompt gate


def prompt(project: Path) -> dict:
    return {
        "session_id": "s",
        "transcript_path": "/t.jsonl",
        "cwd": str(project),
        "hook_event_name": "UserPromptSubmit",
        "prompt": "please do it",
    }


@pytest.mark.parametrize("lifecycle", [Lifecycle.ACTIVE, Lifecycle.DEHYDRATING, Lifecycle.RESUMING])
def test_prompt_gate_silent_for_live_session(project: Path, env: dict[str, str], lifecycle: str) -> None:
    activate(project, lifecycle=lifecycle)
    assert call("user-prompt-submit", prompt(project), env).stdout == ""


def test_prompt_gate_without_session_injects_boot_sequence(project: Path, env: dict[str, str]) -> None:
    answer = call("user-prompt-submit", prompt(project), env)
    assert answer.data["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert "permissionDecision" not in answer.data["hookSpecificOutput"]
    text = answer.context
    assert text.startswith(f"{GATE}: No active session.")
    assert "Boot sequence" in text and "AskUserQuestion" in text and "session activate" in text
    assert "completed" not in text


def test_prompt_gate_for_completed_session(project: Path, env: dict[str, str]) -> None:
    activate(project, skill="analyze", lifecycle=Lifecycle.COMPLETED)
    text = call("user-prompt-submit", prompt(project), env).context
    assert f"{GATE}: Previous session '2026_11_22_TOPIC' (skill: analyze) is completed." in text
    assert "Boot sequence" in text and "session continue sessions/2026_11_22_TOPIC" in text


def test_prompt_gate_for_restarting_session_does_not_say_completed(
    project: Path, env: dict[str, str]
) -> None:
    activate(project, lifecycle=Lifecycle.RESTARTING)
    text = call("user-prompt-submit", prompt(project), env).context
    assert "completed" not in text
    assert "is restarting, not active" in text and "session continue sessions/2026_11_22_TOPIC" in text


def test_prompt_gate_with_unreadable_input_still_answers(project: Path, env: dict[str, str]) -> None:
    for raw in (b"", b"not json", b"[1,2]"):
        answer = call("user-prompt-submit", raw, dict(env))
        assert answer.context.startswith(f"{GATE}: No active session")


# --------------------------------------------------------------------------- real processes


def test_gate_as_a_real_hook_process(project: Path, env: dict[str, str], run_session) -> None:
    denied = run("pre-tool-use", bash(project, "git status"), env, cwd=project)
    assert denied.returncode == 0 and denied.stderr == ""
    assert '"permissionDecision": "deny"' in denied.stdout
    context = run("user-prompt-submit", prompt(project), env, cwd=project)
    assert "Boot sequence" in context.stdout
    assert run_session("activate", "sessions/2026_11_22_REAL", "implement").returncode == 0
    allowed = run("pre-tool-use", bash(project, "git status"), env, cwd=project)
    assert (allowed.returncode, allowed.stdout, allowed.stderr) == (0, "", "")
    assert run("user-prompt-submit", prompt(project), env, cwd=project).stdout == ""
    deactivated = run_session("deactivate", "sessions/2026_11_22_REAL", input="Did the thing.")
    assert deactivated.returncode == 0, deactivated.stderr
    again = run("pre-tool-use", bash(project, "git status"), env, cwd=project)
    assert "is completed" in again.stdout
