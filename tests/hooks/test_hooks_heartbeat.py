"""The logging heartbeat (seed 002 §7 req. 10, 13; original-system §3.9, §4.6)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.hooks import activate, bash, call, hook_env, set_fields, state, tool
from support.hooks import run as hooks_run

from claude_shepherd.supervisor.session.fields import LOADING_BLOCK_AFTER, F, Lifecycle
from claude_shepherd.supervisor.session.paths import log_file_name

LOG = "§CMD_LOG_BETWEEN_TOOL_USES"
TEMPLATE = "~/.claude/skills/implement/assets/TEMPLATE_IMPLEMENTATION_LOG.md"
MAIN = "main.jsonl"


@pytest.fixture
def env(project: Path) -> dict[str, str]:
    """The hooks' environment, with the skill's log template installed in its HOME."""
    env = hook_env(project)
    template = template_file(env)
    template.parent.mkdir(parents=True)
    template.write_text("# Implementation log\n## Done\n## Next\n")
    return env


def template_file(env: dict[str, str]) -> Path:
    """Where TEMPLATE points."""
    return Path(env["HOME"]) / TEMPLATE.removeprefix("~/")


@pytest.fixture
def session_dir(project: Path) -> Path:
    """A session past bootstrap (loading cleared) whose skill declared a log template."""
    session_dir = activate(project, logTemplate=TEMPLATE)
    set_fields(session_dir, loading=None)
    return session_dir


def counter(session_dir: Path, key: str = MAIN) -> int | None:
    return (state(session_dir).get(F.TOOL_CALLS_BY_TRANSCRIPT) or {}).get(key)


def grep(project: Path, transcript: str | None = None) -> dict:
    return tool(project, "Grep", transcript=transcript, pattern="x")


def test_normal_tools_are_counted(project: Path, env: dict[str, str], session_dir: Path) -> None:
    assert call("pre-tool-use", grep(project), env).allowed
    assert counter(session_dir) == 1
    assert call("pre-tool-use", tool(project, "Write", file_path="a.py"), env).allowed
    assert counter(session_dir) == 2


def test_warn_at_3_with_context_then_deny_at_10(
    project: Path, env: dict[str, str], session_dir: Path
) -> None:
    answers = [call("pre-tool-use", grep(project), env) for _ in range(10)]
    assert all(a.allowed for a in answers[:2])
    for n, answer in enumerate(answers[2:9], start=3):
        assert not answer.denied
        assert answer.data["hookSpecificOutput"]["hookEventName"] == "PreToolUse"
        assert "permissionDecision" not in answer.data["hookSpecificOutput"]  # a note, not an "allow"
        assert answer.context.startswith(f"{LOG}: {n}/10 tool calls without logging. Log soon.")
        assert "session log sessions/2026_11_22_TOPIC <<'EOF'" in answer.context
        assert str(template_file(env)) in answer.context and "IMPLEMENTATION_LOG.md" in answer.context
    final = answers[9]
    assert final.denied
    assert final.reason.startswith(f"{LOG}: 10 tool calls without logging. Tool DENIED.")
    assert f"Read the log template first (reading it is allowed): {template_file(env)}\n" in final.reason
    assert "sessions/2026_11_22_TOPIC/IMPLEMENTATION_LOG.md" in final.reason


def test_thresholds_come_from_the_state(project: Path, env: dict[str, str], session_dir: Path) -> None:
    set_fields(session_dir, toolUseWithoutLogsWarnAfter=1, toolUseWithoutLogsBlockAfter=2)
    first, second = call("pre-tool-use", grep(project), env), call("pre-tool-use", grep(project), env)
    assert f"{LOG}: 1/2" in first.context and second.denied
    set_fields(
        session_dir, toolUseWithoutLogsWarnAfter="x", toolUseWithoutLogsBlockAfter=0, toolCallsByTranscript={}
    )
    answers = [call("pre-tool-use", grep(project), env) for _ in range(12)]
    assert (
        not any(a.denied for a in answers[:9]) and answers[9].denied
    )  # 0 cannot switch it off: the default 10
    assert answers[2].context.startswith(f"{LOG}: 3/10 tool calls")  # malformed warn → default 3
    set_fields(session_dir, toolUseWithoutLogsBlockAfter=10**9, toolCallsByTranscript={})
    answers = [call("pre-tool-use", grep(project), env) for _ in range(50)]
    assert answers[-1].denied and not answers[-2].denied, "a huge threshold is clamped to 50"


def test_the_hook_never_resets_on_seeing_session_log(
    project: Path, env: dict[str, str], session_dir: Path
) -> None:
    """``session log --help``, a failing log or another session's log must not reset anything:
    only the command itself resets, after its entry landed (tests/test_session_cli.py)."""
    set_fields(session_dir, toolCallsByTranscript={MAIN: 6, "agent-1.jsonl": 4})
    for command in (
        "session log sessions/2026_11_22_TOPIC <<'EOF'\nDid X.\nEOF",
        "session log --help",
        "session log sessions/SOMEONE_ELSE <<'EOF'\nx\nEOF",
    ):
        assert call("pre-tool-use", bash(project, command), env).allowed
    assert state(session_dir)[F.TOOL_CALLS_BY_TRANSCRIPT] == {MAIN: 6, "agent-1.jsonl": 4}


def test_chained_session_log_is_counted_not_reset(
    project: Path, env: dict[str, str], session_dir: Path
) -> None:
    """The original reset the counter for `engine log …; <anything>`."""
    set_fields(session_dir, toolCallsByTranscript={MAIN: 5})
    call("pre-tool-use", bash(project, "session log sessions/X <<'EOF'\nx\nEOF\nrm -rf /"), env)
    assert counter(session_dir) == 6


@pytest.mark.parametrize(
    "command",
    ["session find", "session phase sessions/X '3: Build'", "session dehydrate sessions/X <<'EOF'\nx\nEOF"],
)
def test_other_session_commands_pass_uncounted(
    project: Path, env: dict[str, str], session_dir: Path, command: str
) -> None:
    set_fields(session_dir, toolCallsByTranscript={MAIN: 5})
    assert call("pre-tool-use", bash(project, command), env).allowed
    assert counter(session_dir) == 5


@pytest.mark.parametrize(
    "command",
    ["~/.claude/scripts/log.sh x", "~/.claude/scripts/session.sh find", "engine setup", "sessions find"],
)
def test_lookalikes_are_counted(project: Path, env: dict[str, str], session_dir: Path, command: str) -> None:
    set_fields(session_dir, toolCallsByTranscript={MAIN: 3})
    call("pre-tool-use", bash(project, command), env)
    assert counter(session_dir) == 4


def test_uncounted_reads_and_subagents(project: Path, env: dict[str, str], session_dir: Path) -> None:
    home = Path(env["HOME"])
    for payload in (
        tool(project, "Read", file_path=str(home / ".claude" / "COMMANDS.md")),
        tool(project, "Read", file_path=TEMPLATE),
        tool(
            project,
            "Read",
            file_path=str(home / ".claude/skills/implement/assets/TEMPLATE_IMPLEMENTATION_LOG.md"),
        ),
        tool(project, "Task", prompt="explore", subagent_type="Explore"),
        tool(project, "Agent", prompt="explore"),
    ):
        assert call("pre-tool-use", payload, env).allowed
    assert counter(session_dir) is None
    call("pre-tool-use", tool(project, "Read", file_path=str(project / "src.py")), env)
    assert counter(session_dir) == 1
    call("pre-tool-use", tool(project, "Read", file_path=str(home / ".claude" / "history.jsonl")), env)
    assert counter(session_dir) == 2, "conversation data is no standard"


def test_repeated_edits_of_one_file_are_counted(
    project: Path, env: dict[str, str], session_dir: Path
) -> None:
    """Every counted tool counts, as docs/GATES.md says: editing one file over and over is work to log."""
    edit = lambda path: tool(project, "Edit", file_path=path, old_string="a", new_string="b")  # noqa: E731
    for n in range(1, 4):
        call("pre-tool-use", edit("/src/a.py"), env)
        assert counter(session_dir) == n
    assert not any(key.startswith("lastEditFile_") for key in state(session_dir))


def test_counters_are_per_transcript(project: Path, env: dict[str, str], session_dir: Path) -> None:
    for _ in range(3):
        call("pre-tool-use", grep(project), env)
    sub = "/home/x/.claude/projects/p/agent-abc123.jsonl"
    call("pre-tool-use", grep(project, transcript=sub), env)
    assert state(session_dir)[F.TOOL_CALLS_BY_TRANSCRIPT] == {MAIN: 3, "agent-abc123.jsonl": 1}
    nameless = grep(project)
    nameless["transcript_path"] = None
    call("pre-tool-use", nameless, env)
    assert counter(session_dir, "unknown") == 1


@pytest.mark.parametrize(
    "fields",
    [
        {"lifecycle": Lifecycle.DEHYDRATING, "overflowed": True},
        {"logTemplate": None},
        {"logTemplate": ""},
        {"logTemplate": 5},
    ],
)
def test_passthrough_without_counting(
    project: Path, env: dict[str, str], session_dir: Path, fields: dict
) -> None:
    set_fields(session_dir, toolCallsByTranscript={MAIN: 9}, **fields)
    for _ in range(3):
        answer = call("pre-tool-use", grep(project), env)
        assert answer.allowed
    assert counter(session_dir) == 9


def test_no_session_passes(project: Path, env: dict[str, str]) -> None:
    for _ in range(12):
        assert call("pre-tool-use", grep(project), env).allowed


def test_dehydrating_without_an_overflow_is_counted(
    project: Path, env: dict[str, str], session_dir: Path
) -> None:
    """Only an overflowed conversation's dehydrating passes uncounted (the overflow gate's budget bounds it)."""
    set_fields(session_dir, toolCallsByTranscript={MAIN: 9}, lifecycle=Lifecycle.DEHYDRATING)
    assert call("pre-tool-use", grep(project), env).denied
    set_fields(session_dir, overflowed=True, overflowConversation="another-conversation")
    assert call("pre-tool-use", grep(project), env).denied, (
        "another conversation's overflow lifts nothing here"
    )


def test_phase_resets_counters_and_loading_gates_counting(
    project: Path, env: dict[str, str], run_session
) -> None:
    """Through the real CLI: activate (loading) → uncounted; phase → counting starts from {}."""
    assert (
        run_session(
            "activate", "sessions/2026_11_22_CLI", "implement", input=f'{{"logTemplate": "{TEMPLATE}"}}'
        ).returncode
        == 0
    )
    session_dir = project / "sessions" / "2026_11_22_CLI"
    for _ in range(4):
        answer = call("pre-tool-use", grep(project), env)
        assert answer.allowed and not answer.context  # unwarned, though counted
    assert counter(session_dir) == 4
    assert run_session("phase", "sessions/2026_11_22_CLI", "2: Work").returncode == 0
    call("pre-tool-use", grep(project), env)
    assert state(session_dir)[F.TOOL_CALLS_BY_TRANSCRIPT] == {MAIN: 1}


def test_denied_by_an_earlier_rule_is_not_counted(project: Path, session_dir: Path) -> None:
    set_fields(session_dir, contextUsage=0.9)
    call("pre-tool-use", grep(project), hook_env(project))
    assert counter(session_dir) is None
    set_fields(session_dir, contextUsage=0.1, lifecycle=Lifecycle.COMPLETED)
    call("pre-tool-use", grep(project), hook_env(project, SESSION_REQUIRED="1"))
    assert counter(session_dir) is None


def test_log_file_name_is_the_one_session_log_writes() -> None:
    cases = [
        ({"logTemplate": "/x/TEMPLATE_IMPLEMENTATION_LOG.md"}, "IMPLEMENTATION_LOG.md"),
        ({"logTemplate": "/x/MY_LOG.md"}, "MY_LOG.md"),
        ({"skill": "fix-it"}, "FIX_IT_LOG.md"),
        ({"skill": 3}, "SESSION_LOG.md"),
        ({}, "SESSION_LOG.md"),
        ({"logTemplate": "  ", "skill": "test"}, "TEST_LOG.md"),
    ]
    for fields, name in cases:
        assert log_file_name(fields) == name, fields


def test_extra_commands_open_the_gate_but_are_counted(project: Path, session_dir: Path) -> None:
    env = hook_env(project, CLAUDE_HOOK_EXTRA_COMMANDS="log.sh")
    assert call("pre-tool-use", bash(project, "log.sh sessions/2026_11_22_TOPIC"), env).allowed
    assert counter(session_dir) == 1


def test_loading_is_bounded_so_skipping_the_first_phase_does_not_escape(
    project: Path, env: dict[str, str], session_dir: Path, run_session
) -> None:
    """An agent that never runs `session phase` stays in bootstrap; bootstrap ends at a ceiling."""
    set_fields(session_dir, loading=True)
    answers = [call("pre-tool-use", grep(project), env) for _ in range(LOADING_BLOCK_AFTER)]
    assert all(a.allowed and not a.context for a in answers[:-1])
    assert answers[-1].denied and "while loading the skill" in answers[-1].reason
    assert "session phase sessions/2026_11_22_TOPIC" in answers[-1].reason
    assert call(
        "pre-tool-use", bash(project, "session phase sessions/2026_11_22_TOPIC '2: Work'"), env
    ).allowed


def test_releasing_and_retaking_a_session_does_not_reopen_bootstrap(
    project: Path, env: dict[str, str], run_session
) -> None:
    """Same conversation: activate A, phase, switch to B, take A back -> still counted."""
    conv = {"CLAUDE_CODE_SESSION_ID": "conv-1"}
    a, b = "sessions/2026_11_22_A", "sessions/2026_11_22_B"
    assert (
        run_session("activate", a, "implement", input=f'{{"logTemplate": "{TEMPLATE}"}}', env=conv).returncode
        == 0
    )
    assert run_session("phase", a, "2: Work", env=conv).returncode == 0
    assert run_session("activate", b, "implement", env=conv).returncode == 0
    assert run_session("activate", a, "implement", env=conv).returncode == 0
    assert state(project / a).get(F.LOADING) is not True
    hook = dict(env, CLAUDE_CODE_SESSION_ID="conv-1")
    answers = [call("pre-tool-use", grep(project), hook) for _ in range(10)]
    assert answers[-1].denied and "10 tool calls without logging" in answers[-1].reason
    # a new conversation taking the session over does get its bootstrap
    assert run_session("deactivate", a, input="done", env=conv).returncode == 0
    assert (
        run_session(
            "activate",
            a,
            "implement",
            "--user-approved",
            "Reason: again",
            env={"CLAUDE_CODE_SESSION_ID": "conv-2"},
        ).returncode
        == 0
    )
    assert state(project / a).get(F.LOADING) is True


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_bootstrap_another_conversation_left_is_not_taken_over(
    project: Path, env: dict[str, str], run_session
) -> None:
    """A conversation past its bootstrap that takes over a session still loading for another
    (dead) conversation gets no second passthrough, and its first phase there lowers nothing."""
    conv = {"CLAUDE_CODE_SESSION_ID": "conv-1"}
    left = activate(project, "2026_11_22_LEFT", logTemplate=TEMPLATE)
    set_fields(
        left, loading=True, bootstrapConversation="conv-0", sessionId="conv-0", pid=_dead_pid(), pidStart=None
    )
    hook = _block_in(project, env, run_session, "sessions/2026_11_22_MINE")  # its 10th call is denied
    assert run_session("activate", "sessions/2026_11_22_LEFT", "implement", env=conv).returncode == 0
    assert state(left).get(F.LOADING) is not True
    assert call("pre-tool-use", grep(project), hook).denied
    assert run_session("phase", "sessions/2026_11_22_LEFT", "2: Work", env=conv).returncode == 0
    assert call("pre-tool-use", grep(project), hook).denied, "the first phase there starts nothing afresh"


def test_the_log_template_is_declared_at_activation_and_is_its_one_free_read(
    project: Path, env: dict[str, str], run_session
) -> None:
    """`session update` cannot move the template; the declared template file, and only it, is read
    uncounted — and only a template file (TEMPLATE_*.md): any document declared as one is read counted."""
    name = "sessions/2026_11_22_TPL"
    notes = project / "docs" / "TEMPLATE_DESIGN_LOG.md"
    notes.parent.mkdir()
    notes.write_text("design\n")
    (project / "docs" / "other.md").write_text("other\n")
    stdin = '{"logTemplate": "docs/TEMPLATE_DESIGN_LOG.md"}'
    assert run_session("activate", name, "implement", input=stdin).returncode == 0
    assert run_session("phase", name, "2: Work").returncode == 0
    moved = run_session("update", name, "logTemplate", "docs/other.md")
    assert moved.returncode != 0 and "logTemplate" in moved.stderr
    assert state(project / name)[F.LOG_TEMPLATE] == "docs/TEMPLATE_DESIGN_LOG.md"
    assert call("pre-tool-use", tool(project, "Read", file_path=str(notes)), env).allowed
    assert counter(project / name) is None
    assert call(
        "pre-tool-use", tool(project, "Read", file_path=str(project / "docs" / "other.md")), env
    ).allowed
    assert counter(project / name) == 1
    set_fields(project / name, logTemplate="docs/other.md")  # a document, not a template
    assert call(
        "pre-tool-use", tool(project, "Read", file_path=str(project / "docs" / "other.md")), env
    ).allowed
    assert counter(project / name) == 2


def _blocked(project: Path, env: dict[str, str], template: str) -> str:
    """Block the heartbeat of a session whose template is *template*; the deny's reason."""
    session_dir = activate(project, logTemplate=template)
    set_fields(session_dir, loading=None)
    answers = [call("pre-tool-use", grep(project), env) for _ in range(10)]
    assert answers[-1].denied
    return answers[-1].reason


