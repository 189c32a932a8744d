"""claude-run's decisions without processes: arguments, prompt, back-off, the loop's classification.

The loop is driven by a scripted runner (the supervisord fake-OS pattern): each
"launch" is a function that may change session state as an agent would and
returns how Claude ended; a fake clock makes back-off deterministic.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import typing as t
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from claude_shepherd.supervisor.claude_run import agent_env, claude_bin, transcripts
from claude_shepherd.supervisor.claude_run import cli as run_cli
from claude_shepherd.supervisor.claude_run.claude_args import launch_argv, split_args
from claude_shepherd.supervisor.claude_run.crashloop import CrashPolicy, CrashTracker
from claude_shepherd.supervisor.claude_run.foreground import Outcome, exit_code
from claude_shepherd.supervisor.claude_run.launch_plan import Owner
from claude_shepherd.supervisor.claude_run.prompt_additions import AgentNameError, build
from claude_shepherd.supervisor.claude_run.supervise import Settings, Supervisor
from claude_shepherd.supervisor.session.identity import start_token

# --------------------------------------------------------------------------- arguments


_PARSE = """
import json, os, sys
from claude_shepherd.supervisor.claude_run import cli as run_cli
try:
    ours, args, values = run_cli.parse(sys.argv[1:], os.environ)
    print(json.dumps({"args": args, "grace": values["grace"], "limit": values["limit"],
                      "heavy": sorted(m for m in ("typer", "click", "pydantic", "hashlib", "argparse") if m in sys.modules)}))
except run_cli.UsageError as exc:
    print(json.dumps({"error": str(exc)}))
