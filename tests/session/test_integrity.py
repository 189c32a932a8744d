"""The gates and the store against a hostile agent sharing the sessions root (docs/SECURITY.md).

Every test plays an agent trying one of the known escapes through the real
console scripts (``session`` and ``claude-hook`` as subprocesses) on real
files, and checks that it is refused *and* that nothing on disk changed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import typing as t
from pathlib import Path

import pytest
from support.errors import one_line_error
from support.fixtures import Run, script
from support.hooks import assistant_line, bash, hook_env, run, tool
from support.pane import FleetPane

from claude_shepherd.supervisor.session.identity import start_token

S = "sessions/2026_02_07_TOPIC"
CONV = "c1f98c8c-c723-4d46-ad1d-62b28790d574"  # the conversation of hooks_helpers.tool()
TEMPLATE = "~/.claude/skills/implement/assets/TEMPLATE_IMPLEMENTATION_LOG.md"


def write_state(project: Path, state: dict[str, t.Any], rel: str = S) -> Path:
    d = project / rel
    d.mkdir(parents=True, exist_ok=True)
    (d / ".state.json").write_text(json.dumps(state, indent=2))
    return d


def state_of(project: Path, rel: str = S) -> dict[str, t.Any]:
    return json.loads((project / rel / ".state.json").read_text())


def mine(**fields: t.Any) -> dict[str, t.Any]:
    """A state owned by this test process (the 'agent' of every ``session`` call here)."""
    return {
        "pid": os.getpid(),
        "pidStart": start_token(os.getpid()),
        "skill": "implement",
        "lifecycle": "active",
        **fields,
    }


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file's content (an empty lock file, created by taking the lock, is no change)."""
    return {
        p.name: p.read_bytes()
        for p in sorted(directory.iterdir())
        if p.is_file() and not p.is_symlink() and not p.name.endswith(".lock")
    }


