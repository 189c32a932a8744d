"""End to end: what the real CLI's ``-w NAME`` does, which a worktree per agent builds on.

Pinned here, offline against the mock, in ``claude -p`` (each test counts the
requests the CLI sent and reads the tool results it returned):

* ``-w NAME`` makes ``.claude/worktrees/NAME`` on a new branch ``worktree-NAME``,
  locks it (``git worktree list`` says ``locked``), and runs the agent's tools there;
* the same ``-w NAME`` again finds the same worktree, with what was left in it;
* the conversation is kept under the worktree's own project folder, and
  ``--resume ID`` continues it, history and all, in the worktree, from the main
  checkout, with ``-w NAME`` or without: the CLI goes back to the folder the
  conversation was in.
"""

from __future__ import annotations

import json
import subprocess
import sys
import typing as t
from pathlib import Path

import pytest

from .cli import MODEL, git, make_git_repo, transcript_path
from .mock_api import MockAPI, Turn

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
BOTH = pytest.mark.parametrize(
    "release", ["pinned", pytest.param("2.1.332", marks=pytest.mark.claude_version("2.1.332"))]
)
"""The pinned release and the newest one looked at: each resets a kept branch the same way."""


@pytest.fixture
def repo(world: t.Any) -> Path:
    """The world's project as a real git repository with one commit."""
    return make_git_repo(world.project)


def claude_print(
    claude_bin: Path, cwd: Path, env: dict[str, str], *args: str
) -> subprocess.CompletedProcess[str]:
    argv = [str(claude_bin), "-p", "--dangerously-skip-permissions", "--model", MODEL, *args]
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


def last_tool_output(api: MockAPI) -> str:
    """The text of the last tool result the CLI sent back."""
    for request in reversed(api.requests):
        for message in reversed(request["body"]["messages"]):
            for block in message.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    content = block["content"]
                    return (
                        content if isinstance(content, str) else "".join(c.get("text", "") for c in content)
                    )
    raise AssertionError("no tool result was sent")


def test_w_makes_a_locked_worktree_on_its_own_branch_and_finds_it_again(
    repo: Path, mock_api: MockAPI, env_for, claude_bin: Path
) -> None:
    env = env_for()
    worktree = repo / ".claude" / "worktrees" / "agentA"
    mock_api.script(Turn.bash("pwd; git branch --show-current; echo work > left.txt"), Turn.say("done"))
    first = claude_print(claude_bin, repo, env, "-w", "agentA", "start")
    assert first.returncode == 0, first.stdout + first.stderr
    assert last_tool_output(mock_api).splitlines()[:2] == [str(worktree), "worktree-agentA"]
    listed = git(repo, "worktree", "list", "--porcelain")
    assert f"worktree {worktree}\n" in listed and "branch refs/heads/worktree-agentA\nlocked" in listed, (
        listed
    )

    mock_api.script(Turn.bash("pwd; cat left.txt"), Turn.say("done again"))
    again = claude_print(claude_bin, repo, env, "-w", "agentA", "again")
    assert again.returncode == 0, again.stdout + again.stderr
    assert last_tool_output(mock_api).splitlines()[:2] == [str(worktree), "work"]
    assert git(repo, "worktree", "list").count("worktree-agentA") == 1


def test_a_conversation_in_a_worktree_resumes_in_it_with_or_without_w(
    repo: Path, mock_api: MockAPI, env_for, claude_bin: Path, world: t.Any
) -> None:
    env = env_for()
    worktree = repo / ".claude" / "worktrees" / "agentB"
    mock_api.script(Turn.say("remembered"))
    first = claude_print(claude_bin, repo, env, "-w", "agentB", "--output-format", "json", "remember MANGO")
    assert first.returncode == 0, first.stdout + first.stderr
    session = json.loads(first.stdout)["session_id"]
    assert transcript_path(world.home, worktree, session).is_file(), (
        "kept under the worktree's project folder"
    )
    assert not transcript_path(world.home, repo, session).exists()

    mock_api.script(Turn.bash("pwd"), Turn.say("here"))
    resumed = claude_print(claude_bin, repo, env, "-w", "agentB", "--resume", session, "where are you?")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert last_tool_output(mock_api).splitlines()[0] == str(worktree)
    history = mock_api.requests[-2]["body"]["messages"]
    assert "remember MANGO" in str(history[0]), "the resumed request carries the conversation"

    mock_api.script(Turn.bash("pwd"), Turn.say("there"))
    bare = claude_print(claude_bin, repo, env, "--resume", session, "and now?")
    assert bare.returncode == 0, bare.stdout + bare.stderr
    assert "remember MANGO" in str(mock_api.requests[-2]["body"]["messages"][0])
    assert last_tool_output(mock_api).splitlines()[0] == str(worktree), "without -w too, in the worktree"


def _kept_branch(repo: Path, claude_bin: Path, env: dict[str, str], api: MockAPI, name: str) -> str:
    """An agent's worktree made by the CLI, a commit of the agent's in it, then its folder removed and its
    branch kept (as ``fleet worktree remove`` keeps a branch holding commits of its own)."""
    api.script(Turn.say("made"))
    made = claude_print(claude_bin, repo, env, "-w", name, "start")
    assert made.returncode == 0, made.stdout + made.stderr
    tree = repo / ".claude" / "worktrees" / name
    (tree / "work.txt").write_text("the agent's work\n")
    git(tree, "add", "work.txt")
    git(tree, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "the agent's commit")
    sha = git(tree, "rev-parse", "HEAD").strip()
    git(repo, "worktree", "remove", "--force", "--force", str(tree))
    return sha


@BOTH
def test_w_resets_a_branch_kept_without_its_worktree_to_head(
    repo: Path, mock_api: MockAPI, env_for, claude_bin: Path, release: str
) -> None:
    """Pinned: what claude-run guards against (a plain ``claude -w NAME`` loses the branch's commits)."""
    env = env_for()
    sha = _kept_branch(repo, claude_bin, env, mock_api, "agentK")
    mock_api.script(Turn.say("again"))
    again = claude_print(claude_bin, repo, env, "-w", "agentK", "again")
    assert again.returncode == 0, again.stdout + again.stderr
    assert git(repo, "rev-parse", "worktree-agentK").strip() == git(repo, "rev-parse", "main").strip() != sha


@BOTH
def test_claude_run_makes_the_worktree_again_so_the_cli_keeps_the_branchs_commits(
    repo: Path, mock_api: MockAPI, env_for, claude_bin: Path, release: str
) -> None:
    env = env_for()
    sha = _kept_branch(repo, claude_bin, env, mock_api, "agentR")
    mock_api.script(Turn.bash("pwd; git log -1 --format=%s; cat work.txt"), Turn.say("here"))
    argv = [str(BIN / "claude-run"), "--", "-p", "--dangerously-skip-permissions", "--model", MODEL,
            "-w", "agentR", "go on"]  # fmt: skip
    done = subprocess.run(argv, env=env, cwd=repo, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Worktree agentR: made again on its branch worktree-agentR" in done.stdout + done.stderr
    assert git(repo, "rev-parse", "worktree-agentR").strip() == sha
    tree = repo / ".claude" / "worktrees" / "agentR"
    assert last_tool_output(mock_api).splitlines()[:3] == [
        str(tree),
        "the agent's commit",
        "the agent's work",
    ]
    assert "locked" in git(repo, "worktree", "list", "--porcelain"), "the CLI took it as its own"
    assert git(repo, "status", "--porcelain") == "", "the worktrees stay out of the project's git status"
