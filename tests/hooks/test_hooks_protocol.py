"""The hook protocol under abuse: garbage in, valid answers out, never a traceback, never "allow".

Claude Code fails open on a crash, a timeout, bad JSON or exit 1
(reference §2), so every one of those would be a silent bypass. Also pins the
hook path to the standard library (start-up cost is the product's latency).
"""

from __future__ import annotations

import io
import json
import os
import random
import re
import subprocess
import sys
import typing as t
from pathlib import Path

import pytest
from support.fixtures import script
from support.hooks import activate, bash, call, hook_env, run, tool

from claude_shepherd.hooks.claude_settings import hook_command
from claude_shepherd.hooks.cli import HOOK_EVENTS, main, run_hook
from claude_shepherd.hooks.input_limits import MAX_INPUT_BYTES
from claude_shepherd.hooks.protocol import parse_input, read_stdin
from claude_shepherd.supervisor.session.store import file_lock

HEAVY = {
    "pydantic",
    "typer",
    "click",
    "rich",
    "textual",
    "libtmux",
    "psutil",
    "filelock",
    "yaml",
    "starlette",
    "uvicorn",
    "anyio",
}
KEYS = [
    "tool_name",
    "tool_input",
    "cwd",
    "transcript_path",
    "session_id",
    "hook_event_name",
    "prompt",
    "source",
    "context_window",
    "cost",
    "agent",
    "model",
    "command",
    "file_path",
    "skill",
    "args",
]
TOOLS = ["Bash", "Read", "Edit", "Write", "Skill", "AskUserQuestion", "Task", "Grep", "", "bash", "Read\x00"]


def garbage_value(rng: random.Random, project: Path, depth: int = 0) -> object:
    kind = rng.randrange(12 if depth < 3 else 7)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 1, 2**70, 3.5, -0.0, 1e308, 76, 0.77])
    if kind == 3:
        return rng.choice(
            [
                "",
                "session find",
                "session find; id",
                "/",
                str(project),
                "relative",
                "~/.claude/x",
                "\ud800",
                "a\x00b",
                "x" * 5000,
                "sessions/../../etc",
                "/dev/null",
                "/proc/self/status",
                "session log d <<'EOF'\nx\nEOF",
                "2026-11-22T10:00:00Z",
                "dehydrate restart",
            ]
        )
    if kind == 4:
        return "".join(chr(rng.randrange(1, 0x3000)) for _ in range(rng.randrange(0, 40)))
    if kind == 5:
        return rng.choice(TOOLS)
    if kind == 6:
        return rng.choice([str(project / "sessions"), str(project / "CLAUDE.md"), str(project.parent)])
    if kind in (7, 8):
        return [garbage_value(rng, project, depth + 1) for _ in range(rng.randrange(0, 4))]
    return {
        rng.choice([*KEYS, "x", "used_percentage", "total_cost_usd", "name"]): garbage_value(
            rng, project, depth + 1
        )
        for _ in range(rng.randrange(0, 6))
    }


def garbage_payload(rng: random.Random, project: Path) -> bytes:
    kind = rng.randrange(10)
    if kind == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(0, 300)))
    if kind == 1:
        return rng.choice(
            [
                b"",
                b" ",
                b"\n",
                b"null",
                b"[]",
                b"42",
                b'"str"',
                b"{",
                b"[" * 50_000,
                b'{"a":' * 5000,
                b"\xff\xfe\x00",
                b"NaN",
                b"{}",
            ]
        )
    if kind == 2:  # a valid payload cut short
        full = json.dumps(tool(project, "Bash", command="git status")).encode()
        return full[: rng.randrange(len(full))]
    payload: dict[str, object] = {
        k: garbage_value(rng, project) for k in rng.sample(KEYS, rng.randrange(0, len(KEYS)))
    }
    if kind < 7:  # mostly well-formed envelopes with garbage inside
        payload.setdefault("tool_name", rng.choice(TOOLS))
        payload.setdefault("cwd", rng.choice([str(project), "/", "", 7, "rel/dir", str(project / "nope")]))
    return json.dumps(payload, allow_nan=True).encode("utf-8", "surrogatepass")


ANSWERED_AS = {"user-prompt-submit": "UserPromptSubmit", "pre-skill-shell-command": "PreSkillShellCommand"}
"""The ``hookEventName`` of an event's answer, where it is not PreToolUse."""