"""


def _parse(argv: list[str], env: dict[str, str] | None = None) -> dict[str, t.Any]:
    import subprocess
    import sys

    clean = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_RUN_")}
    out = subprocess.run(
        [sys.executable, "-c", _PARSE, *argv],
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


@pytest.mark.parametrize(
    ("argv", "env", "expected"),
    [
        ([], {}, {"args": [], "grace": 3.0, "limit": 5}),
        (
            ["--kill-grace", "2.5", "--crash-limit", "07", "--model", "x"],
            {},
            {"args": ["--model", "x"], "grace": 2.5, "limit": 7},
        ),
        (
            [],
            {"CLAUDE_RUN_KILL_GRACE": "1", "CLAUDE_RUN_CRASH_LIMIT": "2"},
            {"args": [], "grace": 1.0, "limit": 2},
        ),
        (
            ["--agent", "a", "--", "--kill-grace", "9", "-p", "hi"],
            {},
            {"args": ["--kill-grace", "9", "-p", "hi"], "grace": 3.0, "limit": 5},
        ),
        (["--kill-grace=1e1", "fix it"], {}, {"args": ["fix it"], "grace": 10.0, "limit": 5}),
    ],
)
def test_options_are_parsed_with_the_standard_library(
    argv: list[str], env: dict[str, str], expected: dict[str, t.Any]
) -> None:
    """A fleet starts a claude-run per pane at once: no typer, click, pydantic or hashlib on its path,
    and no argparse for a plain command line (claude-run reads it itself, see the next test)."""
    got = _parse(argv, env)
    assert got == {**expected, "heavy": []}
    assert type(got["grace"]) is float


WORDS = (
    "--agent", "--agent=a", "--agent=", "--description", "--focus=f", "--budget-usd", "--budget-usd=2", "--kill-grace",
    "--kill-grace=2", "--crash-limit", "--restart-window=-1", "--ignore-usage-limits", "--ignore-usage-limits=1",
    "--help", "--version", "--", "-", "-p", "-c", "--model", "--model=opus", "--age", "--agent-x", "--agen=t", "x",
    "fix it", "-1", "-x y", "", "=", "--=x", "a=b",
)  # fmt: skip


@given(st.lists(st.sampled_from(WORDS), max_size=8))
def test_a_command_line_read_without_argparse_is_read_as_argparse_reads_it(argv: list[str]) -> None:
    quick = run_cli._quick(argv)
    if quick is None:
        return  # left to argparse
    full, extras = run_cli.parser().parse_known_args(argv)  # a UsageError here: read what argparse refuses
    assert (vars(quick[0]), quick[1]) == (vars(full), extras)


@pytest.mark.parametrize(
    ("argv", "env", "says"),
    [
        (["--crash-limit", "x"], {}, "--crash-limit must be a whole number, not 'x'"),
        (["--crash-limit", "0"], {}, "--crash-limit must be at least 1"),
        (["--kill-grace", "-1"], {}, "--kill-grace must be at least 0"),
        ([], {"CLAUDE_RUN_BACKOFF": "soon"}, "CLAUDE_RUN_BACKOFF must be a number, not 'soon'"),
        (["--agent"], {}, "argument --agent: expected one argument"),
    ],
)
def test_bad_option_values_are_one_line_usage_errors(argv: list[str], env: dict[str, str], says: str) -> None:
    got = _parse(argv, env)
    assert says in got["error"] and "\n" not in got["error"]


def test_user_arguments_are_split_by_how_long_they_apply() -> None:
    args = split_args(
        ["--model", "opus", "fix it", "--add-dir", "a", "b", "-r", "abc", "-c", "--verbose", "--x=1"]
    )
    assert args.every_launch == ("--model", "opus", "--add-dir", "a", "b", "--verbose", "--x=1")
    assert args.first_launch_selectors == ("-r", "abc", "-c")
    assert args.prompt == ("fix it",)
    assert args.resume_id == "abc" and args.selects_conversation


def test_everything_after_a_double_dash_is_positional() -> None:
    args = split_args(["--verbose", "--", "--not-an-option"])
    assert args.every_launch == ("--verbose",) and args.prompt == ("--not-an-option",)


def test_a_restart_launch_keeps_options_drops_selectors_and_the_first_prompt() -> None:
    user = split_args(["--add-dir", "a", "b", "--resume", "old", "first task"])
    argv = launch_argv("claude", user, system_prompt="extra", prompt="/session continue x")
    # The restart prompt comes before the user's options, so --add-dir cannot swallow it.
    assert argv == ["claude", "--append-system-prompt", "extra", "/session continue x", "--add-dir", "a", "b"]


def test_the_first_launch_keeps_the_users_selectors_and_prompt() -> None:
    user = split_args(["-c", "-p", "hello"])
    argv = launch_argv("claude", user, system_prompt=None, with_selectors=True, with_prompt=True)
    assert argv == ["claude", "hello", "-p", "-c"]


def test_a_prompt_that_starts_with_a_dash_goes_after_double_dash() -> None:
    user = split_args(["--verbose", "--", "-x"])
    argv = launch_argv("claude", user, system_prompt=None, with_prompt=True)
    assert argv == ["claude", "--verbose", "--", "-x"]


def test_our_resume_comes_first() -> None:
    argv = launch_argv("claude", split_args(["--model", "opus"]), system_prompt=None, resume="id-1")
    assert argv == ["claude", "--resume", "id-1", "--model", "opus"]


# --------------------------------------------------------------------------- system prompt


def test_additions_are_description_focus_then_agent(tmp_path: Path) -> None:
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path)}
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "sdk.md").write_text("---\nname: sdk\n---\nYou own the SDK.\n")
    out = build(agent="sdk", description="SDK agent", focus="typing", env=env)
    assert (
        out.text
        == "Agent Description: SDK agent\nFocus Areas: typing\n\n---\nname: sdk\n---\nYou own the SDK."
    )
    assert any("Loaded agent 'sdk'" in note for note in out.notes)


def test_a_missing_agent_file_is_a_warning_and_no_additions(tmp_path: Path) -> None:
    out = build(agent="ghost", description=None, focus=None, env={"CLAUDE_CONFIG_DIR": str(tmp_path)})
    assert out.text == "" and out.notes[0].startswith("WARNING: agent file not found")


@pytest.mark.parametrize("name", ["../x", "a/b", ".hidden", ""])
def test_an_agent_name_that_is_a_path_is_refused(name: str, tmp_path: Path) -> None:
    with pytest.raises(AgentNameError):
        build(agent=name or "/", description=None, focus=None, env={"CLAUDE_CONFIG_DIR": str(tmp_path)})


# --------------------------------------------------------------------------- finding things


def test_transcripts_are_found_under_either_project_spelling(tmp_path: Path) -> None:
    cwd = tmp_path / "my_proj.v2"
    cwd.mkdir()
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}
    assert transcripts.find_transcript("abc", cwd, env) is None
    alnum = str(cwd).replace("/", "-").replace("_", "-").replace(".", "-")
    path = tmp_path / "cfg" / "projects" / alnum / "abc.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("{}\n")
    assert transcripts.find_transcript("abc", cwd, env) == path
    assert transcripts.find_transcript("../abc", cwd, env) is None


def test_config_dir_defaults_to_home_dot_claude(tmp_path: Path) -> None:
    assert transcripts.config_dir({"HOME": str(tmp_path)}) == tmp_path / ".claude"


def test_claude_is_found_by_claude_bin_then_path_then_install_locations(tmp_path: Path) -> None:
    exe = tmp_path / "bin" / "claude"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    home = tmp_path / "home"
    assert claude_bin.find_claude({"CLAUDE_BIN": str(exe), "PATH": "", "HOME": str(home)}) == exe
    assert claude_bin.find_claude({"PATH": str(exe.parent), "HOME": str(home)}) == exe
    assert claude_bin.find_claude({"CLAUDE_BIN": "claude", "PATH": str(exe.parent), "HOME": str(home)}) == exe
    local = home / ".claude" / "local" / "claude"
    local.parent.mkdir(parents=True)
    local.write_text("#!/bin/sh\n")
    local.chmod(0o755)
    assert claude_bin.find_claude({"PATH": "", "HOME": str(home)}) == local
    with pytest.raises(claude_bin.ClaudeNotFoundError, match="CLAUDE_BIN="):
        claude_bin.find_claude({"CLAUDE_BIN": str(tmp_path / "nope"), "PATH": "", "HOME": str(home)})


def test_claude_env_exports_the_contract_and_puts_only_session_first(tmp_path: Path) -> None:
    base = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "WATCHDOG_PID": "1", "KEEP": "yes"}
    env, warnings = agent_env.claude_environment(base, supervisor_pid=4242, sessions_root=tmp_path / "s")
    assert warnings == []
    assert env["CLAUDE_SUPERVISOR_PID"] == "4242" and env["SESSION_REQUIRED"] == "1"
    assert env["CLAUDE_SESSIONS_DIR"] == str(tmp_path / "s") and env["KEEP"] == "yes"
    assert "WATCHDOG_PID" not in env
    first = Path(env["PATH"].split(os.pathsep)[0])
    assert sorted(p.name for p in first.iterdir()) == ["session"]
    assert os.path.samefile(first / "session", agent_env.our_session_command())  # type: ignore[arg-type]
    again, _ = agent_env.claude_environment(env, supervisor_pid=4242, sessions_root=tmp_path / "s")
    assert again["PATH"] == env["PATH"], "idempotent"


def test_the_session_command_is_the_one_beside_claude_run_even_when_claude_run_is_reached_by_a_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripts = tmp_path / "venv" / "bin"
    scripts.mkdir(parents=True)
    for name in ("claude-run", "session"):
        (scripts / name).write_text("#!/bin/sh\n")
        (scripts / name).chmod(0o755)
    elsewhere = tmp_path / "bin"  # a link in a folder of the user's, beside a session of someone else's
    elsewhere.mkdir()
    (elsewhere / "claude-run").symlink_to(scripts / "claude-run")
    (elsewhere / "session").write_text("#!/bin/sh\n")
    (elsewhere / "session").chmod(0o755)
    monkeypatch.setattr("sys.argv", [str(elsewhere / "claude-run")])
    assert agent_env.our_session_command() == scripts / "session"
    beside_python = Path(sys.executable).parent / "session"
    monkeypatch.chdir(elsewhere)  # the agent's folder, with a session of its own in it
    for argv0 in ("-c", "-", "session", ""):  # python -c, python - < script, no name: never read in cwd
        monkeypatch.setattr("sys.argv", [argv0])
        assert agent_env.our_session_command() == beside_python, argv0


# --------------------------------------------------------------------------- back-off


def test_backoff_doubles_is_capped_and_resets_after_a_healthy_run() -> None:
    now = [0.0]
    tracker = CrashTracker(
        CrashPolicy(backoff=1, backoff_max=3, limit=10, window=60, min_uptime=5), lambda: now[0]
    )
    assert [tracker.crashed(0.1).delay for _ in range(4)] == [1, 2, 3, 3]
    assert tracker.crashed(30).delay == 0
    assert tracker.crashed(0.1).delay == 1


def test_burst_limit_counts_only_crashes_within_the_window() -> None:
    now = [0.0]
    tracker = CrashTracker(CrashPolicy(limit=3, window=10), lambda: now[0])
    assert not tracker.crashed(0).give_up
    now[0] = 11
    assert not tracker.crashed(0).give_up
    assert not tracker.crashed(0).give_up
    verdict = tracker.crashed(0)
    assert verdict.give_up and verdict.recent == 3


def test_exit_status_of_a_signal_death_is_128_plus_the_signal() -> None:
    assert exit_code(-signal.SIGTERM) == 143 and exit_code(3) == 3


# --------------------------------------------------------------------------- the loop


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


Launch = t.Callable[[list[str]], tuple[int, float]]
"""What one scripted launch does: takes Claude's argv, returns (status, uptime)."""


