"""Benchmark: what one PreToolUse hook call costs, from a fresh process.

Setup: a scratch project whose sessions root holds 1,000 sessions (dead owners,
half of them bound to fleet panes) plus one active session owned by this
process, with a transcript carrying real usage. Then, interleaved round by
round so machine noise hits every command alike, it times:

* the floor, ``python -I -c 'import json'``;
* ``claude-hook pre-tool-use`` (the console script);
* the installed command, ``python -I -S …/hooks/__main__.py pre-tool-use``;
* the installed command while the heartbeat counts (a state write per call);
* the installed command under ``claude-run --budget-usd`` with a new reply in the transcript before
  each call: the budget gate prices the reply (reads the transcript from where it stopped) and
  writes the agent's spend ledger;
* the installed PostToolBatch hook of such an agent, once per batch of tool calls (the budget's last
  word before the next request: it prices what the transcripts gained);
* the installed command in a fleet pane, where every call also asks tmux for
  the pane's identity and publishes its state: a driver runs in a pane of a
  private tmux server (socket ``fleet-bench-*``) as the agent would, activates
  a session there (bound to the pane) and times the floor and the hook itself;
* the same for the installed status line (it runs on every render of Claude's
  screen: binds the conversation, records the pane's and the usage windows, publishes context and cost).

It prints medians, 90th percentiles and each median's ratio to the floor.
Not a test: run it by hand::

    .venv/bin/python bench/bench_hooks.py [--rounds 200] [--sessions 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import typing as t
from pathlib import Path

from bytecode import compile_package  # bench/, this script's folder

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from claude_shepherd.hooks.claude_settings import POST_TOOL_BATCH, PRE_TOOL_USE, STATUS_LINE, hook_command  # noqa: E402
from claude_shepherd.supervisor.session.fields import STATE_FILE, F  # noqa: E402

BIN = Path(sys.executable).parent


def make_project(base: Path, sessions: int) -> tuple[Path, dict[str, str], Path]:
    project = base / "proj"
    root = project / "sessions"
    root.mkdir(parents=True)
    for n in range(sessions):
        state = {
            F.PID: 4_000_000 + n,  # above pid_max: never alive
            F.SKILL: "implement",
            F.LIFECYCLE: "active" if n % 3 else "completed",
            F.CURRENT_PHASE: "3: Build",
            F.CONTEXT_USAGE: 0.1,
            F.LAST_HEARTBEAT: "2026-11-01T00:00:00Z",
        }
        if n % 2:
            state[F.FLEET_PANE_ID] = f"fleet:w{n % 7}:pane{n}"
        (root / f"2026_11_{n % 28 + 1:02d}_S{n:04d}").mkdir()
        (root / f"2026_11_{n % 28 + 1:02d}_S{n:04d}" / STATE_FILE).write_text(json.dumps(state))
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    env.update(
        CLAUDE_SESSIONS_DIR=str(root),
        CLAUDE_SUPERVISOR_PID=str(os.getpid()),
        SESSION_REQUIRED="1",
        HOME=str(base / "home"),
    )
    active = "sessions/2026_11_22_BENCH"
    subprocess.run(
        [str(BIN / "session"), "activate", active, "implement"],
        cwd=project,
        env=env,
        check=True,
        capture_output=True,
        stdin=subprocess.DEVNULL,
    )
    transcript = base / "home" / ".claude" / "projects" / "-proj" / "bench.jsonl"
    transcript.parent.mkdir(parents=True)
    line = {
        "type": "assistant",
        "timestamp": "2026-11-22T10:00:00.000Z",
        "message": {
            "model": "claude-opus-5-5",
            "role": "assistant",
            "content": [],
            "usage": {
                "input_tokens": 1000,
                "cache_creation_input_tokens": 5000,
                "cache_read_input_tokens": 150000,
                "output_tokens": 50,
            },
        },
    }
    transcript.write_text(
        "\n".join(json.dumps({"type": "user", "n": i}) for i in range(50)) + "\n" + json.dumps(line) + "\n"
    )
    return project, env, transcript


def payload(project: Path, transcript: Path) -> bytes:
    return json.dumps(
        {
            "session_id": "bench",
            "transcript_path": str(transcript),
            "cwd": str(project),
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "git status", "description": "status"},
            "tool_use_id": "toolu_1",
        }
    ).encode()


def replying(project: Path, transcript: Path) -> t.Callable[[], bytes]:
    """Stdin for one call of a budgeted agent, after appending the reply that asks for it (a tool result
    and a new assistant line, as Claude writes them) to *transcript*."""
    count = iter(range(1_000_000))

    def next_call() -> bytes:
        n = next(count)
        tool_use = f"toolu_b{n}"
        reply = {
            "type": "assistant",
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
            "message": {
                "id": f"msg_b{n}", "model": "claude-opus-5-5", "role": "assistant",
                "content": [{"type": "tool_use", "id": tool_use, "name": "Bash", "input": {"command": "ls"}}],
                "usage": {"input_tokens": 1000, "cache_creation_input_tokens": 500,
                          "cache_read_input_tokens": 150000, "output_tokens": 50},
            },
        }  # fmt: skip
        result = {"type": "user", "message": {"role": "user", "content": "x" * 2000}}
        with transcript.open("a") as out:
            out.write(json.dumps(result) + "\n" + json.dumps(reply) + "\n")
        data = json.loads(payload(project, transcript))
        return json.dumps({**data, "tool_use_id": tool_use}).encode()

    return next_call


def batch_of(call: t.Callable[[], bytes]) -> t.Callable[[], bytes]:
    """Stdin of a PostToolBatch hook for the call *call* makes (after its reply was appended)."""

    def next_batch() -> bytes:
        data = json.loads(call())
        batch = [{"tool_use_id": data["tool_use_id"], "tool_name": "Bash", "tool_input": data["tool_input"]}]
        return json.dumps(  # a conversation of its own: the ledger keeps a read offset per conversation
            {**data, "session_id": "bench-batch", "hook_event_name": "PostToolBatch", "tool_calls": batch}
        ).encode()

    return next_batch


def status_payload(project: Path) -> bytes:
    """What Claude Code pipes to the status line after a turn (cost and context known)."""
    return json.dumps(
        {
            "session_id": "bench",
            "cwd": str(project),
            "cost": {"total_cost_usd": 1.25},
            "context_window": {"used_percentage": 30, "context_window_size": 200000},
            # a subscription login: the usage windows are recorded per credential (written on a change only)
            "rate_limits": {
                "five_hour": {"used_percentage": 42, "resets_at": time.time() + 3600},
                "seven_day": {"used_percentage": 17, "resets_at": time.time() + 500000},
            },
        }
    ).encode()


DRIVER = """\
import json, os, subprocess, sys, time
cfg = json.load(open(sys.argv[1]))
subprocess.run(cfg["activate"], cwd=cfg["cwd"], check=True, capture_output=True, stdin=subprocess.DEVNULL)
stdin = cfg["stdin"].encode()
for _ in range(3):
    done = subprocess.run(cfg["hook"], input=stdin, cwd=cfg["cwd"], capture_output=True)
    assert done.returncode == 0 and (done.stdout == b"" or not cfg["quiet"]) and not done.stderr, done