def check_answer(event: str, out: str) -> None:
    assert isinstance(out, str)
    assert '"allow"' not in out
    if event == "status-line":
        assert out and "\n" not in out.rstrip("\n") and "Traceback" not in out
        return
    if out:
        data = json.loads(out)
        spec = data["hookSpecificOutput"]
        assert spec["hookEventName"] == ANSWERED_AS.get(event, "PreToolUse")
        if (
            "permissionDecision" in spec or event == "pre-skill-shell-command"
        ):  # it takes no additionalContext
            assert spec["permissionDecision"] == "deny" and spec["permissionDecisionReason"]
        else:
            assert spec["additionalContext"]


@pytest.mark.slow  # over a second
def test_thousand_garbage_payloads_in_process(project: Path, capfd: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(20261122)
    session_dir = activate(project, logTemplate="/x/TEMPLATE_X_LOG.md", loading=False)
    envs = [hook_env(project), hook_env(project, SESSION_REQUIRED="1")]
    seen = {"deny": 0, "allow": 0, "context": 0}
    for n in range(1000):
        event = HOOK_EVENTS[0] if n % 2 else rng.choice(HOOK_EVENTS)
        raw = garbage_payload(rng, project)
        out = run_hook(event, raw, rng.choice(envs))  # must not raise
        check_answer(event, out)
        if event == "pre-tool-use":
            seen["deny" if "deny" in out else "context" if out else "allow"] += 1
    captured = capfd.readouterr()
    assert "Traceback" not in captured.err and "Traceback" not in captured.out
    assert all(seen.values()), seen  # the corpus reached every kind of answer
    json.loads((session_dir / ".state.json").read_text())  # still a valid state


@pytest.mark.slow  # two dozen real claude-hook processes; test_thousand_garbage_payloads_in_process is the fast one
def test_garbage_payloads_as_real_processes(project: Path) -> None:
    rng = random.Random(7)
    activate(project)
    env = hook_env(project, SESSION_REQUIRED="1")
    for n in range(24):
        event = HOOK_EVENTS[n % len(HOOK_EVENTS)]
        raw = garbage_payload(rng, project)
        done = subprocess.run(
            [script("claude-hook"), event], input=raw, capture_output=True, env=env, timeout=30
        )
        assert done.returncode == 0, (event, raw[:80], done.stderr)
        assert b"Traceback" not in done.stderr
        check_answer(event, done.stdout.decode())


@pytest.mark.parametrize(
    "field, payload",
    [
        ("cwd", lambda p: {**bash(p, "session find"), "cwd": "/a" * 2049}),
        ("transcript_path", lambda p: {**tool(p, "Grep", pattern="x"), "transcript_path": "/" + "t" * 4096}),
        ("tool_name", lambda p: tool(p, "T" * 257)),
        (
            "tool_input.file_path",
            lambda p: tool(p, "Edit", file_path="/a" * 2049, old_string="x", new_string="y"),
        ),
        ("tool_input.notebook_path", lambda p: tool(p, "NotebookEdit", notebook_path="/" + "n" * 4096)),
    ],
)
def test_values_longer_than_anything_real_are_denied_before_any_rule(
    project: Path, field: str, payload: t.Callable[[Path], dict]
) -> None:
    """Normalising, resolving and walking up from a 5 MB path took seconds (and a hook past its timeout
    fails open): such a value is no real input, so the call is denied at once, saying which value."""
    activate(project)  # a live session: nothing else would deny these calls
    answer = call("pre-tool-use", payload(project), hook_env(project))
    assert answer.denied, field
    assert f"its {field} is " in answer.reason and "characters long" in answer.reason


def test_values_of_real_length_are_judged_as_usual(project: Path) -> None:
    activate(project)
    env = hook_env(project)
    deepest = "/a" * 2048  # 4,096 characters: PATH_MAX itself
    assert call("pre-tool-use", {**bash(project, "git status"), "cwd": deepest}, env).allowed
    assert call(
        "pre-tool-use", tool(project, "Edit", file_path=deepest, old_string="x", new_string="y"), env
    ).allowed
    assert call("pre-tool-use", tool(project, "T" * 256), env).allowed


def test_other_events_read_an_overlong_cwd_as_none(project: Path) -> None:
    payload = {**tool(project, "Grep"), "cwd": "/a" * 2049}
    assert parse_input(json.dumps(payload).encode()).cwd == os.getcwd()
    out = run_hook(
        "user-prompt-submit", json.dumps(payload).encode(), hook_env(project, SESSION_REQUIRED="1")
    )
    check_answer("user-prompt-submit", out)
    assert "No active session" in out


def test_stdin_is_read_up_to_its_bound_and_the_rest_drained() -> None:
    stream = io.BytesIO(b"x" * (MAX_INPUT_BYTES + 5000))
    assert len(read_stdin(stream)) == MAX_INPUT_BYTES + 1
    assert stream.read() == b""  # drained: the writer never meets a closed pipe
    assert parse_input(b"{" + b" " * MAX_INPUT_BYTES + b"}").problem == (
        f"the hook input on stdin is over {MAX_INPUT_BYTES // 2**20} MiB, more than any tool call needs; "
        "split the work into smaller tool calls"
    )


def test_an_oversized_input_is_denied_by_the_real_hook(project: Path) -> None:
    """Claude Code writes the whole input: the hook reads its bound, drains the rest, and denies."""
    payload = {**bash(project, "git status"), "pad": "x" * (MAX_INPUT_BYTES + 1024)}
    done = subprocess.run(
        [script("claude-hook"), "pre-tool-use"],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=hook_env(project),
        timeout=60,
    )
    assert done.returncode == 0 and not done.stderr
    reason = json.loads(done.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
    assert "over 8 MiB" in reason


def test_unreadable_input_denies_with_one_line_reason(project: Path) -> None:
    for raw in (b"", b"{not json", b"[1]", b"\xff"):
        answer = call("pre-tool-use", raw, hook_env(project))
        assert answer.denied and "\n" not in answer.reason
        assert answer.reason.startswith(
            "claude-hook pre-tool-use could not check this tool call: the hook input"
        )


def test_internal_error_denies_except_for_the_session_command(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import claude_shepherd.hooks.pre_tool_use as ptu

    def broken(*_a: object, **_k: object) -> None:
        raise RuntimeError("disk\non fire")

    monkeypatch.setattr(ptu, "locate", broken)
    env = hook_env(project)
    answer = call("pre-tool-use", bash(project, "git status"), env)
    assert answer.denied and "RuntimeError: disk on fire" in answer.reason and "\n" not in answer.reason
    assert call("pre-tool-use", bash(project, "session find"), env).allowed


def test_lock_held_too_long_denies_naming_it(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import claude_shepherd.hooks.pre_tool_use as ptu

    session_dir = activate(project)
    monkeypatch.setattr(ptu, "LOCK_TIMEOUT", 0.2)
    with file_lock(session_dir / ".state.json.lock"):
        answer = call("pre-tool-use", tool(project, "Grep", pattern="x"), hook_env(project))
        assert answer.denied and "LockTimeoutError" in answer.reason
        assert call("pre-tool-use", bash(project, "session find"), hook_env(project)).allowed


def test_corrupt_state_file_does_not_crash(project: Path) -> None:
    session_dir = activate(project)
    (session_dir / ".state.json").write_text("{half a file")
    env = hook_env(project, SESSION_REQUIRED="1")
    for event in HOOK_EVENTS:
        out = run_hook(event, json.dumps(tool(project, "Edit", file_path="x")).encode(), env)
        check_answer(event, out)
    assert "No active session" in call("pre-tool-use", tool(project, "Edit", file_path="x"), env).reason


def test_allow_is_an_empty_stdout_from_a_real_process(project: Path) -> None:
    done = run("pre-tool-use", tool(project, "Edit", file_path="x"), hook_env(project), cwd=project)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_cli_usage_and_unknown_event(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bogus"]) == 2
    assert "unknown event 'bogus'" in capsys.readouterr().err
    assert main([]) == 2
    assert main(["--help"]) == 0 and "pre-tool-use" in capsys.readouterr().out


def test_hook_ignores_a_terminal_stdin(project: Path) -> None:
    """Run by hand from a shell, the hook must not wait for input forever."""
    import pty

    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [script("claude-hook"), "pre-tool-use"],
            stdin=follower,
            capture_output=True,
            env=hook_env(project),
            timeout=30,
        )
    finally:
        os.close(leader)
        os.close(follower)
    assert done.returncode == 0 and b"the hook input on stdin is empty" in done.stdout


# --------------------------------------------------------------------------- the hook path stays on the stdlib


def imported_modules(argv: list[str], stdin: dict | str, env: dict[str, str], cwd: Path) -> set[str]:
    """Modules a hook or ``session`` process imports, from ``-X importtime``."""
    if argv[0].endswith(("claude-hook", "session")):  # a console script: run its interpreter explicitly
        argv = [sys.executable, argv[0], *argv[1:]]
    done = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]],
        input=stdin if isinstance(stdin, str) else json.dumps(stdin),
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return {m.group(1) for m in re.finditer(r"^import time:.*\|\s*(\S+)\s*$", done.stderr, re.M)}


HOT_CORE = ("claude_shepherd.hooks", "claude_shepherd.supervisor.session")
"""The hot core's packages (docs/HOT_CORE.md), with the shared modules below."""
HOT_SHARED = {
    "claude_shepherd",
    "claude_shepherd.supervisor",
    "claude_shepherd.supervisor.env",
    "claude_shepherd.supervisor.errors",
    "claude_shepherd.supervisor.printable",
    "claude_shepherd.supervisor.tmux_names",
    "claude_shepherd.supervisor.attention",
    "claude_shepherd.supervisor.pane_notify",
    "claude_shepherd.supervisor.alerts",
}
SESSION_DIR = "sessions/2026_11_22_TOPIC"
SESSION_RUNS: dict[str, tuple[list[str], str]] = {
    "activate": (["activate", "sessions/2026_11_22_OTHER", "implement"], ""),
    "find": (["find"], ""),
    "phase": (["phase", SESSION_DIR, "2: Build"], ""),
    "deactivate": (["deactivate", SESSION_DIR, "--keywords", "auth"], "Built the thing.\n"),
    "restart": (["restart", SESSION_DIR], ""),
    "dehydrate": (["dehydrate", SESSION_DIR, "--no-restart"], "# Handover\n"),
    "continue": (["continue", SESSION_DIR], ""),
    "update": (["update", SESSION_DIR, "toolUseWithoutLogsBlockAfter", "20"], ""),
    "target": (["target", SESSION_DIR, "NOTES.md"], ""),
    "log": (["log", SESSION_DIR], "an entry\n"),
    "list": (["list"], ""),
    "show": (["show", SESSION_DIR], ""),
}
"""One successful run of each ``session`` subcommand, on the session the test activates: (argv, stdin)."""


def test_every_session_command_is_on_the_import_list() -> None:
    from claude_shepherd.supervisor.session.cli import COMMAND_LINE

    assert sorted(SESSION_RUNS) == sorted(row[0] for row in COMMAND_LINE)


def check_hot_path(what: str, modules: set[str]) -> None:
    """What the hot path may import: the standard library and the hot core, never a heavy module."""
    heavy = {m for m in modules if m.split(".")[0] in HEAVY}
    assert not heavy, f"{what} imported {sorted(heavy)}"
    ours = {m for m in modules if m.split(".")[0] == "claude_shepherd"}
    outside = {m for m in ours if not m.startswith(HOT_CORE) and m not in HOT_SHARED}
    assert not outside, f"{what} left the hot core: {sorted(outside)} (it imports {sorted(ours)})"
    assert "claude_shepherd.supervisor.session.state" not in modules  # State is for mypy only
    assert "typing" not in modules, f"{what} imported typing"


@pytest.mark.parametrize(
    ("kind", "name"),
    [("hook", event) for event in HOOK_EVENTS] + [("session", name) for name in SESSION_RUNS],
)
def test_hot_path_imports_no_heavy_module(project: Path, kind: str, name: str) -> None:
    """Each hook event and each ``session`` subcommand, as run: what it imports stays in the hot core."""
    activate(project, logTemplate="/x/TEMPLATE_X_LOG.md", loading=False)
    env = hook_env(project, SESSION_REQUIRED="1")
    if kind == "session":
        env.pop("WATCHDOG_PID", None)
        args, stdin = SESSION_RUNS[name]
        modules = imported_modules([script("session"), *args], stdin, env, project)
        module = "continue_" if name == "continue" else name
        assert f"claude_shepherd.supervisor.session.commands.{module}" in modules, sorted(modules)
        check_hot_path(f"session {name}", modules)
        return
    payload = bash(project, "git status")
    payload["context_window"] = {"used_percentage": 10}
    installed = hook_command(name).split()
    if installed[0].endswith("/setsid"):  # a detached hook (StopFailure): what setsid runs
        installed = installed[2:]
    for argv in ([script("claude-hook"), name], installed):
        modules = imported_modules(argv, payload, env, project)
        assert "claude_shepherd.hooks.cli" in modules, sorted(modules)
        assert "claude_shepherd.supervisor.session.store" in modules or name in ("stop", "notification"), (
            sorted(modules)
        )
        check_hot_path(f"{name} via {argv[0]}", modules)
        assert "subprocess" not in modules  # only needed inside a fleet pane (one tmux call)
        assert (
            "claude_shepherd.supervisor.session.schema" not in modules
            and "claude_shepherd.hooks.install" not in modules
            and "claude_shepherd.hooks.claude_settings" not in modules
        )