@pytest.fixture
def other_agent() -> t.Iterator[subprocess.Popen[bytes]]:
    """Another live agent's supervisor (not an ancestor of anything we run)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "claude-run"])
    yield proc
    proc.kill()
    proc.wait()


def theirs(proc: subprocess.Popen[bytes], **fields: t.Any) -> dict[str, t.Any]:
    return {
        "pid": proc.pid,
        "pidStart": start_token(proc.pid),
        "skill": "implement",
        "lifecycle": "active",
        "logTemplate": TEMPLATE,
        "toolUseWithoutLogsBlockAfter": 10,
        "currentPhase": "2: Build",
        **fields,
    }


# --------------------------------------------------------------------------- 1. ownership


@pytest.mark.parametrize(
    "args, stdin",
    [
        (["deactivate", S], "all done\n"),
        (["dehydrate", S], "# Handover\nplanted\n"),
        (["dehydrate", S, "--no-restart"], "# Handover\nplanted\n"),
        (["update", S, "toolUseWithoutLogsBlockAfter", "1"], ""),
        (["update", S, "toolUseWithoutLogsWarnAfter", "5"], ""),
        (["phase", S, "3: Ship"], ""),
        (["log", S], "an entry in someone else's log\n"),
        (["target", S, "/etc/passwd"], ""),
        (["restart", S], ""),
    ],
)
def test_no_command_writes_another_live_agents_session(
    project: Path, run_session: Run, other_agent: subprocess.Popen[bytes], args: list[str], stdin: str
) -> None:
    d = write_state(project, theirs(other_agent))
    before = snapshot(d)
    one_line_error(run_session(*args, input=stdin), "not this agent's session", f"PID {other_agent.pid}")
    assert snapshot(d) == before, "a refused command changes nothing on disk (no handover, no log)"


def test_the_owner_may_write_its_own_session(project: Path, run_session: Run) -> None:
    write_state(project, mine(logTemplate=TEMPLATE))
    assert run_session("update", S, "toolUseWithoutLogsBlockAfter", "20").returncode == 0
    assert run_session("log", S, input="did a thing\n").returncode == 0
    assert run_session("dehydrate", S, "--no-restart", input="# Handover\n").returncode == 0
    assert state_of(project)["toolUseWithoutLogsBlockAfter"] == 20


def test_a_session_without_owner_is_not_writable_until_activated(project: Path, run_session: Run) -> None:
    write_state(project, {"pid": 0, "skill": "implement", "lifecycle": "active"})
    one_line_error(run_session("deactivate", S, input="x\n"), "held by no agent")
    assert run_session("activate", S, "implement").returncode == 0
    assert run_session("deactivate", S, input="x\n").returncode == 0


# --------------------------------------------------------------------------- 2. take-over by corruption


@pytest.mark.parametrize(
    "template",
    [
        ".state.json",
        "x/.state.json",
        "TEMPLATE_.state.json",
        "DEHYDRATED_CONTEXT.md",
        ".state.json.lock",
        "",
        "log.txt",
    ],
)
def test_a_log_template_cannot_name_our_own_files(project: Path, run_session: Run, template: str) -> None:
    write_state(project, mine())
    before = snapshot(project / S)
    one_line_error(
        run_session("activate", S, "implement", input=json.dumps({"logTemplate": template})), "logTemplate"
    )
    one_line_error(run_session("update", S, "logTemplate", template), "logTemplate")
    assert snapshot(project / S) == before


def test_a_planted_template_never_makes_the_log_a_state_file(project: Path, run_session: Run) -> None:
    """Even a template written before these checks existed cannot route the log into .state.json."""
    write_state(project, mine(logTemplate=".state.json"))
    assert run_session("log", S, input="entry\n").returncode == 0
    json.loads((project / S / ".state.json").read_text())  # still valid JSON
    assert (project / S / "IMPLEMENT_LOG.md").read_text().endswith("entry\n")


def test_a_corrupt_state_of_a_live_agent_is_not_free(
    project: Path, run_session: Run, other_agent: subprocess.Popen[bytes]
) -> None:
    d = write_state(project, theirs(other_agent))
    with open(d / ".state.json", "a") as handle:
        handle.write("\n## 2026-01-01\nappended by a log\n")
    before = snapshot(d)
    one_line_error(run_session("activate", S, "implement"), "corrupt", "live agent", str(other_agent.pid))
    assert snapshot(d) == before


def test_a_corrupt_state_whose_owner_cannot_be_known_is_not_free(project: Path, run_session: Run) -> None:
    d = project / S
    d.mkdir(parents=True)
    (d / ".state.json").write_text("garbage, no owner in here")
    one_line_error(run_session("activate", S, "implement"), "owner cannot be known", "move it aside")
    assert (d / ".state.json").read_text() == "garbage, no owner in here"


def test_a_corrupt_state_of_a_dead_owner_is_set_aside_and_taken(project: Path, run_session: Run) -> None:
    d = project / S
    d.mkdir(parents=True)
    (d / ".state.json").write_text('{"pid": 4194304, "skill": "x", oops')
    r = run_session("activate", S, "implement")
    assert r.returncode == 0, r.stderr
    assert state_of(project)["pid"] == os.getpid()
    assert [p.name for p in d.glob(".state.json.corrupt-*")]


# --------------------------------------------------------------------------- 3. overflow budget refill


def spent_overflow(**fields: t.Any) -> dict[str, t.Any]:
    return mine(
        overflowed=True,
        overflowConversation=CONV,
        sessionId=CONV,
        lifecycle="dehydrating",
        dehydrateToolCalls=25,
        contextUsage=0.9,
        **fields,
    )


def test_deactivate_and_continue_do_not_refill_the_dehydrate_budget(project: Path, run_session: Run) -> None:
    write_state(project, spent_overflow())
    env = hook_env(project)
    conv = {"CLAUDE_CODE_SESSION_ID": CONV}
    assert run_session("deactivate", S, input="stop\n", env=conv).returncode == 0
    assert run_session("continue", S, env=conv).returncode == 0
    st = state_of(project)
    assert (st["overflowed"], st["dehydrateToolCalls"]) == (True, 25)
    dehydrate = tool(project, "Skill", skill="session", args="dehydrate")
    assert run("pre-tool-use", dehydrate, env, cwd=project).stdout == ""  # starting is allowed...
    denied = run("pre-tool-use", tool(project, "Grep", pattern="x"), env, cwd=project).stdout
    assert "used its 25 tool calls" in denied, "...but the conversation's budget stays spent"


def test_an_overflowed_conversation_cannot_activate_another_session(project: Path, run_session: Run) -> None:
    write_state(project, spent_overflow())
    conv = {"CLAUDE_CODE_SESSION_ID": CONV}
    one_line_error(
        run_session("activate", "sessions/FRESH", "implement", env=conv), "overflowed", "dehydrate it first"
    )
    assert not (project / "sessions/FRESH").exists()
    # A new conversation (the restarted Claude) may.
    assert (
        run_session(
            "activate", "sessions/FRESH", "implement", env={"CLAUDE_CODE_SESSION_ID": "new"}
        ).returncode
        == 0
    )


def test_only_a_new_conversation_clears_the_overflow(project: Path, run_session: Run) -> None:
    write_state(project, spent_overflow())
    assert run_session("activate", S, "implement").returncode == 0  # no conversation id: proves nothing
    assert state_of(project)["overflowed"] is True
    assert run_session("activate", S, "implement", env={"CLAUDE_CODE_SESSION_ID": "new"}).returncode == 0
    st = state_of(project)
    assert st["overflowed"] is False and "dehydrateToolCalls" not in st and "overflowConversation" not in st


# --------------------------------------------------------------------------- 4. hanging and huge files


def make_fifo(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)


def make_huge(path: Path, size: int = 75 * 1024 * 1024) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.truncate(size)  # sparse: costs nothing on disk


@pytest.mark.parametrize("plant", [make_fifo, make_huge])
def test_a_trap_in_another_session_costs_only_itself(project: Path, run_session: Run, plant) -> None:
    write_state(project, mine())
    plant(project / "sessions" / "TRAP" / ".state.json")
    started = time.monotonic()
    assert run_session("find", timeout=10).stdout.strip() == str(project / S)
    env = dict(hook_env(project), SESSION_REQUIRED="1")
    assert run("pre-tool-use", tool(project, "Grep", pattern="x"), env, cwd=project).stdout == ""
    assert time.monotonic() - started < 8


@pytest.mark.parametrize("plant", [make_fifo, make_huge])
def test_a_trap_as_the_callers_own_state_fails_closed(project: Path, plant) -> None:
    write_state(project, mine(), rel="sessions/OTHER")  # the index knows who we are...
    os.rename(project / "sessions/OTHER/.state.json", project / "sessions/OTHER/.keep")
    plant(project / "sessions" / "OTHER" / ".state.json")  # ...but our state is now a trap
    index = project / "sessions" / ".shepherd" / "index.json"
    index.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    out = run(
        "pre-tool-use",
        tool(project, "Grep", pattern="x"),
        dict(hook_env(project), SESSION_REQUIRED="1"),
        cwd=project,
    ).stdout
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert time.monotonic() - started < 8


@pytest.mark.parametrize("name", ["index.json", "index.lock"])
def test_a_trap_in_the_index_folder_does_not_hang_lookups(project: Path, run_session: Run, name: str) -> None:
    write_state(project, mine())
    make_fifo(project / "sessions" / ".shepherd" / name)
    assert run_session("find", timeout=10).stdout.strip() == str(project / S)
    r = run_session("activate", "sessions/B", "implement", timeout=15)
    assert r.returncode == 0, r.stderr


def _hook_with_deadline(project: Path, payload: str | None, deadline: str = "1") -> tuple[str, float]:
    """Run the real claude-hook with a short deadline; *payload* None: stdin is never closed."""
    env = dict(hook_env(project), CLAUDE_HOOK_DEADLINE=deadline)
    started = time.monotonic()
    proc = subprocess.Popen(
        [script("claude-hook"), "pre-tool-use"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        cwd=project,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    if payload is not None:
        proc.stdin.write(payload)
        proc.stdin.close()
    try:
        out = proc.stdout.read()
        proc.wait(timeout=10)
    finally:
        proc.kill()
        proc.wait()
    return out, time.monotonic() - started


@pytest.mark.slow  # over a second
def test_a_hook_that_cannot_answer_in_time_denies_before_claude_code_would_fail_open(project: Path) -> None:
    out, took = _hook_with_deadline(project, None)  # stdin never closes
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny" and "within 1 s" in out
    assert took < 5, "well inside the 10 s Claude Code gives the hook"


@pytest.fixture
def held_lock(project: Path) -> t.Iterator[Path]:
    """The session's state lock held by another process (a stuck writer) for longer than the deadline."""
    d = write_state(project, mine())
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom pathlib import Path\nfrom claude_shepherd.supervisor.session.store import file_lock\n"
            "with file_lock(Path(sys.argv[1])):\n    print('locked', flush=True)\n    time.sleep(30)\n",
            str(d / ".state.json.lock"),
        ],
        stdout=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert holder.stdout is not None and holder.stdout.readline() == b"locked\n"
    yield d
    holder.kill()
    holder.wait()


