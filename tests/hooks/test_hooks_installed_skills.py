"""A newcomer's first prompt: the gate names only skills that are installed, else a plain default that
works. A fresh HOME gets our hooks and the /session skill from the real ``claude-hook install``."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from support.fixtures import script
from support.hooks import hook_env, run, tool

GATE = "§CMD_REQUIRE_ACTIVE_SESSION"
SKILL_MENTION = re.compile(r"(?<![\w.~/-])/([A-Za-z][\w.-]*)")
"""``/name`` standing alone (a skill), not inside a path like ``~/.claude/skills``."""


@pytest.fixture
def env(project: Path) -> dict[str, str]:
    """A fresh HOME where `claude-hook install --user` put our hooks and the /session skill, nothing else."""
    env = hook_env(project, SESSION_REQUIRED="1")
    Path(env["HOME"]).mkdir()
    done = subprocess.run(
        [script("claude-hook"), "install", "--user"], env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert [p.name for p in (Path(env["HOME"]) / ".claude" / "skills").iterdir()] == ["session"]
    return env


def messages(project: Path, env: dict[str, str]) -> list[str]:
    """What the agent is told before its first session: the prompt's boot sequence and a tool's deny."""
    prompt = run("user-prompt-submit", {"cwd": str(project), "prompt": "hi"}, env, cwd=project).stdout
    denied = run("pre-tool-use", tool(project, "Grep", pattern="x"), env, cwd=project).stdout
    assert GATE in prompt and GATE in denied
    return [prompt, denied]


def test_a_fresh_install_names_no_skill_it_does_not_ship(
    project: Path, env: dict[str, str], run_session
) -> None:
    for text in messages(project, env):
        assert set(SKILL_MENTION.findall(text)) <= {"session"}, text
        assert "use a plain word: work." in text
    # the advice works as given: activating with the default opens the gate
    assert run_session("activate", "sessions/2026_11_25_FIRST", "work").returncode == 0
    assert run("pre-tool-use", tool(project, "Grep", pattern="x"), env, cwd=project).stdout == ""


def test_installed_skills_are_named_and_only_those(project: Path, env: dict[str, str]) -> None:
    home = Path(env["HOME"])
    for folder in (home / ".claude" / "skills" / "review", project / ".claude" / "skills" / "deploy"):
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text("---\nname: x\n---\n")
    (home / ".claude" / "skills" / "notes").mkdir()  # no SKILL.md: no skill
    (home / ".claude" / "skills" / "evil name; rm").mkdir()
    (home / ".claude" / "skills" / "evil name; rm" / "SKILL.md").write_text("x")
    prompt, denied = messages(project, env)
    assert "Which skill should I use (/deploy, /review)" in prompt
    for text in (prompt, denied):
        assert set(SKILL_MENTION.findall(text)) == {"deploy", "review"}, text
        assert "evil" not in text and "notes" not in text
