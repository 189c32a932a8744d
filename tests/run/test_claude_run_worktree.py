"""claude-run with a worktree: ``--worktree NAME`` on every launch, transcripts looked for where Claude
keeps them, one sessions root for the project (the stand-in Claude makes worktrees as Claude Code does)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import typing as t
from pathlib import Path

import pytest
from support.claude_run import FakeClaude, FleetTmux, make_transcript, write_state

from claude_shepherd.supervisor import gitrepo
from claude_shepherd.supervisor.session.paths import sessions_root

SESSION_ID = "5e2a9c4e-1111-2222-3333-444455556666"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


@pytest.fixture
def repo(workdir: Path) -> Path:
    git(workdir, "init", "-q", "-b", "main")
    git(workdir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "init")
    return workdir


def worktree_arg(argv: list[str]) -> str | None:
    return argv[argv.index("--worktree") + 1] if "--worktree" in argv else None


def test_every_launch_runs_in_the_named_worktree_and_hooks_keep_the_projects_sessions(
    fake: FakeClaude, start_run, repo: Path
) -> None:
    fake.plan([{"exit": 3}], [{"exit": 0}])
    run = start_run("--model", "opus", env={"CLAUDE_RUN_WORKTREE": "agentA"})
    assert run.wait() == 0, run.text
    tree = repo / ".claude" / "worktrees" / "agentA"
    first, again = fake.wait_starts(2)
    for start in (first, again):
        assert worktree_arg(start["argv"]) == "agentA", start["argv"]
        assert start["cwd"] == str(tree)
        assert start["env"]["CLAUDE_SESSIONS_DIR"] == str(repo / "sessions"), "one sessions root per project"
        assert "CLAUDE_RUN_WORKTREE" not in start["env"]
    assert "branch refs/heads/worktree-agentA\nlocked" in git(repo, "worktree", "list", "--porcelain")
    assert f"Worktree: {tree} (branch worktree-agentA)" in run.text
    assert tree.is_dir(), "claude-run never removes a worktree"


def test_a_fleet_pane_resumes_the_conversation_its_claude_kept_under_the_worktree(
    fake: FakeClaude, start_run, fleet_tmux: FleetTmux, repo: Path, run_env: dict[str, str]
) -> None:
    tree = repo / ".claude" / "worktrees" / "alpha"
    write_state(
        repo / "sessions" / "2026_11_22_PANE",
        {"pid": 4_194_304, "pidStart": "old:1", "skill": "implement", "lifecycle": "active",
         "overflowed": False, "killRequested": False, "fleetPaneId": fleet_tmux.pane_id,
         "sessionId": SESSION_ID},
    )  # fmt: skip
    make_transcript(Path(run_env["CLAUDE_CONFIG_DIR"]), tree, SESSION_ID)
    fake.plan([{"exit": 0}])
    run = start_run(env={"CLAUDE_RUN_WORKTREE": "alpha"}, pane=fleet_tmux)
    assert run.wait() == 0, run.text
    (start,) = fake.wait_starts(1)
    argv = start["argv"]
    assert argv[argv.index("--resume") + 1] == SESSION_ID, (argv, run.text)
    assert worktree_arg(argv) == "alpha" and start["cwd"] == str(tree)


def test_the_users_own_w_is_kept_and_outside_a_repository_it_is_one_line(
    fake: FakeClaude, start_run, repo: Path, tmp_path: Path
) -> None:
    fake.plan([{"exit": 0}])
    run = start_run("-w", "mine", "do it")
    assert run.wait() == 0, run.text
    (start,) = fake.wait_starts(1)
    assert start["argv"][-2:] == ["-w", "mine"] and "do it" in start["argv"], "NAME is -w's, not a prompt"
    assert start["cwd"] == str(repo / ".claude" / "worktrees" / "mine")
    plain = tmp_path / "plain"
    plain.mkdir()
    run = start_run(env={"CLAUDE_RUN_WORKTREE": "x"}, cwd=plain)
    assert run.wait() == 1
    assert "worktree x: " in run.text and "is not in a git repository" in run.text
    assert len(fake.starts()) == 1, "no Claude is started outside a repository"


@pytest.mark.parametrize("inside", ["", "sub/dir"])
def test_session_commands_in_a_worktree_find_the_projects_sessions(repo: Path, inside: str) -> None:
    tree = repo / ".claude" / "worktrees" / "agentA"
    git(repo, "worktree", "add", "-q", "-b", "worktree-agentA", str(tree))
    (tree / inside).mkdir(parents=True, exist_ok=True)
    write_state(repo / "sessions" / "2026_11_22_MINE", {"skill": "implement", "lifecycle": "active"})
    env: dict[str, t.Any] = {}
    assert sessions_root(cwd=tree / inside, env=env) == repo / "sessions"
    done = subprocess.run(
        ["session", "list"], cwd=tree / inside, capture_output=True, text=True,
        env={"PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin", "HOME": str(repo)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"Sessions in {repo / 'sessions'}:" in done.stdout and "2026_11_22_MINE" in done.stdout


def test_a_conversation_moved_back_to_the_checkout_is_resumed_too(
    fake: FakeClaude, start_run, fleet_tmux: FleetTmux, repo: Path, run_env: dict[str, str]
) -> None:
    """Claude moves a worktree's conversations to the checkout's project when it removes the worktree at
    an exit (tests/e2e/test_fleet_worktree.py): the next start finds them there."""
    write_state(
        repo / "sessions" / "2026_11_22_PANE",
        {"pid": 4_194_304, "pidStart": "old:1", "skill": "implement", "lifecycle": "active",
         "overflowed": False, "killRequested": False, "fleetPaneId": fleet_tmux.pane_id,
         "sessionId": SESSION_ID},
    )  # fmt: skip
    make_transcript(Path(run_env["CLAUDE_CONFIG_DIR"]), repo, SESSION_ID)
    fake.plan({"resume": "accept", "steps": [{"exit": 0}]})
    run = start_run(env={"CLAUDE_RUN_WORKTREE": "alpha"}, pane=fleet_tmux)
    assert run.wait() == 0, run.text
    (start,) = fake.wait_starts(1)
    assert start["argv"][start["argv"].index("--resume") + 1] == SESSION_ID, run.text
    assert worktree_arg(start["argv"]) == "alpha"


def test_a_launch_waits_for_the_repositorys_worktree_lock_and_a_stop_ends_the_wait(
    fake: FakeClaude, start_run, repo: Path
) -> None:
    fake.plan([{"exit": 0}])
    with gitrepo.repo_lock(gitrepo.common_dir(repo)) as held:
        assert held
        run = start_run(env={"CLAUDE_RUN_WORKTREE": "agentA"})
        run.expect("Starting...")
        time.sleep(0.5)
        assert fake.starts() == [], "no Claude makes a worktree while another creation or removal runs"
        os.kill(run.pid, signal.SIGTERM)
        assert run.wait(timeout=5) == 128 + signal.SIGTERM, run.text
    assert fake.starts() == [] and "Stopped by SIGTERM." in run.text
    assert not (repo / ".claude" / "worktrees" / "agentA").exists()


# --------------------------------------------------------------------------- no commit lost, nothing planted


def _agent_commit(repo: Path, name: str) -> str:
    """A worktree as ``claude -w NAME`` leaves it, with a commit of the agent's, then removed by hand with
    its branch kept (as ``fleet worktree remove`` keeps a branch holding commits of its own)."""
    tree = repo / ".claude" / "worktrees" / name
    git(repo, "worktree", "add", "-q", "-b", f"worktree-{name}", str(tree))
    git(repo, "worktree", "lock", "--reason", "claude agent", str(tree))
    (tree / "work.txt").write_text("the agent's work\n")
    git(tree, "add", "work.txt")
    git(tree, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "the agent's commit")
    sha = git(tree, "rev-parse", "HEAD").strip()
    subprocess.run(["rm", "-rf", str(tree)], check=True)  # the folder deleted; git's entry left stale
    return sha


def test_a_branch_kept_without_its_worktree_is_made_a_worktree_again_so_claude_keeps_its_commits(
    fake: FakeClaude, start_run, repo: Path
) -> None:
    sha = _agent_commit(repo, "agentA")
    fake.plan([{"exit": 0}])
    run = start_run(env={"CLAUDE_RUN_WORKTREE": "agentA"})
    assert run.wait() == 0, run.text
    (start,) = fake.wait_starts(1)
    tree = repo / ".claude" / "worktrees" / "agentA"
    assert start["cwd"] == str(tree)
    assert git(repo, "rev-parse", "worktree-agentA").strip() == sha, "Claude's -w reset the branch"
    assert (tree / "work.txt").read_text() == "the agent's work\n"
    assert "Worktree agentA: made again on its branch worktree-agentA" in run.text, run.text


def test_a_folder_in_the_way_of_a_kept_branch_refuses_the_agent_in_one_line(
    fake: FakeClaude, start_run, repo: Path
) -> None:
    sha = _agent_commit(repo, "agentA")
    (repo / ".claude" / "worktrees" / "agentA").mkdir()
    run = start_run(env={"CLAUDE_RUN_WORKTREE": "agentA"})
    assert run.wait() == 1, run.text
    assert "is in the way of its branch worktree-agentA" in run.text, run.text
    assert not fake.starts(), "no Claude was started to reset the branch"
    assert git(repo, "rev-parse", "worktree-agentA").strip() == sha


def plant(repo: Path, name: str, mark: Path) -> Path:
    """What an agent's file tools could write before the gate refused it: a git folder of its own whose
    ``core.fsmonitor`` runs a command, and its worktree's ``.git`` file pointed at it."""
    cache = repo / "notes" / "cache"
    for sub in ("objects", "refs"):
        (cache / sub).mkdir(parents=True, exist_ok=True)
    (cache / "HEAD").write_text("ref: refs/heads/main\n")
    (cache / "config").write_text(
        f'[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = "touch {mark}; false"\n'
    )
    tree = repo / ".claude" / "worktrees" / name
    (tree / ".git").write_text(f"gitdir: {cache}\n")
    return tree