@pytest.mark.slow  # over a second
def test_a_stuck_hook_denies_a_tool_but_lets_a_session_command_through(
    project: Path, held_lock: Path
) -> None:
    grep = json.dumps(tool(project, "Grep", pattern="x"))
    out, took = _hook_with_deadline(project, grep)
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert took < 2.5, "answered at its own 1 s deadline, not after the 3 s lock wait"
    session_call = json.dumps(bash(project, f"session log {S} <<'EOF'\nx\nEOF"))
    out, took = _hook_with_deadline(project, session_call)
    assert out == "" and took < 2.5, "a lone session command passes every gate anyway"


@pytest.mark.parametrize(
    "planted",
    [{"contextUsage": 0.01, "contextUsageAt": "2999-01-01T00:00:00Z"}, {"contextWindowSize": 10**12}],
)
def test_usage_the_agent_could_write_does_not_outvote_the_transcript(project: Path, planted: dict) -> None:
    """In `claude -p` (no status line) the transcript is the source the agent cannot easily write."""

    write_state(project, mine(**planted))
    transcript = project.parent / "home" / ".claude" / "projects" / "p" / "main.jsonl"
    transcript.parent.mkdir(parents=True, exist_ok=True)
    transcript.write_text(assistant_line(170_000, model="claude-sonnet-4-5") + "\n")  # 85% of 200k
    out = run("pre-tool-use", tool(project, "Grep", pattern="x"), hook_env(project), cwd=project).stdout
    assert "Context overflow" in out


# --------------------------------------------------------------------------- 5. files the gates rely on


def _write_targets(project: Path) -> dict[str, str]:
    home = project.parent / "home"
    bin_dir = Path(sys.executable).parent
    from claude_shepherd import hooks

    return {
        "own state": f"{S}/.state.json",
        "own lock": f"{S}/.state.json.lock",
        "index": "sessions/.shepherd/index.json",
        "other session's handover": "sessions/THEIRS/DEHYDRATED_CONTEXT.md",
        "other session's log": str(project / "sessions/THEIRS/IMPLEMENTATION_LOG.md"),
        "shell snapshot": "~/.claude/shell-snapshots/snapshot-bash-1.sh",
        "session's bash completion": "~/.bash_completions/session.sh",
        "session's zsh completion": "~/.zfunc/_session",
        "session's fish completion": "~/.config/fish/completions/session.fish",
        "fleet's bash completion": "~/.bash_completions/fleet.sh",
        "fleet's zsh completion": "~/.zfunc/_fleet",
        "fleet's fish completion": "~/.config/fish/completions/fleet.fish",
        "Claude's user config": "~/.claude.json",
        "the project's MCP servers": ".mcp.json",
        "bashrc": str(home / ".bashrc"),
        "user settings": "~/.claude/settings.json",
        "project settings": ".claude/settings.local.json",
        "session skill": "~/.claude/skills/session/SKILL.md",
        "user /session command": "~/.claude/commands/session.md",
        "project /session skill": ".claude/skills/session/SKILL.md",
        "project /session command": ".claude/commands/session.md",
        "shim": "~/.cache/claude-shepherd/bin-0123abcd/session",
        "console script": str(bin_dir / "session"),
        "our code": str(Path(hooks.__file__).parent / "cli.py"),
        "dotdot into state": f"sessions/../{S}/.state.json",
    }


@pytest.mark.parametrize("what", list(_write_targets(Path("/p/proj"))))
@pytest.mark.parametrize(
    "tool_name, field",
    [
        ("Write", "file_path"),
        ("Edit", "file_path"),
        ("MultiEdit", "file_path"),
        ("NotebookEdit", "notebook_path"),
    ],
)
def test_file_tools_cannot_write_what_the_gates_rely_on(
    project: Path, what: str, tool_name: str, field: str
) -> None:
    write_state(project, mine())
    write_state(project, {"pid": 0, "skill": "x"}, rel="sessions/THEIRS")
    path = _write_targets(project)[what]
    out = run(
        "pre-tool-use", tool(project, tool_name, **{field: path}), hook_env(project), cwd=project
    ).stdout
    assert out, f"{tool_name} of {what} ({path}) was allowed"
    reason = json.loads(out)["hookSpecificOutput"]["permissionDecisionReason"]
    assert reason.startswith("§CMD_PROTECTED_FILE") and "is refused" in reason


def _code_targets() -> dict[str, str]:
    """Where a planted module would run inside every `session` call or hook."""
    import os as _os

    import claude_shepherd.hooks as our_hooks

    bin_dir = Path(sys.executable).parent
    site = next(p for p in sys.path if p.endswith("site-packages"))
    checkout = Path(our_hooks.__file__).resolve().parent.parent
    return {
        "a module beside the console scripts": str(bin_dir / "argparse.py"),
        "a .pth file": str(Path(site) / "zz_agent.pth"),
        "sitecustomize": str(Path(site) / "sitecustomize.py"),
        "the venv's config": str(Path(sys.prefix) / "pyvenv.cfg"),
        "a module beside our packages": str(checkout / "nt.py"),
        "the standard library": str(Path(_os.__file__).parent / "json" / "__init__.py"),
    }


@pytest.mark.parametrize("what", list(_code_targets()))
def test_file_tools_cannot_plant_code_our_commands_or_hooks_would_load(project: Path, what: str) -> None:
    write_state(project, mine())
    path = _code_targets()[what]
    out = run(
        "pre-tool-use", tool(project, "Write", file_path=path, content="x"), hook_env(project), cwd=project
    ).stdout
    assert "§CMD_PROTECTED_FILE" in out, f"Write of {what} ({path}) was allowed"


