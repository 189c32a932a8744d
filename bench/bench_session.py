"""Benchmark: session lookup with 10 vs 10,000 sessions, and one locked store update.

Prints figures and ratios measured in the same run; asserts nothing (speed
targets live here, not in tests). Run:

    .venv/bin/python bench/bench_session.py [--runs 15]

Goals: ``session find`` with 10,000 sessions ≤ 1.3 × with 10; one locked update
through the stdlib store from a fresh process ≤ 20 ms at the median; ``session
find`` within 2.5 × of ``python -I -c 'import json'`` with one session; the
start-up of ``session update`` and ``claude-run --help`` as ratios to that floor.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bytecode import compile_package  # bench/, this script's folder

BIN = Path(sys.executable).parent
ME = os.getpid()


def make_root(base: Path, count: int) -> Path:
    root = base / f"sessions_{count}"
    root.mkdir()
    for i in range(count - 1):
        d = root / f"2026_01_01_S{i:05d}"
        d.mkdir()
        state = {"pid": 2**22 + i, "skill": "implement", "lifecycle": "completed", "currentPhase": "3: Build"}
        if i % 10 == 0:
            state["fleetPaneId"] = f"fleet:w{i % 7}:P{i}"
        (d / ".state.json").write_text(json.dumps(state, indent=2))
    mine = root / "2026_01_01_MINE"
    mine.mkdir()
    (mine / ".state.json").write_text(json.dumps({"pid": ME, "skill": "implement", "lifecycle": "active"}))
    return root


def timed(cmd: list[str], env: dict[str, str], runs: int, expect: int = 0) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        samples.append(time.perf_counter() - start)
        if done.returncode != expect:
            raise SystemExit(f"{cmd} exited {done.returncode}: {done.stderr.strip()}")
    return statistics.median(samples) * 1000


LOOKUP = (
    "import os, sys; from pathlib import Path\n"
    "from claude_shepherd.supervisor.session.lookup import find_session\n"
    "f = find_session(Path(sys.argv[1]), pane=None, pid=int(os.environ['CLAUDE_SUPERVISOR_PID']), token=None)\n"
    "assert f is not None\n"
)
UPDATE = (
    "import sys; from pathlib import Path\n"
    "from claude_shepherd.supervisor.session.store import update_state\n"
    "update_state(Path(sys.argv[1]), lambda s: s.__setitem__('n', s.get('n', 0) + 1))\n"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--sessions", type=int, default=10_000, help="the large root (default 10,000)")
    args = parser.parse_args()
    compile_package()
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, {args.runs} runs per figure (median)")
        results: dict[int, tuple[float, float]] = {}
        for count in (10, args.sessions):
            started = time.perf_counter()
            root = make_root(base, count)
            made = time.perf_counter() - started
            env = dict(os.environ, CLAUDE_SESSIONS_DIR=str(root), CLAUDE_SUPERVISOR_PID=str(ME))
            env.pop("TMUX", None)
            first = timed([str(BIN / "session"), "find"], env, 1)  # builds the index
            cli = timed([str(BIN / "session"), "find"], env, args.runs)
            lib = timed([py, "-I", "-c", LOOKUP, str(root)], env, args.runs)
            results[count] = (cli, lib)
            print(
                f"{count:>6} sessions: `session find` {cli:6.1f} ms; stdlib lookup process {lib:5.1f} ms "
                f"(first call, building the index: {first:.0f} ms; created in {made:.1f} s)"
            )
        cli_ratio = results[args.sessions][0] / results[10][0]
        lib_ratio = results[args.sessions][1] / results[10][1]
        print(
            f"ratio {args.sessions:,} / 10: `session find` {cli_ratio:.2f}x, stdlib lookup {lib_ratio:.2f}x "
            f"(goal <= 1.3)"
        )

        target = make_root(base, 2) / "2026_01_01_MINE"
        env = dict(os.environ)
        floor = timed([py, "-I", "-c", "import json"], env, args.runs)
        update = timed([py, "-I", "-c", UPDATE, str(target)], env, args.runs)
        print(
            f"locked store update from a fresh process: {update:.1f} ms median "
            f"(floor `python -I -c 'import json'`: {floor:.1f} ms; ratio {update / floor:.2f}x; goal <= 20 ms)"
        )
        startup(base, args.runs, floor)


def startup(base: Path, runs: int, floor: float) -> None:
    """Each command's start-up with one session, as agents and fleet panes pay it, against the floor."""
    root = make_root(base, 1) if not (base / "sessions_1").exists() else base / "sessions_1"
    env = dict(os.environ, CLAUDE_SESSIONS_DIR=str(root), CLAUDE_SUPERVISOR_PID=str(ME))
    env.pop("TMUX", None)
    mine = str(root / "2026_01_01_MINE")
    commands = {
        "session find": ([str(BIN / "session"), "find"], 2.5),
        "session update": ([str(BIN / "session"), "update", mine, "note", "1"], None),
        "claude-run --help": ([str(BIN / "claude-run"), "--help"], None),
    }
    print("start-up with one session (median wall time; ratio to the floor):")
    for name, (cmd, goal) in commands.items():
        ms = timed(cmd, env, runs)
        target = f" (goal <= {goal}x)" if goal else ""
        print(f"  {name:18s} {ms:6.1f} ms  {ms / floor:5.2f}x{target}")


if __name__ == "__main__":
    main()
