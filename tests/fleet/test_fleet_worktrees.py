"""Agents in worktrees of a real git repository, through the real console scripts.

The stand-in Claude makes ``-w NAME``'s worktree as Claude Code does (``git worktree add`` on
``worktree-NAME``, then ``git worktree lock``; tests/e2e/test_worktrees_cli.py pins the real CLI), so
what is checked here is ours: the name each agent gets and keeps, where its sessions and transcripts
are, that nothing of ours removes a worktree with work in it, and that creations take turns.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import threading
import time
import typing as t
import uuid
from pathlib import Path

import pytest
from support.fleet import BIN, FleetWorld, agent, resume_of
from support.waiting import wait_until

from claude_shepherd.supervisor import gitrepo

ID = ["-c", "user.name=t", "-c", "user.email=t@t"]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *ID, *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    (path / "README").write_text("hello\n")
    git(path, "add", "README")
    git(path, "commit", "-q", "-m", "init")
    return path


def fleet(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "fleet"), *args], cwd=cwd, capture_output=True, text=True, timeout=60,
        env=env or {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(cwd), "LANG": "C.UTF-8"},
    )  # fmt: skip


def add_tree(repo: Path, name: str) -> Path:
    """An agent worktree as ``claude -w NAME`` leaves it."""
    tree = repo / ".claude" / "worktrees" / name
    git(repo, "worktree", "add", "-q", "-b", f"worktree-{name}", str(tree), "HEAD")
    git(repo, "worktree", "lock", str(tree))
    return tree


def commit(tree: Path, name: str) -> None:
    (tree / name).write_text("x")
    git(tree, "add", name)
    git(tree, "commit", "-qm", f"add {name}")


def stash(tree: Path) -> None:
    (tree / "README").write_text("stashed\n")
    git(tree, "stash", "-q")


def agent_trees(repo: Path) -> list[str]:
    listed = git(repo, "worktree", "list", "--porcelain")
    return sorted(
        line.split("/")[-1]
        for line in listed.splitlines()
        if line.startswith(f"worktree {repo}/.claude/worktrees/")
    )


# --------------------------------------------------------------------------- the verbs, no fleet needed


@pytest.mark.parametrize(
    ("plant", "said"),
    [
        (lambda tree: (tree / "README").write_text("changed\n"), "1 uncommitted change (README)"),
        (lambda tree: (tree / "notes.md").write_text("mine\n"), "1 untracked file (notes.md)"),
        (
            lambda tree: (tree / "sub").mkdir() or (tree / "sub" / "a.py").write_text(""),
            "untracked file (sub/a.py)",
        ),
        (lambda tree: commit(tree, "f"), "1 commit on no other branch"),
        (lambda tree: stash(tree), "1 stash made in it (stash@{0})"),
    ],
    ids=["changed", "untracked", "untracked-in-folder", "commit", "stash"],
)
def test_remove_refuses_a_worktree_with_work_and_says_what_is_in_it(
    tmp_path: Path, plant: t.Callable[[Path], t.Any], said: str
) -> None:
    repo = make_repo(tmp_path / "repo")
    tree = add_tree(repo, "A")
    plant(tree)
    done = fleet(repo, "worktree", "remove", "A")
    assert done.returncode == 1, done.stdout
    assert said in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert tree.is_dir() and agent_trees(repo) == ["A"]
    listed = fleet(repo, "worktree", "ls")
    assert said in listed.stdout, listed.stdout


def test_a_stash_made_in_another_worktree_is_not_this_ones(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    add_tree(repo, "A")
    stash(add_tree(repo, "B"))
    assert fleet(repo, "worktree", "remove", "A").returncode == 0
    refused = fleet(repo, "worktree", "remove", "B")
    assert refused.returncode == 1 and "1 stash made in it" in refused.stderr


def test_remove_of_a_clean_worktree_removes_it_and_its_branch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    tree = add_tree(repo, "A")
    done = fleet(
        tmp_path / "repo" / ".claude" / "worktrees" / "A", "worktree", "remove", "A"
    )  # from inside too
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"removed worktree A ({tree})"
    assert not tree.exists() and agent_trees(repo) == []
    assert "worktree-A" not in git(repo, "branch")


def test_forced_removal_drops_the_files_but_keeps_a_branch_with_commits_of_its_own(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    tree = add_tree(repo, "A")
    commit(tree, "f")
    (tree / "scratch").write_text("y")
    done = fleet(repo, "worktree", "remove", "A", "--force")
    assert done.returncode == 0, done.stderr
    assert "discarding 1 untracked file (scratch)" in done.stdout
    assert "its branch worktree-A is kept: it holds 1 commit on no other branch" in done.stdout
    assert not tree.exists()
    assert git(repo, "log", "-1", "--format=%s", "worktree-A").strip() == "add f"


def test_remove_is_refused_while_anything_runs_in_the_worktree_even_forced(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    tree = add_tree(repo, "A")
    sleeper = subprocess.Popen(["sleep", "60"], cwd=tree)
    try:
        done = fleet(repo, "worktree", "remove", "A", "--force")
        assert done.returncode == 1
        assert f"is in use by pid {sleeper.pid} (sleep)" in done.stderr, done.stderr
        assert tree.is_dir()
    finally:
        sleeper.kill()
        sleeper.wait()


def test_remove_waits_for_the_repositorys_worktree_lock(tmp_path: Path) -> None:
    """A removal takes its turn behind a creation (claude-run holds the same lock while Claude makes one)."""
    repo = make_repo(tmp_path / "repo")
    add_tree(repo, "A")
    held = threading.Event()

    def hold() -> None:
        with gitrepo.repo_lock(gitrepo.common_dir(repo)):
            held.set()
            time.sleep(1.5)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(5)
    began = time.monotonic()
    done = fleet(repo, "worktree", "remove", "A")
    holder.join()
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - began >= 1.0, "it waited for the lock"


def test_doctor_fix_removes_only_provably_empty_worktrees_and_prunes_stale_entries(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    add_tree(repo, "empty")
    dirty = add_tree(repo, "dirty")
    (dirty / "notes.md").write_text("keep me\n")
    gone = add_tree(repo, "gone")
    subprocess.run(["rm", "-rf", str(gone)], check=True)
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8",
           "TMUX_TMPDIR": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "cc")}  # fmt: skip
    found = fleet(repo, "doctor", env=env)
    assert f"worktree: {repo}: stale worktree entry (folder gone): {gone}" in found.stdout, found.stdout
    assert "worktree empty of " in found.stdout and "no agent of a layout uses it; clean" in found.stdout
    assert "1 untracked file (notes.md) (kept; see fleet worktree ls --repo" in found.stdout
    fixed = fleet(repo, "doctor", "--fix", env=env)
    assert "fixed: removed worktree empty" in fixed.stdout, fixed.stdout
    assert "fixed: pruned the stale entry of" in fixed.stdout
    assert agent_trees(repo) == ["dirty"] and (dirty / "notes.md").read_text() == "keep me\n"
    assert "worktree-gone" in git(repo, "branch"), "pruning an entry keeps its branch"


def doctor_env(tmp_path: Path) -> dict[str, str]:
    return {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8",
            "TMUX_TMPDIR": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "cc")}  # fmt: skip


@pytest.mark.parametrize("force", [False, True], ids=["plain", "forced"])
def test_a_branch_with_commits_of_its_own_is_kept_when_its_worktrees_folder_is_gone(
    tmp_path: Path, force: bool
) -> None:
    repo = make_repo(tmp_path / "repo")
    tree = add_tree(repo, "A")
    commit(tree, "f")
    subprocess.run(["rm", "-rf", str(tree)], check=True)
    listed = fleet(repo, "worktree", "ls")
    assert "stale: its folder is gone; its branch holds 1 commit on no other branch" in listed.stdout, (
        listed.stdout
    )
    done = fleet(repo, "worktree", "remove", "A", *(["--force"] if force else []))
    assert done.returncode == 0, done.stderr
    assert "(its folder was already gone)" in done.stdout, done.stdout
    assert "its branch worktree-A is kept: it holds 1 commit on no other branch" in done.stdout, done.stdout
    assert git(repo, "log", "-1", "--format=%s", "worktree-A").strip() == "add f"
    assert agent_trees(repo) == []
    found = fleet(repo, "doctor", env=doctor_env(tmp_path))
    assert (
        f"branch worktree-A of {repo} holds 1 commit on no other branch and has no worktree: a plain "
        "claude -w A would reset it to HEAD"
    ) in found.stdout, found.stdout


def test_files_git_ignores_are_work_a_removal_lists_and_keeps(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / ".gitignore").write_text("*.log\nbuild/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-qm", "ignore logs")
    tree = add_tree(repo, "A")
    (tree / "findings.log").write_text("an agent's notes\n")
    (tree / "build").mkdir()
    (tree / "build" / "out.bin").write_text("x")
    listed = fleet(repo, "worktree", "ls")
    assert "2 ignored files (build/, findings.log)" in listed.stdout, listed.stdout
    refused = fleet(repo, "worktree", "remove", "A")
    assert refused.returncode == 1 and "holds 2 ignored files (build/, findings.log)" in refused.stderr
    assert (tree / "findings.log").is_file()
    forced = fleet(repo, "worktree", "remove", "A", "--force")
    assert forced.returncode == 0 and "discarding 2 ignored files (build/, findings.log)" in forced.stdout


def plant(repo: Path, tree: Path, mark: Path) -> None:
    """What an agent's file tools wrote before the gate refused it (hooks/protected_paths.py): a git folder
    of its own whose configuration runs a command, and its worktree's ``.git`` file pointed at it."""
    cache = repo / "notes" / "cache"
    for sub in ("objects", "refs"):
        (cache / sub).mkdir(parents=True, exist_ok=True)
        (cache / sub / ".keep").write_text("")
    (cache / "HEAD").write_text("ref: refs/heads/main\n")
    (cache / "config").write_text(
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
        f'\tfsmonitor = "touch {mark}; false"\n\thooksPath = {cache}/hooks\n'
        f'[filter "x"]\n\tclean = "touch {mark}; cat"\n'
    )
    (cache / "hooks").mkdir()
    (cache / "hooks" / "reference-transaction").write_text(f"#!/bin/sh\ntouch {mark}\n")
    (cache / "hooks" / "reference-transaction").chmod(0o755)
    (tree / ".gitattributes").write_text("* filter=x\n")
    (tree / ".git").write_text(f"gitdir: {cache}\n")