@pytest.mark.parametrize(
    "path",
    ["~/.bash_aliases", "~/.bash_logout", "sessions/2026_NEXT_TOPIC", "~/.claude/projects/p/main.jsonl"],
)
def test_shell_files_and_squatted_session_names_are_protected(project: Path, path: str) -> None:
    write_state(project, mine())
    out = run(
        "pre-tool-use", tool(project, "Write", file_path=path, content="x"), hook_env(project), cwd=project
    ).stdout
    assert "§CMD_PROTECTED_FILE" in out, path


def test_a_session_name_with_invisible_characters_is_refused(project: Path, run_session: Run) -> None:
    write_state(project, mine(), rel="sessions/THEIRS")
    one_line_error(
        run_session("activate", "sessions/THEIRS\u200b", "implement"), "invisible or control characters"
    )
    assert sorted(p.name for p in (project / "sessions").iterdir() if not p.name.startswith(".")) == [
        "THEIRS"
    ]


@pytest.mark.parametrize("name", ["\uff33HEIRS", "THEIRS\u2160", "THE\ufb01"])
def test_a_session_name_that_can_pass_for_another_is_refused(
    project: Path, run_session: Run, name: str
) -> None:
    """Fullwidth letters, a Roman numeral, a ligature: each is another name's letters once normalised."""
    write_state(project, mine(), rel="sessions/THEIRS")
    one_line_error(run_session("activate", f"sessions/{name}", "implement"), "stand for others")
    assert sorted(p.name for p in (project / "sessions").iterdir() if not p.name.startswith(".")) == [
        "THEIRS"
    ]


def test_a_plain_file_where_a_session_would_be_says_so(project: Path, run_session: Run) -> None:
    (project / "sessions" / "2026_NEXT").write_text("squat")
    one_line_error(run_session("activate", "sessions/2026_NEXT", "implement"), "exists and is not a folder")


def test_a_symlink_to_a_protected_file_is_judged_by_its_target(project: Path) -> None:
    d = write_state(project, mine())
    (project / "notes.md").symlink_to(d / ".state.json")
    (project / "dangling").symlink_to(project / "sessions" / ".shepherd" / "index.json")
    for path in ("notes.md", "dangling"):
        out = run(
            "pre-tool-use", tool(project, "Write", file_path=path), hook_env(project), cwd=project
        ).stdout
        assert "§CMD_PROTECTED_FILE" in out, path


@pytest.fixture
def other_root(tmp_path: Path, run_session: Run) -> Path:
    """Another project's sessions root, where another agent activated a session (which records the root)."""
    root = tmp_path / "other-project" / "sessions"
    root.mkdir(parents=True)
    r = run_session("activate", "THEIRS", "implement", env={"CLAUDE_SESSIONS_DIR": str(root)})
    assert r.returncode == 0, r.stderr
    (root / ".shepherd" / "panes").mkdir(parents=True, exist_ok=True)
    return root


@pytest.mark.parametrize(
    "target",
    [
        "THEIRS/DEHYDRATED_CONTEXT.md",
        "THEIRS/IMPLEMENTATION_LOG.md",
        ".shepherd/panes/fleet_w_SDK.json",
        "2026_NEXT_TOPIC/notes.md",
    ],
)
@pytest.mark.parametrize(
    "tool_name, field", [("Write", "file_path"), ("Edit", "file_path"), ("NotebookEdit", "notebook_path")]
)
def test_file_tools_cannot_write_another_recorded_sessions_root(
    project: Path, other_root: Path, target: str, tool_name: str, field: str
) -> None:
    write_state(project, mine())
    out = run(
        "pre-tool-use",
        tool(project, tool_name, **{field: str(other_root / target)}),
        hook_env(project),
        cwd=project,
    ).stdout
    assert "§CMD_PROTECTED_FILE" in out and "another sessions root" in out, target


BUDGET_FILES = [
    ".shepherd/spend/duo_agents_A-0a1b2c3d.json",  # an agent's ledger: what it spent
    ".shepherd/spend/duo_agents_A-0a1b2c3d.budget.json",  # whether the gate paused it
    ".shepherd/budgets/duo-01234567.json",  # the fleet's budgets
    ".shepherd/usage/agents/duo_agents_A-0a1b2c3d.json",  # its usage-limit mark
    ".shepherd/usage/credentials/home_.claude-01234567.json",  # a credential's windows
    ".shepherd/usage/resume-slots.json",  # who goes on when after a reset
]


@pytest.mark.parametrize("target", BUDGET_FILES)
@pytest.mark.parametrize("where", ["own root", "through own session", "another root"])
def test_no_file_tool_writes_what_budgets_and_usage_windows_are_measured_by(
    project: Path, other_root: Path, target: str, where: str
) -> None:
    """An agent that could write a ledger, a budget or a mark would raise its budget, lower its spend,
    or pause and park its neighbours: in its own root, through its own session folder, or elsewhere."""
    write_state(project, mine())
    path = {"own root": f"sessions/{target}", "through own session": f"{S}/../{target}",
            "another root": str(other_root / target)}[where]  # fmt: skip
    for tool_name, field in (
        ("Write", "file_path"),
        ("Edit", "file_path"),
        ("NotebookEdit", "notebook_path"),
    ):
        out = run(
            "pre-tool-use", tool(project, tool_name, **{field: path}), hook_env(project), cwd=project
        ).stdout
        assert "§CMD_PROTECTED_FILE" in out, (tool_name, path)


def test_the_registry_of_roots_is_protected_and_protects_no_project_of_the_caller(
    project: Path, other_root: Path, run_session: Run
) -> None:
    write_state(project, mine())
    registry = Path(os.environ["XDG_STATE_HOME"]) / "claude-shepherd" / "roots"
    assert str(other_root.resolve()) in registry.read_text().splitlines()
    env = hook_env(project)
    out = run(
        "pre-tool-use", tool(project, "Write", file_path=str(registry), content=""), env, cwd=project
    ).stdout
    assert "§CMD_PROTECTED_FILE" in out and "registry of sessions roots" in out
    # Anyone can record a root: one around the caller's own project (/, a home) stops nothing of its work.
    assert (
        run_session("activate", "X", "implement", env={"CLAUDE_SESSIONS_DIR": str(project.parent)}).returncode
        == 0
    )
    for path in ("src/app.py", f"{S}/notes.md", str(other_root.parent / "src" / "main.py")):
        assert run("pre-tool-use", tool(project, "Write", file_path=path), env, cwd=project).stdout == "", (
            path
        )