class ScriptedRunner:
    def __init__(self, clock: Clock, launches: list[Launch]) -> None:
        self.clock = clock
        self.launches = launches
        self.argvs: list[list[str]] = []
        self.pauses: list[float] = []
        self.stop_signal: int | None = None

    def run(self, path: str, argv: list[str], env: t.Mapping[str, str]) -> Outcome:
        self.argvs.append(argv)
        if not self.launches:
            raise AssertionError(f"unexpected launch #{len(self.argvs)}: {argv}")
        status, uptime = self.launches.pop(0)(argv)
        started = self.clock.now
        self.clock.now += uptime
        return Outcome(status, started, self.clock.now, self.stop_signal)

    def pause(self, seconds: float) -> bool:
        self.pauses.append(seconds)
        self.clock.now += seconds
        return True


ME = Owner(os.getpid(), start_token(os.getpid()))


def session_state(root: Path, name: str, **fields: t.Any) -> Path:
    session = root / name
    session.mkdir(parents=True, exist_ok=True)
    state = {"pid": ME.pid, "pidStart": ME.token, "skill": "implement", "lifecycle": "active"}
    state.update(fields)
    (session / ".state.json").write_text(json.dumps(state))
    return session


def request_restart(session: Path, prompt: str = "/session continue --session s") -> None:
    state = json.loads((session / ".state.json").read_text())
    state.update(killRequested=True, restartPrompt=prompt)
    state.pop("sessionId", None)
    (session / ".state.json").write_text(json.dumps(state))


