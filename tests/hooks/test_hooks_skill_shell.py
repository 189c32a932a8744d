"""A skill's inline shell command (PreSkillShellCommand, Claude Code 2.1.332) is gated like a Bash call.

Every test runs the real ``claude-hook pre-skill-shell-command`` console script with the input Claude
Code 2.1.332 was seen to send, and checks that its answer is the one PreToolUse gives the same command
as a Bash call, in the words this event takes (``hookEventName: PreSkillShellCommand``).
"""

from __future__ import annotations

import json
import subprocess
import typing as t
from pathlib import Path

import pytest
from support.fixtures import script
from support.hooks import Answer, activate, bash, hook_env, run, set_fields, state

from claude_shepherd.hooks.protocol import parse_input
from claude_shepherd.hooks.skill_shell import as_bash_call
from claude_shepherd.supervisor.env import BUDGET_USD_ENV
from claude_shepherd.supervisor.session.fields import DEFAULT_BLOCK_AFTER, F, Lifecycle

EVENT = "pre-skill-shell-command"
MAIN = "main.jsonl"  # the transcript's basename: the heartbeat's counter of this conversation
CONVERSATION = "c1f98c8c-c723-4d46-ad1d-62b28790d574"


def skill_command(project: Path, command: str, shell: str = "Bash") -> dict[str, t.Any]:
    """A PreSkillShellCommand input as Claude Code 2.1.332 sends it (observed with its skill ``mk``)."""
    return {
        "session_id": CONVERSATION,
        "transcript_path": str(project.parent / "home" / ".claude" / "projects" / "p" / MAIN),
        "cwd": str(project),
        "prompt_id": "d1e29014-a1a9-4990-bbf4-d4bca1c70eb0",
        "permission_mode": "bypassPermissions",
        "hook_event_name": "PreSkillShellCommand",
        "tool_name": shell,
        "tool_input": {"command": command},
        "tool_use_id": "4f3f41df-9eac-46b7-9448-c8694cb13c8c:inner:preamble-0",
        "command_name": "mk",
        "command_source": "userSettings",
        "invoked_by": "claude",
    }


def skill_hook(project: Path, payload: t.Any, env: dict[str, str]) -> Answer:
    """The answer of the real console script, which must be this event's: never a traceback, never "allow"."""
    done = run(EVENT, payload, env, cwd=project)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    answer = Answer(done.stdout)
    if done.stdout:
        spec = answer.data["hookSpecificOutput"]
        assert spec["hookEventName"] == "PreSkillShellCommand", done.stdout
        assert spec["permissionDecision"] == "deny" and spec["permissionDecisionReason"], done.stdout
    return answer


def as_bash(project: Path, command: str, env: dict[str, str]) -> Answer:
    done = run("pre-tool-use", bash(project, command), env, cwd=project)
    assert done.returncode == 0, done.stderr
    return Answer(done.stdout)


@pytest.fixture
def gated(project: Path) -> dict[str, str]:
    """The hooks' environment under claude-run: the session gate applies."""
    return hook_env(project, SESSION_REQUIRED="1")


@pytest.mark.parametrize("shell", ["Bash", "PowerShell"])
def test_denied_before_a_session_is_activated(project: Path, gated: dict[str, str], shell: str) -> None:
    answer = skill_hook(project, skill_command(project, "touch made.txt", shell), gated)
    assert answer.denied and "No active session" in answer.reason
    assert answer.reason == as_bash(project, "touch made.txt", gated).reason, "the Bash call's own reason"


def test_a_lone_session_command_passes_before_activation_as_in_bash(
    project: Path, gated: dict[str, str]
) -> None:
    assert skill_hook(project, skill_command(project, "session find"), gated).allowed
    assert skill_hook(project, skill_command(project, "session find; touch made.txt"), gated).denied


def test_allowed_in_an_activated_healthy_session_printing_nothing(
    project: Path, gated: dict[str, str]
) -> None:
    activate(project, contextUsage=0.1)
    for shell in ("Bash", "PowerShell"):
        done = run(EVENT, skill_command(project, "touch made.txt", shell), gated, cwd=project)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_denied_while_the_heartbeat_blocks_and_never_counted(project: Path, gated: dict[str, str]) -> None:
    """The Skill call that loaded the skill was counted; its lines are not, but the block holds them."""
    session_dir = activate(project, logTemplate="/x/TEMPLATE_X_LOG.md", contextUsage=0.1)
    set_fields(session_dir, loading=None, toolCallsByTranscript={MAIN: DEFAULT_BLOCK_AFTER - 1})
    for _ in range(3):
        assert skill_hook(project, skill_command(project, "touch made.txt"), gated).allowed
    assert state(session_dir)[F.TOOL_CALLS_BY_TRANSCRIPT] == {MAIN: DEFAULT_BLOCK_AFTER - 1}
    set_fields(session_dir, toolCallsByTranscript={MAIN: DEFAULT_BLOCK_AFTER})
    answer = skill_hook(project, skill_command(project, "touch made.txt"), gated)
    assert answer.denied and answer.reason.startswith(
        f"§CMD_LOG_BETWEEN_TOOL_USES: {DEFAULT_BLOCK_AFTER} tool calls without logging. Tool DENIED."
    )
    assert state(session_dir)[F.TOOL_CALLS_BY_TRANSCRIPT] == {MAIN: DEFAULT_BLOCK_AFTER}