def test_a_blocked_agent_may_read_the_template_it_is_told_to_read(
    project: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """The deny says to Read the template: a template outside ~/.claude is let through, by the path shown."""
    template = tmp_path / "skills" / "TEMPLATE_REVIEW_LOG.md"
    template.parent.mkdir()
    template.write_text("# Review log\n")
    reason = _blocked(project, env, str(template))
    assert f"You MUST Read the log template first (reading it is allowed): {template}\n" in reason
    assert call("pre-tool-use", tool(project, "Read", file_path=str(template)), env).allowed
    assert call("pre-tool-use", tool(project, "Read", file_path=str(template.with_name("x.md"))), env).denied


@pytest.mark.parametrize(
    "target",
    [
        ".claude/.credentials.json",
        ".claude/settings.json",
        ".claude/history.jsonl",
        ".claude/projects/p/TEMPLATE_NOTES.md",
        "docs/design.md",
        ".claude/plugins/x/.git/TEMPLATE_X_LOG.md",
        ".ssh/id_ed25519",
        "missing/TEMPLATE_X_LOG.md",
    ],
)
def test_a_template_pointing_at_secrets_is_never_a_free_read(
    project: Path, env: dict[str, str], target: str
) -> None:
    """The agent names its template: a link from it to credentials, settings or conversation data (or to
    nothing) is read counted, and the deny does not tell the agent to read it."""
    home = Path(env["HOME"])
    secret = home / target
    if not target.startswith("missing/"):
        secret.parent.mkdir(parents=True, exist_ok=True)
        secret.write_text("s3cret")
    link = project / "TEMPLATE_REVIEW_LOG.md"
    link.symlink_to(secret)
    reason = _blocked(project, env, str(link))
    assert "Read the log template" not in reason and "cannot be read" in reason
    assert "session log sessions/2026_11_22_TOPIC <<'EOF'\n" in reason
    for path in (link, secret):
        assert call("pre-tool-use", tool(project, "Read", file_path=str(path)), env).denied, path


def _block_in(project: Path, env: dict[str, str], run_session, name: str) -> dict[str, str]:
    """Activate *name* (with TEMPLATE) as conversation conv-1, enter a phase and run it into the
    heartbeat's block, all through the real `session` and `claude-hook`; the hooks' env."""
    conv = {"CLAUDE_CODE_SESSION_ID": "conv-1"}
    assert (
        run_session(
            "activate", name, "implement", input=f'{{"logTemplate": "{TEMPLATE}"}}', env=conv
        ).returncode
        == 0
    )
    assert run_session("phase", name, "2: Work", env=conv).returncode == 0
    hook = dict(env, CLAUDE_CODE_SESSION_ID="conv-1")
    answers = [
        hooks_run("pre-tool-use", dict(grep(project), session_id="conv-1"), hook, cwd=project)
        for _ in range(10)
    ]
    assert "10 tool calls without logging" in answers[-1].stdout
    return hook


def _denied(project: Path, hook: dict[str, str]) -> str:
    out = hooks_run("pre-tool-use", dict(grep(project), session_id="conv-1"), hook, cwd=project).stdout
    return out if '"permissionDecision": "deny"' in out else ""


@pytest.mark.parametrize(
    "how", ["declares its own template", "declares none", "declares none, other skill", "after deactivating"]
)
def test_the_obligation_to_log_carries_to_the_next_session(
    project: Path, env: dict[str, str], run_session, how: str
) -> None:
    """Blocked in A, the conversation activates B: B keeps a template it declares, else takes A's, and
    the count comes along; tool calls stay denied until a log entry (in B) lands."""
    conv = {"CLAUDE_CODE_SESSION_ID": "conv-1"}
    a, b = "sessions/2026_11_22_A", "sessions/2026_11_22_B"
    hook = _block_in(project, env, run_session, a)
    own = "~/.claude/skills/review/assets/TEMPLATE_REVIEW_LOG.md"
    skill = "analyze" if "other skill" in how else "implement"
    if how == "after deactivating":
        assert run_session("deactivate", a, input="stopped here", env=conv).returncode == 0
    stdin = f'{{"logTemplate": "{own}"}}' if how == "declares its own template" else ""
    activated = run_session("activate", b, skill, input=stdin, env=conv)
    assert activated.returncode == 0, activated.stderr
    expected = own if how == "declares its own template" else TEMPLATE
    assert state(project / b)[F.LOG_TEMPLATE] == expected
    assert state(project / b)[F.TOOL_CALLS_BY_TRANSCRIPT] == {MAIN: 10}
    reason = _denied(project, hook)
    assert "11 tool calls without logging" in reason and f"session log {b} <<'EOF'" in reason
    assert run_session("log", b, input="## Done\nA, then B\n", env=conv).returncode == 0
    assert not _denied(project, hook)


def test_a_conversation_that_never_had_to_log_brings_no_template(
    project: Path, env: dict[str, str], run_session
) -> None:
    """Without a template in the session it leaves, the next session has none either."""
    conv = {"CLAUDE_CODE_SESSION_ID": "conv-1"}
    assert run_session("activate", "sessions/2026_11_22_A", "analyze", env=conv).returncode == 0
    assert run_session("activate", "sessions/2026_11_22_B", "analyze", env=conv).returncode == 0
    assert F.LOG_TEMPLATE not in state(project / "sessions/2026_11_22_B")