def test_no_verb_runs_git_in_a_worktree_whose_git_file_points_elsewhere(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    tree = add_tree(repo, "A")
    mark = tmp_path / "PLANT-RAN"
    plant(repo, tree, mark)
    subprocess.run(["git", "status"], cwd=tree, capture_output=True)
    assert mark.exists(), "control: a plain git status in the worktree runs the planted command"
    mark.unlink()
    said = f"not a worktree of this repository: its .git points to {repo / 'notes' / 'cache'}"

    listed = fleet(repo, "worktree", "ls")
    assert listed.returncode == 0 and said in listed.stdout, listed.stdout + listed.stderr
    listed_inside = fleet(tree, "worktree", "ls")
    assert said in listed_inside.stdout, "from inside the worktree, its checkout's repository"
    found = fleet(repo, "doctor", env=doctor_env(tmp_path))
    assert f"worktree A: {tree}: {said}" in found.stdout and "worktree repair" in found.stdout, found.stdout
    for force in ([], ["--force"]):
        refused = fleet(repo, "worktree", "remove", "A", *force)
        assert refused.returncode == 1 and said in refused.stderr, refused.stderr
        assert refused.stderr.count("\n") == 1 and "nothing was removed" in refused.stderr
    assert (tree / ".gitattributes").is_file(), "nothing in it was deleted"
    assert not mark.exists(), "no verb ran the planted command"

    hint = refused.stderr.split("point it back with ", 1)[1].strip()
    assert hint == f"git -C {repo} worktree repair {tree}"
    subprocess.run(hint.split(), check=True, capture_output=True)  # the hint, as typed
    assert not mark.exists()
    assert gitrepo.registered(tree), "the hint points the worktree back"


# --------------------------------------------------------------------------- a fleet of agents in worktrees


FOUR = "  - agents:\n      layout: tiled\n      worktree: true\n      panes:\n" + "".join(
    f"        - {label}: claude-run\n" for label in "ABCD"
)


def status_rows(world: FleetWorld, name: str) -> dict[str, dict[str, t.Any]]:
    done = world.fleet("status", name, "--json")
    assert done.returncode == 0, done.stderr
    return status_rows_any(world, name, done.stdout)


def status_rows_any(world: FleetWorld, name: str, out: str | None = None) -> dict[str, dict[str, t.Any]]:
    """The rows of ``fleet status --json``, whatever its exit status (a dead agent makes it 1)."""
    out = world.fleet("status", name, "--json").stdout if out is None else out
    return {row["label"]: row for row in json.loads(out)}


@pytest.mark.slow
def test_four_agents_each_in_its_own_worktree_through_a_crash_and_a_stop_and_start(world: FleetWorld) -> None:
    repo = make_repo(world.project)
    world.layout("four", FOUR)
    for label in "ABCD":
        world.plan(label, agent(label=label), default=[{"mark": "again"}, {"wait": None}])
    started = world.fleet("start", "four", "--no-attach")
    assert started.returncode == 0, started.stdout + started.stderr
    trees = {label: repo / ".claude" / "worktrees" / label for label in "ABCD"}
    for label in "ABCD":
        world.wait_event(label, "mark", name="ready")
        (first,) = world.starts(label)
        assert first["cwd"] == str(trees[label]) and "--worktree" in first["argv"]
        assert first["argv"][first["argv"].index("--worktree") + 1] == label
        assert (repo / "sessions" / f"S_{label}" / ".state.json").is_file(), "the project's one sessions root"
        assert not (trees[label] / "sessions").exists()
    assert agent_trees(repo) == list("ABCD")
    assert all(f"worktree-{label}" in git(repo, "branch") for label in "ABCD")

    # kill -9 of one agent's Claude: claude-run starts it again, in the same worktree, resuming it.
    (first_a,) = world.starts("A")
    os.kill(first_a["pid"], signal.SIGKILL)
    _, again = world.wait_starts("A", 2)
    assert again["cwd"] == str(trees["A"]) and resume_of(again) == "conv-A", again["argv"]

    (trees["B"] / "notes.md").write_text("B's unsaved work\n")
    rows = status_rows(world, "four")
    assert rows["B"]["worktree"] == "B" and rows["B"]["branch"] == "worktree-B"
    assert rows["B"]["unsaved"] == "1 untracked file (notes.md)" and rows["C"]["unsaved"] == ""
    text = world.fleet("status", "four")
    assert "worktree-B*" in text.stdout, text.stdout

    # A forced clean-up of B's worktree while its agent runs, and a plain one after the stop: refused.
    forced = world.fleet("worktree", "remove", "B", "--force")
    assert forced.returncode == 1 and "is in use by pid" in forced.stderr, forced.stderr
    stopped = world.fleet("stop", "four")
    assert stopped.returncode == 0, stopped.stderr
    assert agent_trees(repo) == list("ABCD"), "fleet stop removes no worktree"
    refused = world.fleet("worktree", "remove", "B")
    assert refused.returncode == 1 and "holds 1 untracked file (notes.md)" in refused.stderr, refused.stderr
    doctor = world.fleet("doctor", "four", "--fix")
    assert "worktree B" not in doctor.stdout, "a worktree the layout names is never the doctor's to remove"

    restarted = world.fleet("start", "four", "--no-attach")
    assert restarted.returncode == 0, restarted.stdout + restarted.stderr
    for label in "ABCD":
        *_, last = world.wait_starts(label, 3 if label == "A" else 2)
        assert last["cwd"] == str(trees[label]) and resume_of(last) == f"conv-{label}", (label, last["argv"])
    assert agent_trees(repo) == list("ABCD")
    assert (trees["B"] / "notes.md").read_text() == "B's unsaved work\n"
    assert all(
        len([e for e in world.events(label, "worktree") if e.get("created")]) == 1 for label in "ABCD"
    ), "each worktree was made once and found again after"

    # An agent that is not running (its claude-run killed): its row still names its worktree and the work in it.
    supervisor = int(world.panes()["C"]["pane_pid"])
    (trees["C"] / "draft.md").write_text("C's unsaved work\n")
    os.kill(supervisor, signal.SIGKILL)
    rows = wait_until(
        lambda: (r := status_rows_any(world, "four"))["C"]["state"].startswith("exited") and r,
        15,
        "C's pane dead",
    )
    assert (rows["C"]["worktree"], rows["C"]["branch"]) == ("C", "worktree-C"), rows["C"]
    assert rows["C"]["unsaved"] == "1 untracked file (draft.md)", rows["C"]


@pytest.mark.slow
def test_two_fleets_starting_at_once_in_one_repository_make_their_worktrees_in_turn(
    world: FleetWorld,
) -> None:
    repo = make_repo(world.project)
    other_socket = f"fleet-pytest-{uuid.uuid4().hex}"
    world.layout("one", FOUR.replace("- agents:", "- one:"))
    world.layout(
        "two", FOUR.replace("- agents:", "- two:").replace("- A:", "- E:").replace("- B:", "- F:")
        .replace("- C:", "- G:").replace("- D:", "- H:"),
    )  # fmt: skip
    for label in "ABCDEFGH":
        world.plan(label, [{"mark": "ready"}, {"wait": None}])
    command = [str(BIN / "fleet"), "start", "--no-attach"]
    runs = [
        subprocess.Popen([*command, "one", "--socket", world.socket], cwd=repo, env=world.env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE),
        subprocess.Popen([*command, "two", "--socket", other_socket], cwd=repo, env=world.env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE),
    ]  # fmt: skip
    try:
        for run in runs:
            out, err = run.communicate(timeout=180)
            assert run.returncode == 0, out + err
        made = [wait_until(lambda lb=label: world.events(lb, "worktree"), 30, f"{label}'s worktree")[0]
                for label in "ABCDEFGH"]  # fmt: skip
        assert all(e.get("created") for e in made), made
        spans = sorted((e["began"], e["ended"]) for e in made)
        overlaps = [(a, b) for a, b in itertools.pairwise(spans) if b[0] < a[1]]
        assert not overlaps, f"two creations ran at once: {overlaps}"
        assert agent_trees(repo) == list("ABCDEFGH")
    finally:
        subprocess.run(["tmux", "-L", other_socket, "kill-server"], env=world.env, capture_output=True)


@pytest.mark.slow
def test_fleet_status_of_a_worktree_fleet_runs_no_git_in_a_planted_worktree(
    world: FleetWorld, tmp_path: Path
) -> None:
    repo = make_repo(world.project)
    world.layout(
        "one",
        "  - agents:\n      worktree: true\n      panes:\n        - A: claude-run\n        - B: claude-run\n",
    )
    for label in "AB":
        world.plan(label, [{"mark": "ready"}, {"wait": None}])
    started = world.fleet("start", "one", "--no-attach")
    assert started.returncode == 0, started.stdout + started.stderr
    for label in "AB":
        world.wait_event(label, "mark", name="ready")
    tree = repo / ".claude" / "worktrees" / "A"
    mark = tmp_path / "PLANT-RAN"
    plant(repo, tree, mark)
    (repo / ".claude" / "worktrees" / "B" / "notes.md").write_text("B's\n")
    rows = status_rows(world, "one")
    assert not mark.exists(), "fleet status ran git in the planted worktree"
    assert rows["A"]["worktree"] == "A" and rows["A"]["unsaved"] is None, rows["A"]
    assert rows["B"]["unsaved"] == "1 untracked file (notes.md)", "the other worktree is looked at as before"
    text = world.fleet("status", "one")
    assert "A?" in text.stdout or "worktree-A?" in text.stdout, text.stdout
    assert not mark.exists()


# --------------------------------------------------------------------------- what an attack on the git we run found


def test_a_filter_driver_with_an_equals_sign_in_its_name_is_blanked_too(tmp_path: Path) -> None:
    """``-c filter.a=b.clean=`` would be split at the first ``=`` and leave the driver on."""
    repo = make_repo(tmp_path / "repo")
    tree = add_tree(repo, "A")
    mark = tmp_path / "FILTER-RAN"
    git(repo, "config", "filter.a=b.clean", f"touch {mark}; cat")
    (tree / ".gitattributes").write_text("*.txt filter=a=b\n")
    (tree / "f.txt").write_text("one\n")
    git(tree, "add", "f.txt", ".gitattributes")
    git(tree, "commit", "-qm", "f")
    mark.unlink()
    (tree / "f.txt").write_text("two\n")  # same size: git must look at the content
    os.utime(tree / "f.txt", (1_000_000_000, 1_000_000_000))
    subprocess.run(["git", "status"], cwd=tree, capture_output=True)
    assert mark.exists(), "control: a plain git status runs the filter"
    mark.unlink()
    listed = fleet(repo, "worktree", "ls")
    assert listed.returncode == 0 and "1 uncommitted change (f.txt)" in listed.stdout, listed.stdout
    assert not mark.exists(), "fleet worktree ls ran a filter the configuration defines"


def test_no_transport_runs_even_where_the_configuration_allows_one(tmp_path: Path) -> None:
    """A promisor remote's lazy fetch through ``ext::``, allowed by ``protocol.ext.allow``, which git puts
    above ``protocol.allow``: GIT_ALLOW_PROTOCOL, above both, lets none through."""
    repo = make_repo(tmp_path / "repo")
    mark = tmp_path / "FETCH-RAN"
    for key, value in (("core.repositoryformatversion", "1"), ("extensions.partialClone", "zz"),
                       ("remote.zz.url", f"ext::sh -c touch% {mark}"), ("remote.zz.promisor", "true"),
                       ("protocol.ext.allow", "always")):  # fmt: skip
        git(repo, "config", key, value)
    (repo / ".git" / "refs" / "heads" / "worktree-K").write_text("12" * 20 + "\n")
    subprocess.run(["git", "rev-list", "--count", "worktree-K"], cwd=repo, capture_output=True)
    assert mark.exists(), "control: a plain git fetches the missing object through the remote's command"
    mark.unlink()
    found = fleet(repo, "doctor", env=doctor_env(tmp_path))
    assert "cannot list its agents' branches" in found.stdout, found.stdout
    assert not mark.exists(), "fleet doctor started the remote's command"


@pytest.mark.parametrize("form", ["two-spaces", "link-then-dotdot"])
def test_a_git_file_is_read_as_git_reads_it(tmp_path: Path, form: str) -> None:
    """A ``.git`` file our check read one way and git another: git would have used a folder of the
    agent's. Read as git does (the prefix exactly, a link before a ``..``), it points nowhere of ours."""
    repo = make_repo(tmp_path / "repo")
    tree = add_tree(repo, "A")
    admin = repo / ".git" / "worktrees" / "A"
    if form == "two-spaces":
        (tree / ".git").write_text(f"gitdir:  {admin}\n")
    else:
        deep = tmp_path / "elsewhere" / "a" / "b" / "c" / "d"
        deep.mkdir(parents=True)
        (tree / "L").symlink_to(deep)
        back = os.path.relpath(admin, tree)  # ../../../.git/worktrees/A, lexically from the worktree
        (tree / ".git").write_text(f"gitdir: L/../{back}\n")
    listed = fleet(repo, "worktree", "ls")
    assert "not a worktree of this repository: its .git points to" in listed.stdout, listed.stdout
    refused = fleet(repo, "worktree", "remove", "A", "--force")
    assert refused.returncode == 1 and tree.is_dir(), refused.stderr


def _detached(repo: Path, name: str) -> tuple[Path, str]:
    tree = add_tree(repo, name)
    git(tree, "checkout", "-q", "--detach")
    commit(tree, f"{name}.txt")
    return tree, git(tree, "rev-parse", "HEAD").strip()


@pytest.mark.parametrize("gone", [False, True], ids=["there", "folder-gone"])
def test_commits_on_a_detached_head_keep_their_worktree_until_a_branch_keeps_them(
    tmp_path: Path, gone: bool
) -> None:
    repo = make_repo(tmp_path / "repo")
    tree, sha = _detached(repo, "A")
    if gone:
        subprocess.run(["rm", "-rf", str(tree)], check=True)
    for force in ([], ["--force"]):
        refused = fleet(repo, "worktree", "remove", "A", *force)
        assert refused.returncode == 1, refused.stdout
        assert f"on no branch (its HEAD, detached at {sha[:12]})" in refused.stderr, refused.stderr
        assert f"git -C {repo} branch NAME {sha[:12]}" in refused.stderr
    fixed = fleet(repo, "doctor", "--fix", env=doctor_env(tmp_path))
    if gone:
        assert "the stale entry of" in fixed.stdout and "is kept" in fixed.stdout, fixed.stdout
    assert git(repo, "cat-file", "-t", sha).strip() == "commit"
    assert "A" in agent_trees(repo) or gone
    assert sha in git(repo, "worktree", "list", "--porcelain"), "git still holds the commit"
    git(repo, "branch", "kept-A", sha)  # the hint, with a name
    done = fleet(repo, "worktree", "remove", "A", "--force")
    assert done.returncode == 0, done.stderr


def test_files_git_was_told_not_to_look_at_are_work(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    tree = add_tree(repo, "A")
    (tree / "README").write_text("an agent's edit git is told to ignore\n")
    git(tree, "update-index", "--skip-worktree", "README")
    assert git(tree, "status", "--porcelain") == "", "git status shows nothing"
    listed = fleet(repo, "worktree", "ls")
    assert "1 file git status does not show (README)" in listed.stdout, listed.stdout
    refused = fleet(repo, "worktree", "remove", "A")
    assert refused.returncode == 1 and "git status does not show" in refused.stderr


def test_only_the_agents_own_branch_goes_with_its_worktree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    tree = add_tree(repo, "A")
    git(repo, "branch", "develop")
    git(tree, "checkout", "-q", "develop")
    done = fleet(repo, "worktree", "remove", "A")
    assert done.returncode == 0, done.stderr
    assert "its branch develop is kept (not worktree-A, the agent's own)" in done.stdout, done.stdout
    assert "develop" in git(repo, "branch")


def test_trace2_and_signature_checks_write_and_run_nothing(tmp_path: Path) -> None:
    """trace2 (read from the person's own configuration, never the command line's) would append to a file
    it names; a stash list checks a stash's signature with gpg.program when log.showSignature is on."""
    repo = make_repo(tmp_path / "repo")
    tree = add_tree(repo, "A")
    target, mark = tmp_path / "trace.out", tmp_path / "GPG-RAN"
    gpg = tmp_path / "fakegpg"
    gpg.write_text(f"#!/bin/sh\ntouch {mark}\nexit 1\n")
    gpg.chmod(0o755)
    (tree / ".gitconfig").write_text(f"[trace2]\n\tnormalTarget = {target}\n")  # fleet()'s HOME is its cwd
    git(repo, "config", "log.showSignature", "true")
    git(repo, "config", "gpg.program", str(gpg))
    head, top = git(repo, "rev-parse", "HEAD").strip(), git(repo, "rev-parse", "HEAD^{tree}").strip()
    signed = (f"tree {top}\nparent {head}\nparent {head}\nauthor t <t@t> 0 +0000\ncommitter t <t@t> 0 +0000\n"
              "gpgsig -----BEGIN PGP SIGNATURE-----\n \n xx\n -----END PGP SIGNATURE-----\n\nWIP on worktree-A: x\n")  # fmt: skip
    made = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=repo, input=signed,
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    git(repo, "stash", "store", "-m", "WIP on worktree-A: x", made)
    subprocess.run(
        ["git", "stash", "list"], cwd=tree, capture_output=True, env={**os.environ, "HOME": str(tree)}
    )
    assert target.exists() and mark.exists(), "control: a plain git writes the trace and runs gpg"
    target.unlink()
    mark.unlink()
    listed = fleet(tree, "worktree", "ls")
    assert "1 stash made in it" in listed.stdout, listed.stdout
    assert not target.exists() and not mark.exists()


def test_a_worktrees_own_configuration_runs_no_filter_at_its_removal(tmp_path: Path) -> None:
    """git's own check before a removal starts a status that reads the worktree's config.worktree,
    whose filters were never blanked: our removal judges the work itself and has git remove it forced."""
    repo = make_repo(tmp_path / "repo")
    git(repo, "config", "extensions.worktreeConfig", "true")
    tree = add_tree(repo, "A")
    mark = tmp_path / "FILTER-RAN"
    (repo / ".git" / "worktrees" / "A" / "config.worktree").write_text(
        f'[filter "x"]\n\tclean = touch {mark}; cat\n'
    )
    (tree / ".gitattributes").write_text("f.txt filter=x\n")
    (tree / "f.txt").write_text("one\n")
    git(tree, "add", ".gitattributes", "f.txt")
    git(tree, "commit", "-qm", "f")
    git(repo, "branch", "keep", "worktree-A")
    mark.unlink(missing_ok=True)
    os.utime(tree / "f.txt", (2_000_000_000, 2_000_000_000))
    done = fleet(repo, "worktree", "remove", "A")
    assert not mark.exists(), "the removal ran the worktree's own filter"
    assert done.returncode in (0, 1), done.stderr


def test_files_in_an_uninitialised_submodules_folder_are_work(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    sha = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{sha},sub")
    git(repo, "commit", "-qm", "a submodule")
    tree = add_tree(repo, "C")
    (tree / "sub" / "notes.md").write_text("an agent's notes\n")
    assert git(tree, "status", "--porcelain", "--untracked-files=all") == "", "git status shows nothing"
    listed = fleet(repo, "worktree", "ls")
    assert "1 file git status does not show (sub/notes.md)" in listed.stdout, listed.stdout
    refused = fleet(repo, "worktree", "remove", "C")
    assert refused.returncode == 1 and (tree / "sub" / "notes.md").is_file()


def test_a_stale_head_that_is_no_commit_id_is_never_an_option(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    tree = add_tree(repo, "B")
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    subprocess.run(["rm", "-rf", str(tree)], check=True)
    (repo / ".git" / "worktrees" / "B" / "HEAD").write_text(f"--output={victim}\n")
    fleet(repo, "worktree", "remove", "B")
    fleet(repo, "doctor", "--fix", env=doctor_env(tmp_path))
    assert victim.read_text() == "precious\n"


def test_a_file_name_that_is_not_utf8_is_shown_not_a_traceback(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    tree = add_tree(repo, "A")
    (tree / os.fsdecode(b"bad\xff")).write_text("x")
    listed = fleet(repo, "worktree", "ls")
    assert listed.returncode == 0 and "1 untracked file (bad\ufffd)" in listed.stdout, (
        listed.stdout + listed.stderr
    )
    refused = fleet(repo, "worktree", "remove", "A")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