@pytest.mark.parametrize("cwd", ["", "sessions", "sessions/THEIRS"])
def test_cd_into_another_recorded_root_exempts_nothing(project: Path, other_root: Path, cwd: str) -> None:
    """The hook's cwd follows the agent's `cd`; the root and project it is exempted from do not."""
    write_state(project, mine())
    env = hook_env(project, CLAUDE_PROJECT_DIR=str(project))
    where = other_root.parent / cwd
    payload = dict(
        tool(project, "Write", file_path=str(other_root / "THEIRS" / "DEHYDRATED_CONTEXT.md")), cwd=str(where)
    )
    out = run("pre-tool-use", payload, env, cwd=where).stdout
    assert "§CMD_PROTECTED_FILE" in out and "another sessions root" in out, cwd
    relative = dict(env, CLAUDE_SESSIONS_DIR="sessions")  # a root named relative to the cwd moves with it too
    assert "§CMD_PROTECTED_FILE" in run("pre-tool-use", payload, relative, cwd=where).stdout, cwd


def test_the_completion_scripts_a_person_installed_are_protected(project: Path, run_session: Run) -> None:
    """Where `session --install-completion` writes (taken from the installer itself) is where the hook guards."""
    home = project.parent / "home"
    write_state(project, mine())
    for shell in ("bash", "zsh", "fish"):
        r = run_session("--install-completion", shell, env={"HOME": str(home), "CLAUDECODE": ""})
        assert r.returncode == 0, r.stderr
        written = Path(r.stdout.split(" completion installed in ")[1].split(";")[0].split(", loaded")[0])
        assert written.is_file() and written.is_relative_to(home)
        out = run(
            "pre-tool-use",
            tool(project, "Write", file_path=str(written), content="session() { :; }"),
            hook_env(project),
            cwd=project,
        ).stdout
        assert "§CMD_PROTECTED_FILE" in out and "completion script" in out, written


@pytest.mark.parametrize(
    "path", [f"{S}/notes.md", f"{S}/DEHYDRATED_CONTEXT.md", "src/app.py", "/tmp/scratch.txt"]
)
def test_ordinary_files_and_the_own_session_folder_stay_writable(project: Path, path: str) -> None:
    write_state(project, mine())
    assert (
        run("pre-tool-use", tool(project, "Write", file_path=path), hook_env(project), cwd=project).stdout
        == ""
    )


# --------------------------------------------------------------------------- 5b. reading before a session


def _read_before_activation(project: Path, path: str, cwd: Path | None = None) -> str:
    env = dict(hook_env(project), SESSION_REQUIRED="1")
    payload = dict(tool(project, "Read", file_path=path), cwd=str(cwd or project))
    return run("pre-tool-use", payload, env, cwd=cwd or project).stdout


STANDARDS = [
    "~/.claude/CLAUDE.md",
    "~/.claude/COMMANDS.md",
    "~/.claude/agents/ops.md",
    "~/.claude/commands/review.md",
    "~/.claude/skills/implement/SKILL.md",
    "~/.claude/output-styles/terse.md",
    "~/.claude/plugins/marketplaces/x/README.md",
    "~/.claude/.directives/INVARIANTS.md",
    "~/.claude/plugins/marketplaces/x/.gitignore",
]
SECRETS = [
    "~/.claude/.credentials.json",
    "~/.claude/history.jsonl",
    "~/.claude/projects/p/main.jsonl",
    "~/.claude/todos/t.json",
    "~/.claude/settings.local.json",
    "~/.claude/shell-snapshots/s.sh",
    "~/.claude/statsig/x",
    "~/.claude",
    "~/.claude/skills/implement/.env",
    "~/.claude/plugins/x/.credentials.json",
    "~/.claude/settings.json",
    "~/.claude/plugins/marketplaces/x/.git/config",
    "~/.claude/skills/mine/.git/config",
    "~/.claude/.git/config",
]


@pytest.mark.parametrize("path", STANDARDS)
def test_standards_of_the_claude_dir_may_be_read_before_activation(project: Path, path: str) -> None:
    assert _read_before_activation(project, path) == "", path


@pytest.mark.parametrize("path", SECRETS)
def test_secrets_of_the_claude_dir_may_not_be_read_before_activation(project: Path, path: str) -> None:
    assert "§CMD_REQUIRE_ACTIVE_SESSION" in _read_before_activation(project, path), path


def test_no_route_reads_the_credentials_before_activation(project: Path, tmp_path: Path) -> None:
    """Not through a link from a standards folder, nor from a project whose .claude is ~/.claude itself."""
    home = project.parent / "home"
    (home / ".claude" / "skills").mkdir(parents=True)
    (home / ".claude" / ".credentials.json").write_text('{"token": "s3cret"}')
    (home / ".claude" / "skills" / "notes.md").symlink_to(home / ".claude" / ".credentials.json")
    (home / ".claude" / "skills" / "history").symlink_to(home / ".claude" / "projects")
    (home / "sessions").mkdir()
    for path in ("~/.claude/skills/notes.md", "~/.claude/skills/history/p/main.jsonl"):
        assert "§CMD_REQUIRE_ACTIVE_SESSION" in _read_before_activation(project, path), path
    assert "§CMD_REQUIRE_ACTIVE_SESSION" in _read_before_activation(
        project, ".claude/.credentials.json", cwd=home
    )
    dotfiles = tmp_path / "dotfiles-agents"
    dotfiles.mkdir()
    (home / ".claude" / "agents").symlink_to(dotfiles)  # a standards folder kept elsewhere is still standards
    assert _read_before_activation(project, "~/.claude/agents/ops.md") == ""
    assert "§CMD_REQUIRE_ACTIVE_SESSION" in _read_before_activation(project, "~/.claude/agents/.git/config")


# --------------------------------------------------------------------------- 6. code on the gate's path


