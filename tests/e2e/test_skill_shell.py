"""End to end with Claude Code 2.1.332: a skill's inline shell command is gated like Bash.

A skill whose text holds ``!`touch FILE``` runs that command as it loads, and no PreToolUse hook
sees it; 2.1.332 asks PreSkillShellCommand first. Before a session is activated (the session gate)
the command must not run, whether the model loads the skill with its Skill tool (which the session
gate lets through) or the person types ``/NAME``. The control runs the same settings without our
PreSkillShellCommand entry: PreToolUse alone lets the command run.
"""

from __future__ import annotations

import json
import typing as t
from pathlib import Path

import pytest

from .mock_api import MockAPI, Turn
from .test_headless import claude_run_print, install_hooks

pytestmark = pytest.mark.claude_version("2.1.332")

SKILL = "leave-a-mark"
SKILL_SHELL = "PreSkillShellCommand"


def write_skill(home: Path, marker: Path) -> None:
    skill = home / ".claude" / "skills" / SKILL / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(
        f"---\nname: {SKILL}\ndescription: leaves a marker file\n---\nMarker: !`touch {marker} && echo MADE`\n"
    )


def run_skill(world: t.Any, env: dict[str, str], api: MockAPI, settings: Path, invoked_by: str) -> str:
    """Load the skill in a fresh `claude -p` under claude-run, no session active; the text of every
    request the CLI sent the model."""
    if invoked_by == "claude":
        api.script(Turn.call("Skill", {"skill": SKILL}), Turn.say("done"))
        prompt = "use the skill"
    else:
        api.script(Turn.say("done"))
        prompt = f"/{SKILL}"
    done = claude_run_print(world, env, settings, prompt)
    assert done.returncode == 0, done.stderr
    assert api.pending() == 0, "every scripted turn was asked for"
    return "\n".join(MockAPI.all_text(body) for body in api.main_requests())


@pytest.mark.parametrize("invoked_by", ["claude", "user"])
def test_a_skills_inline_command_does_not_run_before_activation(
    world: t.Any, mock_api: MockAPI, env_for: t.Callable[..., dict[str, str]], invoked_by: str
) -> None:
    env = env_for()
    settings = install_hooks(world, env)
    installed = json.loads(settings.read_text())
    assert SKILL_SHELL in installed["hooks"], "claude-hook install saw Claude Code 2.1.332"
    marker = world.project / "made.txt"
    write_skill(world.home, marker)

    sent = run_skill(world, env, mock_api, settings, invoked_by)
    assert not marker.exists(), "our PreSkillShellCommand hook refused the command"
    assert "[not run: blocked by hook: §CMD_REQUIRE_ACTIVE_SESSION: No active session." in sent
    assert "MADE" not in sent

    del installed["hooks"][SKILL_SHELL]  # the control: every other hook of ours, the gate included
    without = world.home / "without-skill-shell.json"
    without.write_text(json.dumps(installed))
    mock_api.requests.clear()
    sent = run_skill(world, env, mock_api, without, invoked_by)
    assert marker.exists(), "without the hook the skill's command runs: PreToolUse never sees it"
    assert "MADE" in sent
