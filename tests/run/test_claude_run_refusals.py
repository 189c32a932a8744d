"""Claude refusing to start for a reason no retry fixes ends claude-run with that reason, never a crash loop.

The stand-in Claude prints what Claude Code 2.1.332 prints to its standard error for each refusal (read
from its binary; tests/e2e/test_limits_332.py has the real one refuse) and exits 1. claude-run runs in a
pseudo-terminal, as in a pane, so Claude's standard error is a terminal of claude-run's own.
"""

from __future__ import annotations

import pytest
from support.claude_run import FakeClaude

SIDELOAD = (
    "--plugin-dir is disabled by your organization's managed settings (disableSideloadFlags). Plugins, custom "
    "agents, and MCP servers can only be loaded from sources your administrator has approved. Ask your "
    "administrator to remove disableSideloadFlags from managed settings, or use an approved marketplace / "
    "settings file instead."
)
RESUME_REFUSED = (
    'Error: cannot resume into worktree "/p/.claude/worktrees/x": the worktree\'s branch moved. This session '
    "was not started. The worktree binding is kept for this run, so the same command will be refused again "
    "until that is resolved; to continue without the worktree, re-run with --fork-session or start a new "
    "conversation."
)
UNVERIFIED = (
    'Error: could not verify worktree "/p/.claude/worktrees/x" for this resume, so the resume was aborted '
    "rather than continuing without isolation. This is usually transient \u2014 the worktree binding is kept; "
    "re-run the command to retry."
)


def refuses(text: str) -> list[dict]:
    return [{"print": f"\x1b[31m{text}\x1b[39m\n", "stream": "stderr"}, {"exit": 1}]


@pytest.mark.parametrize(
    ("said", "reason"),
    [(SIDELOAD, "sideload_flags_disabled"), (RESUME_REFUSED, "worktree_resume_refused")],
    ids=["sideload", "worktree-resume"],
)
def test_a_start_up_refusal_ends_claude_run_with_its_reason_and_status_78(
    fake: FakeClaude, start_run, said: str, reason: str
) -> None:
    fake.plan(refuses(said), default=refuses(said))
    run = start_run(env={"CLAUDE_RUN_CRASH_LIMIT": "5"})
    assert run.wait(timeout=30) == 78, run.text
    assert len(fake.starts()) == 1, "relaunched into the same refusal"
    errors = [line for line in run.text.splitlines() if "claude-run: error:" in line]
    assert len(errors) == 1 and f"Claude refused to start ({reason}: " in errors[0], run.text
    assert "(crash " not in run.text and "giving up" not in run.text
    assert said[:40] in run.text, "Claude's own line reached the terminal"


def test_a_worktree_claude_could_not_verify_is_tried_once_more_then_ends(fake: FakeClaude, start_run) -> None:
    fake.plan(refuses(UNVERIFIED), default=refuses(UNVERIFIED))
    run = start_run(env={"CLAUDE_RUN_CRASH_LIMIT": "5"})
    assert run.wait(timeout=30) == 78, run.text
    assert len(fake.starts()) == 2
    assert "Claude refused to start (worktree_unverified: Error: could not verify worktree" in run.text


def test_claude_still_gets_a_terminal_for_its_standard_error_and_a_crash_stays_a_crash(
    fake: FakeClaude, start_run
) -> None:
    """Claude Code behaves differently when its standard error is no terminal: it stays one."""
    isatty = ["python3", "-c", "import os, sys; fd = os.open(f'/proc/{os.getppid()}/fd/2', os.O_WRONLY | "
              "os.O_NOCTTY); sys.exit(0 if os.isatty(fd) else 3)"]  # fmt: skip
    fake.plan([{"run": isatty}, {"print": "Error: something else\n", "stream": "stderr"},
               {"exit": 1}], [{"exit": 0}])  # fmt: skip
    run = start_run()
    assert run.wait(timeout=30) == 0, run.text
    assert fake.events("run")[0]["rc"] == 0, "Claude's standard error is not a terminal"
    assert "(crash 1 of" in run.text and "Error: something else" in run.text