def test_denied_while_a_restart_is_pending(project: Path, gated: dict[str, str]) -> None:
    activate(project, killRequested=True, lifecycle=Lifecycle.DEHYDRATING, contextUsage=0.1)
    answer = skill_hook(project, skill_command(project, "touch made.txt"), gated)
    assert answer.denied and "restart of this session is pending" in answer.reason


def test_denied_after_an_overflow(project: Path, gated: dict[str, str]) -> None:
    session_dir = activate(project, contextUsage=0.9)
    answer = skill_hook(project, skill_command(project, "touch made.txt"), gated)
    assert answer.denied and "Context overflow" in answer.reason and "session dehydrate" in answer.reason
    assert state(session_dir)[F.OVERFLOWED] is True
    set_fields(session_dir, contextUsage=0.1)
    assert skill_hook(project, skill_command(project, "echo later"), gated).denied, "it stays overflowed"


def test_a_paused_agent_is_stopped_not_only_denied(project: Path) -> None:
    """At its budget the agent is paused: the deny ends the turn (``continue: false``), as for a tool call."""
    env = hook_env(project, **{BUDGET_USD_ENV: "1"})
    status = {"session_id": CONVERSATION, "cwd": str(project), "cost": {"total_cost_usd": 2.0}}
    assert run("status-line", status, env, cwd=project).returncode == 0
    answer = skill_hook(project, skill_command(project, "touch made.txt"), env)
    assert answer.denied and answer.data["continue"] is False and answer.data["stopReason"]


@pytest.mark.parametrize(
    "payload, says",
    [
        (b"", "the hook input on stdin is empty"),
        (b"{half", "not valid JSON"),
        (b"[1]", "a JSON list, not an object"),
        (
            {"tool_input": {"command": "touch made.txt"}},
            "its tool_name names no shell, not Bash or PowerShell",
        ),
        (
            {"tool_name": "Zsh", "tool_input": {"command": "touch made.txt"}},
            "its tool_name is 'Zsh', not Bash",
        ),
        ({"tool_name": ["Bash"], "tool_input": {"command": "x"}}, "its tool_name is a JSON array, not Bash"),
        ({"tool_name": "Bash"}, "its tool_input has no command"),
        ({"tool_name": "Bash", "tool_input": "touch made.txt"}, "its tool_input has no command"),
        ({"tool_name": "Bash", "tool_input": {"command": None}}, "its tool_input has no command"),
        ({"tool_name": "Bash", "tool_input": {"command": ["rm", "-rf"]}}, "command is a JSON array, not the"),
        ({"tool_name": "Bash", "tool_input": {"command": True}}, "command is a JSON boolean, not the"),
        ({"tool_name": "Bash", "tool_input": {"command": 7}}, "command is a JSON number, not the"),
    ],
)
def test_input_claude_code_never_sends_is_denied_saying_why(
    project: Path, gated: dict[str, str], payload: t.Any, says: str
) -> None:
    activate(project, contextUsage=0.1)  # nothing else would deny the command
    if isinstance(payload, dict):
        envelope = {
            k: v for k, v in skill_command(project, "").items() if k not in ("tool_name", "tool_input")
        }
        payload = {**envelope, **payload}
    answer = skill_hook(project, payload.decode() if isinstance(payload, bytes) else payload, gated)
    assert answer.denied and says in answer.reason and "\n" not in answer.reason
    assert answer.reason.startswith(
        "claude-hook pre-skill-shell-command could not check this skill's shell command: "
    )


def test_only_the_command_is_judged_and_no_transcript_line_is_awaited(project: Path) -> None:
    """The rules see a Bash call of the command alone: a ``run_in_background`` no skill command has
    cannot reach them, and the ``tool_use_id`` (no transcript line carries it) is not waited for."""
    payload = skill_command(project, "git status", "PowerShell")
    payload["tool_input"]["run_in_background"] = True
    payload["tool_use_id"] = "toolu_01"  # the shape a PreToolUse call's line is awaited by
    judged = as_bash_call(parse_input(json.dumps(payload).encode()))
    assert judged.problem is None
    expected = {k: v for k, v in payload.items() if k != "tool_use_id"}
    assert judged.data == {**expected, "tool_name": "Bash", "tool_input": {"command": "git status"}}


def test_a_hook_that_cannot_answer_in_time_denies_in_this_events_words(project: Path) -> None:
    env = dict(hook_env(project), CLAUDE_HOOK_DEADLINE="0.5")
    proc = subprocess.Popen(
        [script("claude-hook"), EVENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=project
    )
    assert proc.stdout is not None
    try:
        out = proc.stdout.read()  # stdin never closes: only the deadline answers
        proc.wait(timeout=10)
    finally:
        proc.kill()
        proc.wait()
    spec = json.loads(out)["hookSpecificOutput"]
    assert spec["hookEventName"] == "PreSkillShellCommand" and spec["permissionDecision"] == "deny"
    assert "within 0.5 s" in spec["permissionDecisionReason"]
