"""End to end: a fleet pane with ``worktree: true`` and the real Claude Code CLI in a real tmux fleet.

Its claude-run passes ``--worktree A``; the CLI makes ``.claude/worktrees/A`` on ``worktree-A`` and
runs the agent's tool calls there, while the agent's session lives in the project's one sessions root;
after ``fleet stop`` + ``fleet start`` the conversation is resumed, in the same worktree.
"""

from __future__ import annotations

import subprocess
import typing as t

import pytest
from support.waiting import wait_until

from .cli import git, make_git_repo, transcript_path
from .mock_api import MockAPI, Turn
from .test_fleet import BIN, Fleet, claude_argv, stop
from .test_headless import install_hooks, state
from .test_worktrees_cli import last_tool_output

pytestmark = pytest.mark.slow

SESSION = "sessions/2026_11_22_TREE"


@pytest.fixture
def tree_fleet(world: t.Any, env_for: t.Any) -> t.Iterator[Fleet]:
    make_git_repo(world.project)
    env = env_for()
    running = Fleet(world, env, install_hooks(world, env))
    command = running.layout.read_text().split("- A: ", 1)[1].strip()
    running.layout.write_text(
        f"name: e2efleet\nroot: {world.project}\nsocket_name: {running.socket}\n"
        f"windows:\n  - agents:\n      worktree: true\n      panes:\n        - A: {command}\n"
    )
    yield running
    running.close()


def test_the_agents_tools_run_in_its_worktree_and_a_stop_and_start_resume_it_there(
    tree_fleet: Fleet, mock_api: MockAPI, world: t.Any
) -> None:
    fleet = tree_fleet
    tree = world.project / ".claude" / "worktrees" / "A"
    mock_api.script(
        Turn.bash(f"session activate {SESSION} implement"),
        Turn.bash("pwd; git branch --show-current"),
        Turn.say("noted"),
    )
    started = fleet.fleet("start", "--no-attach")
    assert started.returncode == 0, started.stdout + started.stderr
    fleet.ready()
    fleet.type("remember the word PINEAPPLE")
    wait_until(lambda: mock_api.pending() == 0, timeout=60, what="the scripted turns")
    assert last_tool_output(mock_api).splitlines()[:2] == [str(tree), "worktree-A"], last_tool_output(
        mock_api
    )
    argv = claude_argv(fleet)
    assert argv[argv.index("--worktree") + 1] == "A", argv
    first = wait_until(lambda: state(world, SESSION).get("sessionId"), what="a bound sessionId")
    assert not (tree / "sessions").exists(), "the session is in the project's sessions root"
    assert "branch refs/heads/worktree-A\nlocked" in git(world.project, "worktree", "list", "--porcelain")

    stop(fleet, fleet.supervisor_pid())
    assert tree.is_dir(), "fleet stop leaves the worktree"
    before = len(mock_api.requests)
    mock_api.script(Turn.bash("pwd"), Turn.say("answered"))
    again = fleet.fleet("start", "--no-attach")
    assert again.returncode == 0, again.stdout + again.stderr
    argv = claude_argv(fleet)
    assert argv[argv.index("--resume") + 1] == first and argv[argv.index("--worktree") + 1] == "A", argv
    fleet.ready()
    fleet.type("what was the word, and where are you?")
    wait_until(lambda: mock_api.pending() == 0, timeout=60, what="the reply after the restart")
    request = next(r for r in mock_api.requests[before:] if r["body"].get("tools"))
    assert request["headers"].get("X-Claude-Code-Session-Id") == first, "the same conversation"
    assert "remember the word PINEAPPLE" in MockAPI.all_text(request["body"])
    assert last_tool_output(mock_api).splitlines()[0] == str(tree), "in the same worktree"
    assert git(world.project, "worktree", "list").count("worktree-A") == 1
    status = subprocess.run(
        [str(BIN / "fleet"), "status", str(fleet.layout), "--json"],
        env=fleet.env, cwd=fleet.project, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert '"worktree": "A"' in status.stdout and '"branch": "worktree-A"' in status.stdout, status.stdout


def test_after_exit_removed_the_unchanged_worktree_a_start_resumes_the_conversation_in_a_new_one(
    tree_fleet: Fleet, mock_api: MockAPI, world: t.Any
) -> None:
    """``/exit`` in an unchanged worktree: the CLI removes it (and its branch) and moves the conversation
    back to the checkout's project. The next start finds the conversation there and resumes it; the CLI
    makes the worktree again."""
    fleet = tree_fleet
    tree = world.project / ".claude" / "worktrees" / "A"
    mock_api.script(Turn.bash(f"session activate {SESSION} implement"), Turn.say("noted"))
    assert fleet.fleet("start", "--no-attach").returncode == 0
    fleet.ready()
    fleet.type("remember the word PINEAPPLE")
    wait_until(lambda: mock_api.pending() == 0, timeout=60, what="the scripted turns")
    first = wait_until(lambda: state(world, SESSION).get("sessionId"), what="a bound sessionId")
    fleet.ready()
    fleet.type("/exit")
    wait_until(lambda: "Goodbye." in fleet.screen(), timeout=30, what=f"claude-run's end:\n{fleet.screen()}")
    assert "Worktree removed (no changes)" in fleet.screen()
    assert not tree.exists() and "worktree-A" not in git(world.project, "branch")
    assert transcript_path(world.home, world.project, first).is_file(), "moved back to the checkout's project"

    before = len(mock_api.requests)
    mock_api.script(Turn.bash("pwd"), Turn.say("answered"))
    again = fleet.fleet("start", "--no-attach")
    assert again.returncode == 0, again.stdout + again.stderr
    argv = claude_argv(fleet)
    assert argv[argv.index("--resume") + 1] == first and argv[argv.index("--worktree") + 1] == "A", argv
    fleet.ready()
    fleet.type("what was the word, and where are you?")
    wait_until(lambda: mock_api.pending() == 0, timeout=60, what="the reply")
    request = next(r for r in mock_api.requests[before:] if r["body"].get("tools"))
    assert request["headers"].get("X-Claude-Code-Session-Id") == first, "the same conversation"
    assert "remember the word PINEAPPLE" in MockAPI.all_text(request["body"])
    assert last_tool_output(mock_api).splitlines()[0] == str(tree), "in the worktree, made again"