def make(tmp_path: Path, launches: list[Launch], *, args: list[str] | None = None, **policy: t.Any):
    clock = Clock()
    runner = ScriptedRunner(clock, launches)
    root = tmp_path / "sessions"
    root.mkdir(exist_ok=True)
    settings = Settings(
        claude="claude",
        user_args=split_args(args or []),
        system_prompt=None,
        root=root,
        cwd=tmp_path,
        env={"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")},
        policy=CrashPolicy(**policy),
    )
    lines: list[str] = []
    sup = Supervisor(settings, runner, me=ME, pane_of=lambda: None, say=lines.append, clock=clock)
    return sup, runner, lines, root


def quits(status: int = 0, uptime: float = 30.0) -> Launch:
    return lambda argv: (status, uptime)


def test_a_user_quit_ends_the_loop_with_goodbye(tmp_path: Path) -> None:
    sup, runner, lines, _ = make(tmp_path, [quits(0)])
    assert sup.run() == 0
    assert lines[-1] == "Goodbye." and len(runner.argvs) == 1


def test_a_claude_that_ended_paused_at_its_budget_says_how_to_go_on_exit_4(tmp_path: Path) -> None:
    """The status line ends a lone claude-run's Claude that would follow up a cut-off reply past its
    budget (hooks.cut_off_reply): not a goodbye, but the budget and the command that goes on."""
    from claude_shepherd.supervisor.session import budget_records, pane_records

    def paused_then_quits(argv: list[str]) -> tuple[int, float]:
        agent = pane_records.spot(None, (ME.pid, ME.token))
        assert agent is not None
        raise_ = "claude-run --budget-usd 0.3 -- --resume abc"
        paused = {"scope": "agent", "name": "", "usd": 0.3, "spent": 0.3033, "per": "life", "raise": raise_,
                  "since": 0.0}  # fmt: skip
        budget_records.pause(tmp_path / "sessions", agent[0], paused)
        return 0, 30.0

    sup, _, lines, _ = make(tmp_path, [paused_then_quits])
    assert sup.run() == 4
    assert lines[-1] == (
        "Paused at its budget ($0.30 of $0.30); the conversation is kept. "
        "To go on: claude-run --budget-usd 0.3 -- --resume abc"
    )


