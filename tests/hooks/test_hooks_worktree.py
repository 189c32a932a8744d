"""An agent in a worktree (``PROJECT/.claude/worktrees/NAME``, where ``claude -w NAME`` puts it): the hooks
keep the project's one sessions root, read a worktree as a checkout (its code is no standard because it
sits under ``.claude/``), and guard both the worktree's and the project's hook settings.

Through the installed ``claude-hook pre-tool-use``, as Claude Code runs it in the worktree.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.hooks import activate, hook_env, run, tool

GATE = "§CMD_REQUIRE_ACTIVE_SESSION"
PROTECTED = "§CMD_PROTECTED_FILE"


@pytest.fixture
def tree(project: Path) -> Path:
    worktree = project / ".claude" / "worktrees" / "A"
    for name in ("src/app.py", ".claude/agents/helper.md", ".directives/STYLE.md", ".git"):
        (worktree / name).parent.mkdir(parents=True, exist_ok=True)
        (worktree / name).write_text("x\n")
    (project / ".claude" / "agents").mkdir(parents=True, exist_ok=True)
    (project / ".claude" / "agents" / "mine.md").write_text("x\n")
    return worktree


def _in_tree(
    project: Path, tree: Path, name: str, claude_project: Path | None = None, **tool_input: str
) -> str:
    payload = tool(project, name, **tool_input)
    payload["cwd"] = str(tree)
    env = hook_env(project, SESSION_REQUIRED="1", CLAUDE_PROJECT_DIR=str(claude_project or project))
    return run("pre-tool-use", payload, env, cwd=tree).stdout


@pytest.mark.parametrize(
    ("path", "verdict"),
    [
        ("src/app.py", "denied"),
        (".claude/agents/helper.md", "allowed"),
        (".directives/STYLE.md", "allowed"),
        ("{project}/.claude/agents/mine.md", "allowed"),
        ("{project}/.claude/worktrees/A/src/app.py", "denied"),
    ],
)
def test_before_a_session_a_worktrees_code_is_no_standard_though_it_lies_in_dot_claude(
    project: Path, tree: Path, path: str, verdict: str
) -> None:
    out = _in_tree(project, tree, "Read", file_path=path.format(project=project))
    assert ("allowed" if out == "" else "denied") == verdict, out
    assert out == "" or GATE in out


@pytest.mark.parametrize("path", [".claude/settings.json", "{project}/.claude/settings.local.json"])
@pytest.mark.parametrize("claude_project", ["project", "worktree"])
def test_the_worktrees_and_the_projects_hook_settings_are_both_protected(
    project: Path, tree: Path, path: str, claude_project: str
) -> None:
    """Whichever of the two Claude names its project (``$CLAUDE_PROJECT_DIR``)."""
    activate(project)
    named = project if claude_project == "project" else tree
    out = _in_tree(project, tree, "Write", named, file_path=path.format(project=project), content="{}")
    assert out, path
    assert json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"].startswith(PROTECTED)