def test_claude_is_never_started_in_a_worktree_whose_git_file_points_elsewhere(
    fake: FakeClaude, start_run, repo: Path, tmp_path: Path
) -> None:
    fake.plan([{"exit": 0}])
    first = start_run(env={"CLAUDE_RUN_WORKTREE": "agentA"})
    assert first.wait() == 0, first.text
    mark = tmp_path / "PLANT-RAN"
    tree = plant(repo, "agentA", mark)
    subprocess.run(["git", "status"], cwd=tree, capture_output=True)
    assert mark.exists(), "control: the plant runs its command at a plain git status"
    mark.unlink()

    run = start_run(env={"CLAUDE_RUN_WORKTREE": "agentA"})
    assert run.wait() == 1, run.text
    line = f"not a worktree of this repository: its .git points to {repo / 'notes' / 'cache'}"
    assert line in run.text and "Claude is not started in it" in run.text, run.text
    assert len(fake.starts()) == 1, "the second claude-run started no Claude"
    assert not mark.exists(), "nothing of ours ran the planted command"


def test_agents_worktrees_stay_out_of_the_projects_git_status(
    fake: FakeClaude, start_run, repo: Path
) -> None:
    fake.plan([{"exit": 0}])
    run = start_run(env={"CLAUDE_RUN_WORKTREE": "agentA"})
    assert run.wait() == 0, run.text
    assert (repo / ".claude" / "worktrees" / "agentA").is_dir()
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(repo, "show", "HEAD", "--stat", "--format=") == "", "nothing was committed"
    assert (repo / ".git" / "info" / "exclude").read_text().count(gitrepo.EXCLUDE_LINE) == 1
    again = start_run(env={"CLAUDE_RUN_WORKTREE": "agentB"})
    assert again.wait() == 0, again.text
    assert (repo / ".git" / "info" / "exclude").read_text().count(gitrepo.EXCLUDE_LINE) == 1