def test_hooks_in_a_fleet_pane_never_run_a_tmux_planted_on_path(
    project: Path, fleet_pane: FleetPane, tmp_path: Path
) -> None:
    """An agent that writes an executable `tmux` into an early PATH directory gets no code run by the hooks."""
    planted = tmp_path / "bin"
    planted.mkdir()
    ran = tmp_path / "planted-tmux-ran"
    (planted / "tmux").write_text(f"#!/bin/sh\ntouch {ran}\nexit 1\n")
    (planted / "tmux").chmod(0o755)
    write_state(
        project, {"pid": 0, "skill": "implement", "lifecycle": "active", "fleetPaneId": fleet_pane.pane_id}
    )
    stdin = tmp_path / "grep.json"
    stdin.write_text(json.dumps(tool(project, "Grep", pattern="x")))
    env = dict(hook_env(project), SESSION_REQUIRED="1", PATH=f"{planted}:{os.environ['PATH']}")
    env.pop("CLAUDE_SHEPHERD_TMUX", None)
    r = fleet_pane.run([script("claude-hook"), "pre-tool-use"], env=env, cwd=project, input=stdin.read_text())
    assert r.returncode == 0 and r.stdout == "", "the pane's session was found through the real tmux"
    assert not ran.exists(), "the planted tmux never ran"


def test_only_an_absolute_executable_tmux_is_trusted(tmp_path: Path) -> None:
    from claude_shepherd.supervisor.session.programs import TMUX_ENV, tmux_path

    not_executable = tmp_path / "tmux"
    not_executable.write_text("")
    for given in ("relative/tmux", str(not_executable), str(tmp_path)):
        assert tmux_path({TMUX_ENV: given}) == tmux_path({}), given
    real = tmux_path({})
    assert (
        real is not None
        and os.path.isabs(real)
        and os.path.dirname(real) in ("/usr/local/bin", "/usr/bin", "/bin")
    )


# --------------------------------------------------------------------------- 7. heartbeat escapes


def heartbeat_state(**fields: t.Any) -> dict[str, t.Any]:
    return mine(
        **{"logTemplate": TEMPLATE, "toolCallsByTranscript": {"main.jsonl": 9}, "sessionId": CONV, **fields}
    )


def test_only_a_real_log_entry_resets_the_heartbeat(
    project: Path, run_session: Run, other_agent: subprocess.Popen[bytes]
) -> None:
    write_state(project, heartbeat_state())
    write_state(project, theirs(other_agent), rel="sessions/THEIRS")
    assert run_session("log", "--help").returncode == 0
    one_line_error(run_session("log", S, input=""), "nothing to log")
    one_line_error(run_session("log", "sessions/THEIRS", input="x\n"), "not this agent's session")
    assert state_of(project)["toolCallsByTranscript"] == {"main.jsonl": 9}
    assert run_session("log", S, input="real progress\n").returncode == 0
    assert state_of(project)["toolCallsByTranscript"] == {}
    assert "real progress" in (project / S / "IMPLEMENTATION_LOG.md").read_text()


@pytest.mark.parametrize(
    "field, value",
    [
        ("toolUseWithoutLogsBlockAfter", "0"),
        ("toolUseWithoutLogsBlockAfter", "100000"),
        ("toolUseWithoutLogsWarnAfter", "0"),
        ("logTemplate", "null"),
        ("logTemplate", '""'),
    ],
)
def test_update_cannot_switch_the_heartbeat_off(
    project: Path, run_session: Run, field: str, value: str
) -> None:
    write_state(project, heartbeat_state())
    before = snapshot(project / S)
    one_line_error(run_session("update", S, field, value), field)
    assert snapshot(project / S) == before


def test_activation_stdin_cannot_switch_the_heartbeat_off(project: Path, run_session: Run) -> None:
    write_state(project, heartbeat_state())
    for payload in ({"logTemplate": None}, {"toolUseWithoutLogsBlockAfter": 0}):
        one_line_error(run_session("activate", S, "implement", input=json.dumps(payload)))
    assert state_of(project)["logTemplate"] == TEMPLATE


def test_reactivation_and_phase_do_not_reset_the_heartbeat(project: Path, run_session: Run) -> None:
    write_state(project, heartbeat_state())
    conv = {"CLAUDE_CODE_SESSION_ID": CONV}
    assert run_session("activate", S, "implement", env=conv).returncode == 0
    assert "loading" not in state_of(project), "re-activation in the same conversation grants no bootstrap"
    assert run_session("phase", S, "3: Next").returncode == 0
    assert state_of(project)["toolCallsByTranscript"] == {"main.jsonl": 9}
    env = hook_env(project)
    out = run("pre-tool-use", tool(project, "Grep", pattern="x"), env, cwd=project).stdout
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "deny"


@pytest.mark.parametrize(
    "call",
    [
        {"tool_name": "Edit", "file_path": "a.py"},
        {"tool_name": "Task", "prompt": "x"},
        {"tool_name": "Agent", "prompt": "x"},
    ],
)
def test_once_blocked_uncounted_tools_are_blocked_too(project: Path, call: dict[str, str]) -> None:
    write_state(project, heartbeat_state(toolCallsByTranscript={"main.jsonl": 10}))
    env = hook_env(project)
    name = call.pop("tool_name")
    for _ in range(2):
        out = run("pre-tool-use", tool(project, name, **call), env, cwd=project).stdout
        assert "Tool DENIED" in out
    assert (
        run("pre-tool-use", bash(project, f"session log {S} <<'EOF'\nx\nEOF"), env, cwd=project).stdout == ""
    )


def hook(project: Path, payload: dict[str, t.Any]) -> str:
    """The real claude-hook's answer: "" (allowed), or its deny/warning JSON."""
    return run("pre-tool-use", payload, hook_env(project, CLAUDE_CODE_SESSION_ID=CONV), cwd=project).stdout


def heartbeat_denied(out: str) -> bool:
    return "§CMD_LOG_BETWEEN_TOOL_USES" in out and '"deny"' in out


GREP = {"tool_name": "Grep", "pattern": "x"}


def grep(project: Path) -> dict[str, t.Any]:
    return tool(project, "Grep", pattern="x")