times = {"floor": [], "hook": []}
for _ in range(cfg["rounds"]):
    for name in times:
        began = time.perf_counter()
        subprocess.run(cfg[name], input=stdin, cwd=cfg["cwd"], stdout=subprocess.DEVNULL)
        times[name].append(time.perf_counter() - began)
with open(cfg["out"] + ".tmp", "w") as out:
    json.dump(times, out)
os.replace(cfg["out"] + ".tmp", cfg["out"])
"""


def in_fleet_pane(
    base: Path,
    project: Path,
    env: dict[str, str],
    stdin: bytes,
    hook: list[str],
    rounds: int,
    *,
    quiet: bool = True,
) -> dict[str, list[float]]:
    """Floor and hook times measured by a driver running in a fleet pane (see the module's docstring)."""
    import shutil
    import uuid

    tmux = shutil.which("tmux")
    if tmux is None:
        raise SystemExit("tmux is not installed")
    base = Path(tempfile.mkdtemp(dir=base))
    tmux_dir = base / "tmux"
    tmux_dir.mkdir(mode=0o700)
    socket = f"fleet-bench-{uuid.uuid4().hex[:12]}"
    pane_env = {k: v for k, v in env.items() if k != "CLAUDE_SUPERVISOR_PID"}
    pane_env.update(TMUX_TMPDIR=str(tmux_dir), CLAUDE_SHEPHERD_TMUX=tmux)
    out = base / "pane-times.json"
    config = base / "driver.json"
    config.write_text(json.dumps({
        "activate": [str(BIN / "session"), "activate", "sessions/2026_11_22_PANE", "implement"],
        "cwd": str(project), "stdin": stdin.decode(), "hook": hook, "rounds": rounds, "out": str(out), "quiet": quiet,
        "floor": [sys.executable, "-I", "-c", "import json"],
    }))  # fmt: skip
    (base / "driver.py").write_text(DRIVER)

    def run_tmux(*args: str) -> str:
        return subprocess.run([tmux, "-L", socket, *args], env=pane_env, capture_output=True, text=True,
                              timeout=10).stdout  # fmt: skip

    try:
        run_tmux("-f", "/dev/null", "new-session", "-d", "-s", "bench", "-n", "w", "-c", str(project),
                 f"{sys.executable} {base / 'driver.py'} {config}")  # fmt: skip
        run_tmux("set-option", "-t", "bench", "remain-on-exit", "on")
        run_tmux("set-option", "-p", "-t", "bench:w", "@pane_label", "A")
        deadline = time.monotonic() + 60 + rounds * 2
        while not out.exists():
            if (
                time.monotonic() > deadline
                or run_tmux("display-message", "-p", "-t", "bench:w", "#{pane_dead}") == "1\n"
            ):
                raise SystemExit(
                    "the fleet-pane driver failed:\n" + run_tmux("capture-pane", "-p", "-t", "bench:w")
                )
            time.sleep(0.2)
        return json.loads(out.read_text())
    finally:
        run_tmux("kill-server")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=1000)
    args = parser.parse_args()
    compile_package()
    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        project, env, transcript = make_project(Path(tmp), args.sessions)
        counting_env = dict(env)
        stdin = payload(project, transcript)
        installed = shlex.split(hook_command(PRE_TOOL_USE))
        commands = {
            "floor: python -I -c 'import json'": ([python, "-I", "-c", "import json"], env),
            "claude-hook pre-tool-use": ([str(BIN / "claude-hook"), "pre-tool-use"], env),
            "installed: python -I -S hooks/__main__.py": (installed, env),
        }
        # A second active session whose heartbeat counts: every call writes the state.
        counting = "sessions/2026_11_22_COUNTING"
        counting_env["CLAUDE_SUPERVISOR_PID"] = str(os.getppid())
        settings = json.dumps(
            {F.LOG_TEMPLATE: "~/.claude/TEMPLATE_IMPLEMENTATION_LOG.md", F.BLOCK_AFTER: 50, F.WARN_AFTER: 50}
        ).encode()
        for argv, given in (
            (["activate", counting, "implement"], settings),
            (["phase", counting, "2: Work"], b""),
        ):
            subprocess.run(
                [str(BIN / "session"), *argv],
                cwd=project,
                env=counting_env,
                check=True,
                capture_output=True,
                input=given,
            )
        commands["installed, heartbeat writing state"] = (installed, counting_env)
        budget_env = dict(env, CLAUDE_SHEPHERD_BUDGET_USD="1000")
        budget_transcript = transcript.with_name("budget.jsonl")
        budget_transcript.write_text(transcript.read_text())
        commands["installed, --budget-usd, a new reply each call"] = (installed, budget_env)
        stdin_of = {"installed, --budget-usd, a new reply each call": replying(project, budget_transcript)}
        batch_transcript = transcript.with_name("batch.jsonl")
        batch_transcript.write_text(transcript.read_text())
        batch = "post-tool-batch, --budget-usd, per batch"
        commands[batch] = (shlex.split(hook_command(POST_TOOL_BATCH)), budget_env)
        stdin_of[batch] = batch_of(replying(project, batch_transcript))

        for name, (argv, run_env) in commands.items():  # warm up: bytecode, index, page cache
            for _ in range(3):
                given = stdin_of[name]() if name in stdin_of else stdin
                done = subprocess.run(argv, input=given, env=run_env, cwd=project, capture_output=True)
                assert done.returncode == 0 and not done.stderr, done
                assert done.stdout == b"", done.stdout  # an active session: allowed, silently
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.rounds):
            for name, (argv, run_env) in commands.items():
                given = stdin_of[name]() if name in stdin_of else stdin
                start = time.perf_counter()
                subprocess.run(argv, input=given, env=run_env, cwd=project, stdout=subprocess.DEVNULL)
                times[name].append(time.perf_counter() - start)
        state = json.loads((project / counting / STATE_FILE).read_text())
        counted = sum(state.get(F.TOOL_CALLS_BY_TRANSCRIPT, {}).values())
        pane = in_fleet_pane(Path(tmp), project, env, stdin, installed, args.rounds)
        status_line = in_fleet_pane(
            Path(tmp),
            project,
            env,
            status_payload(project),
            shlex.split(hook_command(STATUS_LINE)),
            args.rounds,
            quiet=False,
        )

    floor = statistics.median(times[next(iter(times))])
    print(
        f"PreToolUse hook latency, fresh process each call: {args.sessions} sessions on disk, "
        f"{args.rounds} rounds, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}"
    )
    print(f"{'command':45s} {'p50 ms':>8s} {'p90 ms':>8s} {'p50/floor':>10s}")
    for name, samples in times.items():
        samples.sort()
        p50 = statistics.median(samples)
        p90 = samples[int(len(samples) * 0.9) - 1]
        print(f"{name:45s} {p50 * 1000:8.1f} {p90 * 1000:8.1f} {p50 / floor:10.2f}")
    print(f"(heartbeat counted {counted} calls in the writing session: every call wrote the state)")
    pane_floor, pane_hook = statistics.median(pane["floor"]), statistics.median(pane["hook"])
    print(
        f"in a fleet pane (tmux identity and state each call): floor {pane_floor * 1000:.1f} ms, "
        f"installed hook {pane_hook * 1000:.1f} ms = {pane_hook / pane_floor:.2f}x its floor"
    )
    line_floor, line_hook = statistics.median(status_line["floor"]), statistics.median(status_line["hook"])
    print(
        f"status line in a fleet pane (binds the session, publishes context and cost): floor "
        f"{line_floor * 1000:.1f} ms, installed {line_hook * 1000:.1f} ms = {line_hook / line_floor:.2f}x its floor"
    )


if __name__ == "__main__":
    main()