def test_a_restart_request_wins_over_the_refused_resume_rule(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    session = session_state(root, "S")

    def resumed_then_restart(argv: list[str]) -> tuple[int, float]:
        request_restart(session, "/session continue --session S")
        return 1, 0.2  # exit 1 right after --resume: would look like a refused resume

    sup, runner, lines, _ = make(tmp_path, [resumed_then_restart, quits(0)], args=["--resume", "abc"])
    assert sup.run() == 0
    assert "--resume" in runner.argvs[0]
    assert runner.argvs[1] == ["claude", "/session continue --session S"]
    assert not any("refused" in line for line in lines)


def test_a_refused_resume_is_retried_once_and_then_counts_as_a_crash(tmp_path: Path) -> None:
    sup, runner, _lines, _ = make(
        tmp_path, [quits(1, 0.3), quits(1, 0.3), quits(0)], args=["-r", "abc", "go"]
    )
    assert sup.run() == 0
    assert runner.argvs[0] == ["claude", "go", "-r", "abc"]
    assert runner.argvs[1] == ["claude", "go"], "fresh, but the first task still has to be sent"
    assert runner.pauses == [0.5], "the second quick exit 1 was a crash"


def test_exit_1_long_after_a_resume_is_a_crash_not_a_refusal(tmp_path: Path) -> None:
    sup, _runner, lines, _ = make(tmp_path, [quits(1, 60.0), quits(0)], args=["-r", "abc"])
    assert sup.run() == 0
    assert any("(crash 1 of 5 allowed within 60s); starting it again" in line for line in lines)
    assert not any("refused" in line for line in lines)


def test_crashes_back_off_and_the_loop_gives_up(tmp_path: Path) -> None:
    sup, runner, lines, _ = make(tmp_path, [quits(9, 0.1)] * 5, limit=5)
    assert sup.run() == 9
    assert runner.pauses == [0.5, 1.0, 2.0, 4.0]
    assert sup.give_up is not None and "5 times within 60s" in sup.give_up.message
    assert "Goodbye." not in lines


def test_a_crash_right_after_a_restart_relaunches_with_the_restart_prompt(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    session = session_state(root, "S")

    def asks_restart(argv: list[str]) -> tuple[int, float]:
        request_restart(session, "/session continue --session S")
        return 143, 20.0

    sup, runner, _lines, _ = make(tmp_path, [asks_restart, quits(139, 0.5), quits(0)])
    assert sup.run() == 0
    assert runner.argvs[1] == runner.argvs[2] == ["claude", "/session continue --session S"]


def test_a_stop_signal_ends_the_loop_with_claudes_status_and_keeps_the_request(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    session = session_state(root, "S")
    holder: dict[str, ScriptedRunner] = {}

    def stopped(argv: list[str]) -> tuple[int, float]:
        request_restart(session)
        holder["r"].stop_signal = signal.SIGTERM
        return 143, 5.0

    sup, runner, _lines, _ = make(tmp_path, [stopped])
    holder["r"] = runner
    assert sup.run() == 143
    assert json.loads((session / ".state.json").read_text())["killRequested"] is True


def test_a_restart_of_a_session_owned_by_someone_else_is_ignored(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    other = session_state(root, "OTHER", pid=1, pidStart=start_token(1))

    def asks(argv: list[str]) -> tuple[int, float]:
        request_restart(other)
        return 0, 5.0

    sup, runner, _lines, _ = make(tmp_path, [asks])
    assert sup.run() == 0 and len(runner.argvs) == 1


def test_a_restart_loop_is_stopped_and_its_request_kept(tmp_path: Path) -> None:
    """A handover that overflows again at once must not loop forever (each round costs a model run)."""
    root = tmp_path / "sessions"
    session = session_state(root, "S")

    def asks_for_restart(argv: list[str]) -> tuple[int, float]:
        request_restart(session, "/session continue --session S")
        return 143, 20.0

    sup, runner, _lines, _ = make(tmp_path, [asks_for_restart] * 4, restart_limit=3, restart_window=600.0)
    assert sup.run() == 1
    assert len(runner.argvs) == 4, "three restarts taken, the fourth request left pending"
    assert sup.give_up is not None and "3 restarts were requested within 600s" in sup.give_up.message
    state = json.loads((session / ".state.json").read_text())
    assert state["killRequested"] is True and state["restartPrompt"], (
        "nothing is lost: the next start continues it"
    )


def test_restarts_spread_over_time_are_not_a_loop(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    session = session_state(root, "S")

    def works_then_restarts(argv: list[str]) -> tuple[int, float]:
        request_restart(session, "/session continue --session S")
        return 143, 400.0  # a long stretch of work between restarts

    sup, runner, _lines, _ = make(
        tmp_path, [works_then_restarts] * 4 + [quits(0)], restart_limit=3, restart_window=600.0
    )
    assert sup.run() == 0 and len(runner.argvs) == 5


def test_a_hook_is_known_as_ours_in_the_form_claude_hook_install_writes_too(tmp_path: Path) -> None:
    """`claude-hook install` writes ``python -I -S …/hooks/__main__.py EVENT`` (``setsid -f`` before the
    StopFailure one): that process is ours and is let finish, as ``claude-hook EVENT`` is; the same
    words naming another file are not."""
    import subprocess
    import sys

    from claude_shepherd.hooks import MAIN
    from claude_shepherd.supervisor.claude_run.subreaper import is_our_hook

    elsewhere = tmp_path / "hooks" / "__main__.py"
    elsewhere.parent.mkdir()
    elsewhere.write_text("import sys; sys.stdin.read()\n")
    procs = [subprocess.Popen([sys.executable, "-I", "-S", str(path), "stop-failure"], stdin=subprocess.PIPE)
             for path in (MAIN, elsewhere)]  # fmt: skip
    try:
        assert [is_our_hook(p.pid) for p in procs] == [True, False]
    finally:
        for proc in procs:
            proc.kill()
            proc.communicate()