def test_an_early_dehydrate_buys_no_uncounted_calls(project: Path, run_session: Run) -> None:
    """Dehydrate (the skill or the command) and re-activate, again and again: the heartbeat still counts."""
    write_state(project, heartbeat_state(toolCallsByTranscript={"main.jsonl": 6}))
    conv = {"CLAUDE_CODE_SESSION_ID": CONV}
    assert not heartbeat_denied(hook(project, tool(project, "Skill", skill="session", args="dehydrate")))
    assert state_of(project)["lifecycle"] == "active", "dehydrating begins only after an overflow"
    assert [heartbeat_denied(hook(project, grep(project))) for _ in range(3)] == [False, False, True]
    assert run_session("activate", S, "implement", env=conv).returncode == 0
    assert heartbeat_denied(hook(project, tool(project, "Skill", skill="session", args="dehydrate")))
    r = run_session(
        "dehydrate", S, input="# Handover\n", env=conv
    )  # no watchdog: the restart is only recorded
    assert r.returncode == 0, r.stderr
    assert "claude-run picks the restart up" in hook(project, grep(project)), (
        "a pending restart denies all but session"
    )
    assert run_session("activate", S, "implement", env=conv).returncode == 0
    assert heartbeat_denied(hook(project, grep(project)))
    assert state_of(project)["toolCallsByTranscript"]["main.jsonl"] >= 10


def test_a_fresh_session_does_not_renew_the_bootstrap(project: Path, run_session: Run) -> None:
    """One conversation gets one bootstrap, and one heartbeat count, across every session it activates
    (a restart request that ended nothing included)."""
    conv = {"CLAUDE_CODE_SESSION_ID": CONV}
    settings = json.dumps({"logTemplate": TEMPLATE, "toolUseWithoutLogsBlockAfter": 3})
    assert run_session("activate", "sessions/A", "implement", input=settings, env=conv).returncode == 0
    assert state_of(project, "sessions/A")["loading"] is True, "the conversation's first activation boots"
    assert run_session("phase", "sessions/A", "2: Work", env=conv).returncode == 0
    assert [heartbeat_denied(hook(project, grep(project))) for _ in range(3)] == [False, False, True]
    for name in ("sessions/B", "sessions/C"):
        assert run_session("activate", name, "implement", input=settings, env=conv).returncode == 0
        assert "loading" not in state_of(project, name)
        assert heartbeat_denied(hook(project, grep(project))), "the conversation's unlogged calls come along"
        assert run_session("log", name, input="progress\n", env=conv).returncode == 0
        assert [heartbeat_denied(hook(project, grep(project))) for _ in range(3)] == [False, False, True]
        assert run_session("restart", name, env=conv).returncode == 0  # drops its sessionId: the chain holds
    fresh = run_session(
        "activate", "sessions/D", "implement", input=settings, env={"CLAUDE_CODE_SESSION_ID": "new"}
    )
    assert fresh.returncode == 0 and state_of(project, "sessions/D")["loading"] is True, (
        "a new conversation boots"
    )


def test_a_log_entry_in_one_session_counts_for_the_conversation(project: Path, run_session: Run) -> None:
    """Back in a session it left, the conversation's count is the one it brings, not a stale one."""
    conv = {"CLAUDE_CODE_SESSION_ID": CONV}
    settings = json.dumps({"logTemplate": TEMPLATE, "toolUseWithoutLogsBlockAfter": 3})
    assert run_session("activate", "sessions/A", "implement", input=settings, env=conv).returncode == 0
    assert run_session("phase", "sessions/A", "2: Work", env=conv).returncode == 0
    assert [heartbeat_denied(hook(project, grep(project))) for _ in range(2)] == [False, False]
    assert run_session("activate", "sessions/B", "implement", input=settings, env=conv).returncode == 0
    assert run_session("log", "sessions/B", input="progress\n", env=conv).returncode == 0
    assert run_session("activate", "sessions/A", "implement", env=conv).returncode == 0
    assert [heartbeat_denied(hook(project, grep(project))) for _ in range(3)] == [False, False, True]


def test_repeated_edits_of_one_file_are_counted(project: Path) -> None:
    write_state(project, heartbeat_state(toolCallsByTranscript={}, toolUseWithoutLogsBlockAfter=3))
    edit = tool(project, "Edit", file_path=str(project / "a.py"), old_string="a", new_string="b")
    assert [heartbeat_denied(hook(project, edit)) for _ in range(3)] == [False, False, True]


PHASES = [
    {"major": 1, "name": "Setup"},
    {"major": 2, "name": "Build"},
    {"major": 3, "name": "Ship", "proof": ["tests_passed"]},
]


def test_reactivation_cannot_redeclare_the_phases(project: Path, run_session: Run) -> None:
    assert run_session("activate", S, "implement", input=json.dumps({"phases": PHASES})).returncode == 0
    assert run_session("phase", S, "1.1: Spike").returncode == 0  # an undeclared sub-phase is added
    before = snapshot(project / S)
    for phases in ([{"major": 1, "name": "Setup"}, {"major": 3, "name": "Ship"}], PHASES[:2], [], "none"):
        one_line_error(
            run_session("activate", S, "implement", input=json.dumps({"phases": phases})),
            "phases were declared",
            "leave phases out",
        )
        assert snapshot(project / S) == before
    again = run_session("activate", S, "implement", input=json.dumps({"phases": PHASES, "note": "x"}))
    assert again.returncode == 0, again.stderr
    st = state_of(project)
    assert st["phases"] == [*PHASES, {"major": 1, "minor": 1, "name": "Spike"}] and st["note"] == "x"
    assert run_session("activate", S, "analyze", input=json.dumps({"phases": PHASES[:1]})).returncode == 0
    assert state_of(project)["phases"] == PHASES[:1], "another skill declares its own"


# --------------------------------------------------------------------------- 8. symlinks


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    target = tmp_path / "outside.txt"
    target.write_text("precious\n")
    return target


def test_session_log_does_not_append_through_a_symlink(
    project: Path, run_session: Run, outside: Path
) -> None:
    d = write_state(project, mine(logTemplate=TEMPLATE))
    (d / "IMPLEMENTATION_LOG.md").symlink_to(outside)
    one_line_error(run_session("log", S, input="x\n"), "symlink")
    assert outside.read_text() == "precious\n"


