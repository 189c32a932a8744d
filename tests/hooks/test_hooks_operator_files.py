"""The operator is never the agent's tool: what ``fleet``, tmux, ssh and git run with the person's power is
out of the file tools' reach, and no file tool's path is judged in another process's view of the files.

Each call goes through the installed ``claude-hook pre-tool-use``, as Claude Code runs it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from support.hooks import activate, hook_env, run, tool

from claude_shepherd.supervisor.session.roots import registry_dir

TAG = "§CMD_PROTECTED_FILE"


def _theirs(project: Path) -> None:
    (project / "sessions" / "THEIRS").mkdir()
    (project / "sessions" / "THEIRS" / ".state.json").write_text(json.dumps({"pid": 0, "skill": "x"}))


def _operator_code(project: Path) -> dict[str, str]:
    home = project.parent / "home"
    return {
        "tmux.conf": "~/.tmux.conf",
        "tmux's XDG config": "~/.config/tmux/tmux.conf",
        "tmux's config in $XDG_CONFIG_HOME": str(project.parent / "xdg" / "tmux" / "tmux.conf"),
        "ssh config": "~/.ssh/config",
        "ssh authorized_keys": str(home / ".ssh" / "authorized_keys"),
        "the project's layout": "tmuxinator/fleet.yml",
        "a layout in a tmuxinator folder below": "sub/tmuxinator/grid.yaml",
        "the person's layout": "~/.config/tmuxinator/fleet.yml",
        "a layout in ~/.tmuxinator": "~/.tmuxinator/fleet.yml",
        "git config": ".git/config",
        "a git hook": ".git/hooks/pre-commit",
        "a submodule's git config": ".git/modules/sub/config",
        "a nested submodule's git hook": ".git/modules/a/modules/b/hooks/pre-commit",
        "a worktree's git config": ".git/worktrees/w/config.worktree",
        "a bare repository's config": "mirror.git/config",
        "a worktree's .git file (which repository git trusts there)": ".claude/worktrees/A/.git",
        "a .git file anywhere": "notes/sub/.git",
        "a .git folder's objects": ".git/objects/ab/cdef",
        "the repository's info/exclude": ".git/info/exclude",
        "a tmux plugin": "~/.tmux/plugins/tpm/tpm",
        "the user's git config": "~/.gitconfig",
        "the system's git config": "/etc/gitconfig",
        "fleet boot's systemd unit": "~/.config/systemd/user/claude-shepherd-fleets.service",
        "fleet boot's launchd agent": "~/Library/LaunchAgents/com.claude-shepherd.fleets.plist",
        "the system's git attributes": "/etc/gitattributes",
        "fish's start-up": "~/.config/fish/config.fish",
        "the alert stamps": str(
            project.parent / "run" / "claude-shepherd" / "pane-notify" / "0-1.alert-exited"
        ),
        "the record `fleet host add` left": str(Path(sys.prefix).parent / "installed.json"),
        "the alert stamps' fallback": f"/tmp/claude-shepherd-{os.getuid()}/pane-notify/0-1.alert-exited",
        # what every fleet verb reads back instead of the layout file (its commands run at `fleet start`)
        "a checked layout the fleet keeps": os.path.join(registry_dir(os.environ), "parsed", "0123abcd.json"),
        "the record of a tmux found recent enough": os.path.join(
            registry_dir(os.environ), "parsed", "tmux-checked"
        ),
    }


@pytest.mark.parametrize("what", list(_operator_code(Path("/p/proj"))))
@pytest.mark.parametrize("tool_name", ["Write", "Edit", "MultiEdit"])
def test_file_tools_cannot_write_what_the_operator_runs(project: Path, what: str, tool_name: str) -> None:
    activate(project)
    path = _operator_code(project)[what]
    env = hook_env(
        project, XDG_CONFIG_HOME=str(project.parent / "xdg"), XDG_RUNTIME_DIR=str(project.parent / "run")
    )
    out = run("pre-tool-use", tool(project, tool_name, file_path=path, content="x"), env, cwd=project).stdout
    assert out, f"{tool_name} of {what} ({path}) was allowed"
    reason = json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"]
    assert reason.startswith(TAG) and "is refused" in reason, reason


def test_the_default_state_folder_is_refused_where_claudes_environment_names_another(project: Path) -> None:
    """`fleet` may run where $XDG_STATE_HOME is not what Claude's environment says (a status bar, cron,
    another terminal): the folder it would use then, under the home, is refused as well."""
    activate(project)
    env = hook_env(project, XDG_STATE_HOME=str(project.parent / "elsewhere"))
    home = Path(env["HOME"])
    for path in (home / ".local/state/claude-shepherd/parsed/0123abcd.json", project.parent / "elsewhere" /
                 "claude-shepherd" / "parsed" / "tmux-checked"):  # fmt: skip
        out = run(
            "pre-tool-use", tool(project, "Write", file_path=str(path), content="x"), env, cwd=project
        ).stdout
        assert out and "is refused" in json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"], path


def test_an_ordinary_file_and_a_layout_like_name_elsewhere_stay_writable(project: Path) -> None:
    activate(project)
    for path in ("src/tmuxinator.yml", "docs/git/config", "notes/ssh/config"):
        out = run("pre-tool-use", tool(project, "Write", file_path=path, content="x"), hook_env(project),
                  cwd=project).stdout  # fmt: skip
        assert out == "", (path, out)


@pytest.mark.parametrize("active", [False, True], ids=["before-activation", "active"])
def test_no_file_tool_points_a_worktree_at_a_git_folder_of_the_agents_making(
    project: Path, active: bool
) -> None:
    """The plant: a git folder of the agent's own (its ``config`` runs a program), and the worktree's
    ``.git`` file pointed at it. The folder's files are ordinary files until a ``.git`` file points there;
    the pointing is refused, before a session is active and after."""
    if active:
        activate(project)
    env = hook_env(project)
    tree = project / ".claude" / "worktrees" / "A"
    tree.mkdir(parents=True)
    (tree / ".git").write_text(f"gitdir: {project}/.git/worktrees/A\n")
    writes = {
        "notes/cache/config": '[core]\n\tfsmonitor = "touch PWNED; false"\n',
        "notes/cache/HEAD": "ref: refs/heads/main\n",
        str(tree / ".git"): f"gitdir: {project}/notes/cache\n",
        str(tree / "sub" / ".git"): f"gitdir: {project}/notes/cache\n",
    }
    answers = {}
    for path, content in writes.items():
        out = run(
            "pre-tool-use", tool(project, "Write", file_path=path, content=content), env, cwd=project
        ).stdout
        answers[path] = json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"] if out else ""
    for path in (str(tree / ".git"), str(tree / "sub" / ".git")):
        assert answers[path].startswith(TAG) and "git's own files" in answers[path], answers
    if active:
        assert answers["notes/cache/config"] == "" and answers["notes/cache/HEAD"] == "", answers


def test_what_a_git_file_points_to_is_gits_whatever_the_folder_is_called(
    project: Path, tmp_path: Path
) -> None:
    """``git init --separate-git-dir``: the project's ``.git`` is a file and the repository's config and hooks
    live in a folder of any name; a worktree's admin folder names its common folder in ``commondir``."""
    activate(project)
    gits = tmp_path / "gits" / "proj"
    (gits / "hooks").mkdir(parents=True)
    (gits / "worktrees" / "A").mkdir(parents=True)
    (gits / "worktrees" / "A" / "commondir").write_text("../..\n")
    (project / ".git").write_text(f"gitdir: {gits}\n")
    tree = project / ".claude" / "worktrees" / "A"
    tree.mkdir(parents=True)
    (tree / ".git").write_text(f"gitdir: {gits / 'worktrees' / 'A'}\n")
    env = hook_env(project)
    for path in (
        gits / "config",
        gits / "hooks" / "post-checkout",
        gits / "worktrees" / "A" / "config.worktree",
    ):
        for cwd in (project, tree):
            out = run(
                "pre-tool-use", tool(project, "Write", file_path=str(path), content="x"), env, cwd=cwd
            ).stdout
            assert out, f"Write of {path} from {cwd} was allowed"
            reason = json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"]
            assert "a git folder a .git file points to" in reason, reason
    out = run("pre-tool-use", tool(project, "Write", file_path=str(tmp_path / "gits" / "notes.md"), content="x"),
              env, cwd=project).stdout  # fmt: skip
    assert out == "", "beside the git folder is no git folder"