def test_the_restore_drops_only_its_own_stale_entry_and_never_a_detached_heads_commits(
    fake: FakeClaude, start_run, repo: Path
) -> None:
    """``git worktree prune`` would drop every stale entry of the repository, another agent's detached
    commits with them: the restore drops its own alone, and refuses when that one holds such commits."""
    _agent_commit(repo, "agentA")
    other = repo / ".claude" / "worktrees" / "agentB"
    git(repo, "worktree", "add", "-q", "--detach", str(other))
    (other / "b.txt").write_text("b\n")
    git(other, "add", "b.txt")
    git(other, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "B's detached commit")
    b_sha = git(other, "rev-parse", "HEAD").strip()
    subprocess.run(["rm", "-rf", str(other)], check=True)
    fake.plan([{"exit": 0}])
    run = start_run(env={"CLAUDE_RUN_WORKTREE": "agentA"})
    assert run.wait() == 0, run.text
    assert f"HEAD {b_sha}" in git(repo, "worktree", "list", "--porcelain"), "B's stale entry stays"

    git(repo, "branch", "worktree-agentB", "HEAD")  # a kept branch of B's, beside its detached entry
    refused = start_run(env={"CLAUDE_RUN_WORKTREE": "agentB"})
    assert refused.wait() == 1, refused.text
    assert f"detached at {b_sha[:12]}) holds 1 commit on no branch" in refused.text, refused.text
    assert git(repo, "cat-file", "-t", b_sha).strip() == "commit"