def test_session_log_does_not_append_through_a_hard_link(
    project: Path, run_session: Run, outside: Path
) -> None:
    d = write_state(project, mine(logTemplate=TEMPLATE))
    os.link(outside, d / "IMPLEMENTATION_LOG.md")
    one_line_error(run_session("log", S, input="x\n"), "hard-linked")
    assert outside.read_text() == "precious\n"


def test_session_continue_does_not_print_a_symlinked_handover(
    project: Path, run_session: Run, outside: Path
) -> None:
    d = write_state(project, mine())
    (d / "DEHYDRATED_CONTEXT.md").symlink_to(outside)
    r = run_session("continue", S)
    assert "precious" not in r.stdout and r.returncode == 1 and "symlink" in r.stderr


def test_the_lock_and_the_index_are_not_created_through_symlinks(
    project: Path, run_session: Run, tmp_path: Path
) -> None:
    d = write_state(project, mine())
    (d / ".state.json.lock").symlink_to(tmp_path / "planted.lock")
    one_line_error(run_session("update", S, "note", "1"), "symlink")
    assert not (tmp_path / "planted.lock").exists()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project / "sessions" / ".shepherd").symlink_to(elsewhere)
    (d / ".state.json.lock").unlink()
    assert run_session("activate", "sessions/B", "implement").returncode == 0
    assert list(elsewhere.iterdir()) == [], "nothing written through the symlinked index folder"


def test_a_symlinked_session_folder_is_refused(project: Path, run_session: Run, tmp_path: Path) -> None:
    real = write_state(project, mine(), rel="sessions/REAL")
    (project / "sessions" / "ALIAS").symlink_to(real)
    one_line_error(run_session("activate", "sessions/ALIAS", "implement"), "symlink")


# --------------------------------------------------------------------------- 9. bad values


def test_no_write_makes_a_state_too_big_for_its_readers(project: Path, run_session: Run) -> None:
    write_state(project, mine())
    before = (project / S / ".state.json").read_bytes()
    huge = json.dumps({"taskSummary": "x" * (1024 * 1024)})
    one_line_error(run_session("activate", S, "implement", input=huge), "would grow past")
    assert (project / S / ".state.json").read_bytes() == before


@pytest.mark.parametrize("pid", [2147483648, 2**63, -7, "12", 1.5, True])
def test_one_bad_pid_costs_only_its_own_file(project: Path, run_session: Run, pid: object) -> None:
    write_state(project, mine())
    write_state(project, {"pid": pid, "skill": "x", "fleetPaneId": "f:w:x"}, rel="sessions/BAD")
    assert run_session("find").stdout.strip() == str(project / S)
    env = dict(hook_env(project), SESSION_REQUIRED="1")
    assert run("pre-tool-use", tool(project, "Grep", pattern="x"), env, cwd=project).stdout == ""


def test_a_tokenless_pid_1_does_not_hold_a_session_forever(project: Path, run_session: Run) -> None:
    write_state(project, {"pid": 1, "skill": "implement", "lifecycle": "active"})
    r = run_session("activate", S, "implement")
    assert r.returncode == 0 and "Took over from supervisor PID 1" in r.stdout


# --------------------------------------------------------------------------- faults of the store


def test_temp_files_of_killed_writers_are_swept_under_the_lock(project: Path, run_session: Run) -> None:
    d = write_state(project, mine())
    for n in range(3):
        (d / f"..state.json.tmp-{99999 + n}-123").write_text("{half")
    (d / ".DEHYDRATED_CONTEXT.md.tmp-1-2").write_text("not ours to sweep here")
    assert run_session("update", S, "note", "1").returncode == 0
    assert sorted(p.name for p in d.iterdir() if "tmp" in p.name) == [".DEHYDRATED_CONTEXT.md.tmp-1-2"]


def test_an_external_edit_is_seen_by_the_next_lookup(project: Path, run_session: Run) -> None:
    """A bash-era script rewrites a state in place; no folder is added or removed."""
    write_state(project, {"pid": 0, "skill": "x"}, rel="sessions/A")
    assert run_session("find").returncode == 1  # the index now knows A, without an owner
    root_mtime = (project / "sessions").stat().st_mtime_ns
    with open(project / "sessions/A/.state.json", "w") as handle:  # in place: the folder's mtime is untouched
        json.dump({"pid": os.getpid(), "skill": "x"}, handle)
    assert (project / "sessions").stat().st_mtime_ns == root_mtime
    assert run_session("find").stdout.strip() == str(project / "sessions/A")


def test_bash_era_agent_json_is_migrated_on_activate(project: Path, run_session: Run) -> None:
    d = project / S
    d.mkdir(parents=True)
    (d / ".agent.json").write_text(json.dumps({"pid": 0, "skill": "implement", "preludeFiles": ["a"]}))
    r = run_session("activate", S, "implement")
    assert r.returncode == 0 and "Migrated .agent.json → .state.json" in r.stdout
    assert not (d / ".agent.json").exists() and state_of(project)["preludeFiles"] == ["a"]


LOCK_HAMMER = """
import sys, time
from pathlib import Path
from claude_shepherd.supervisor.session.store import file_lock
lock, until = Path(sys.argv[1]), time.monotonic() + float(sys.argv[2])
while time.monotonic() < until:
    with file_lock(lock, timeout=30):
        time.sleep(0.0005)
"""

LOCK_WAITER = """
import sys, time
from pathlib import Path
from claude_shepherd.supervisor.session.store import file_lock, LockTimeoutError
time.sleep(0.5)
worst = 0.0
for _ in range(20):
    started = time.monotonic()
    try:
        with file_lock(Path(sys.argv[1]), timeout=2.0):
            pass
    except LockTimeoutError:
        print("starved"); sys.exit(0)
    worst = max(worst, time.monotonic() - started)
print(f"{worst:.3f}")
"""


def test_a_writer_is_not_starved_by_a_dozen_busy_ones(tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    root = Path(__file__).resolve().parents[2]
    hammers = [
        subprocess.Popen([sys.executable, "-c", LOCK_HAMMER, str(lock), "6"], cwd=root) for _ in range(11)
    ]
    try:
        out = subprocess.run(
            [sys.executable, "-c", LOCK_WAITER, str(lock)],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        for proc in hammers:
            proc.kill()
            proc.wait()
    assert out.stdout.strip() != "starved", out.stderr
    assert float(out.stdout) < 2.0