def test_a_linked_git_folder_and_what_a_git_configuration_includes_are_gits(
    project: Path, tmp_path: Path
) -> None:
    """A project whose ``.git`` is a link to a folder of another name, and a configuration that includes a
    file in the work tree (``include.path``): both are git's configuration to write."""
    activate(project)
    real = tmp_path / "gitdirs" / "proj"
    (real / "hooks").mkdir(parents=True)
    (project / ".git").symlink_to(real)
    (real / "config").write_text("[include]\n\tpath = ../../proj/shared.gitconfig\n")
    home = Path(hook_env(project)["HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / ".gitconfig").write_text('[includeIf "gitdir:~/src/"]\n\tpath = ~/work.gitconfig\n')
    env = hook_env(project)
    for path in (real / "config", real / "hooks" / "post-checkout", project / "shared.gitconfig",
                 home / "work.gitconfig"):  # fmt: skip
        out = run(
            "pre-tool-use", tool(project, "Write", file_path=str(path), content="x"), env, cwd=project
        ).stdout
        assert out and "is refused" in json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"], path
    out = run(
        "pre-tool-use", tool(project, "Write", file_path="shared.notes", content="x"), env, cwd=project
    ).stdout
    assert out == ""


def test_git_names_in_any_case_and_the_programs_the_operator_runs_are_refused(
    project: Path, tmp_path: Path
) -> None:
    """A case-insensitive file system (macOS) names .git and settings.json in any case; git's own prefix
    (a Homebrew git's etc/gitconfig) and the Claude Code claude-run starts are the operator's programs."""
    activate(project)
    prefix = tmp_path / "brew"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "git").write_text("#!/bin/sh\n")
    (prefix / "bin" / "git").chmod(0o755)
    (prefix / "bin" / "claude").write_text("#!/bin/sh\n")
    (prefix / "bin" / "claude").chmod(0o755)
    env = hook_env(project, PATH=f"{prefix / 'bin'}:{os.environ['PATH']}")
    home = Path(env["HOME"])
    for path in (".GIT/config", ".Git/hooks/post-checkout", ".claude/worktrees/A/.GIT", ".claude/SETTINGS.json",
                 str(prefix / "etc" / "gitconfig"), str(prefix / "bin" / "git"), str(prefix / "bin" / "claude"),
                 str(home / ".claude" / "local" / "claude"), str(home / ".local" / "share" / "claude" / "versions" / "9")):  # fmt: skip
        out = run(
            "pre-tool-use", tool(project, "Write", file_path=path, content="x"), env, cwd=project
        ).stdout
        assert out and "is refused" in json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"], path


@pytest.mark.parametrize(
    "written",
    [
        "[include] path = {inc}",
        "[include]\n\tpath = {inc} ; a note",
        '[include]\n\tpath = "{inc}" # c',
        "[include]\n\tpath = {half}\\\n{rest}",
        '[includeIf "gitdir:/x/"]\n\tpath = {inc}',
    ],
    ids=["on-the-section-line", "comment", "quoted", "continued", "conditional"],
)
def test_every_form_of_an_include_protects_the_file(project: Path, tmp_path: Path, written: str) -> None:
    activate(project)
    inc = str(tmp_path / "included.gitconfig")
    env = hook_env(project)
    home = Path(env["HOME"])
    (home / ".config" / "git").mkdir(parents=True, exist_ok=True)
    (home / ".config" / "git" / "config").write_text(
        written.format(inc=inc, half=inc[:5], rest=inc[5:]) + "\n"
    )
    out = run("pre-tool-use", tool(project, "Write", file_path=inc, content="x"), env, cwd=project).stdout
    assert out and "includes" in json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"], written


# --------------------------------------------------------------------------- process-relative paths


def _process_relative(project: Path) -> dict[str, str]:
    (project / "here").symlink_to("/proc/self/cwd")
    return {
        "/proc/self/cwd": "/proc/self/cwd/sessions/THEIRS/handover.md",
        "/proc/thread-self": "/proc/thread-self/cwd/sessions/THEIRS/handover.md",
        "/proc/PID (this process's)": f"/proc/{os.getpid()}/cwd/sessions/THEIRS/handover.md",
        "/proc/self/root": f"/proc/self/root{project}/notes.md",
        "/dev/fd": "/dev/fd/3",
        "/dev/stdout": "/dev/stdout",
        "a symlink to /proc/self/cwd": "here/sessions/THEIRS/handover.md",
        "/proc/mounts (a link into /proc/self)": "/proc/mounts/x",
    }


@pytest.mark.parametrize(
    "what",
    ["/proc/self/cwd", "/proc/thread-self", "/proc/PID (this process's)", "/proc/self/root", "/dev/fd",
     "/dev/stdout", "a symlink to /proc/self/cwd", "/proc/mounts (a link into /proc/self)"],
)  # fmt: skip
def test_a_path_each_process_sees_as_its_own_is_refused_to_the_file_tools(project: Path, what: str) -> None:
    """The hook runs where a `cd` took the agent's shell (a scratch folder), Claude where it started: the
    same ``/proc/self/cwd/...`` is a harmless scratch file to the one, another agent's handover to the
    other."""
    activate(project)
    _theirs(project)
    moved = project.parent / "elsewhere"
    moved.mkdir()
    path = _process_relative(project)[what]
    out = run("pre-tool-use", tool(project, "Write", file_path=path, content="x"), hook_env(project),
              cwd=moved).stdout  # fmt: skip
    assert out, f"Write of {path} was allowed"
    reason = json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"]
    assert reason.startswith(TAG) and "/proc/self" in reason, reason


@pytest.mark.parametrize("path", ["/proc/self/cwd/CLAUDE.md", "/proc/self/root{home}/.claude/CLAUDE.md",
                                  "/dev/fd/0", "/proc/{pid}/cwd/.claude/notes.md"])  # fmt: skip
def test_the_session_gate_whitelists_no_read_through_a_process_view(project: Path, path: str) -> None:
    home = project.parent / "home"
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    (home / ".claude" / "CLAUDE.md").write_text("x")
    (project / "CLAUDE.md").write_text("x")
    path = path.format(home=home, pid=os.getpid())
    env = hook_env(project, SESSION_REQUIRED="1")
    out = run("pre-tool-use", tool(project, "Read", file_path=path), env, cwd=project).stdout
    assert "§CMD_REQUIRE_ACTIVE_SESSION" in out, f"Read of {path} passed the session gate"
    plain = run("pre-tool-use", tool(project, "Read", file_path=str(home / ".claude" / "CLAUDE.md")), env,
                cwd=project).stdout  # fmt: skip
    assert plain == "", "the same file by its own path is a standard"


def test_the_install_record_the_gate_protects_is_the_one_host_add_writes() -> None:
    from claude_shepherd.fleet.hosts.install import RECORD
    from claude_shepherd.hooks.protected_paths import INSTALL_RECORD

    assert INSTALL_RECORD == RECORD
