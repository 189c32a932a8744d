"""Where ``fleet status`` spends its time: the interpreter, imports, tmux calls, /proc, session state.

For each number of agents, starts a fleet (``bench/fleet_world.py``: stand-in
Claudes that each activate a session) on a private tmux server, then prints:

* ``fleet status`` as a person runs it (a new process) beside its floor,
  ``python -c 'import json'`` and one ``tmux list-panes -a``: wall and CPU
  (user + system, tmux clients included), medians of 5;
* its CPU in parts, from one process that calls the verb twice: the
  interpreter's start and exit, importing the CLI, the verb's lazy imports,
  and the work once everything is imported;
* ``python -X importtime``: all imports, and the costliest packages;
* the work in sections, each timed alone in that process (the best of 5):
  reading the layout, each tmux call, the process table, the rows (/proc
  reads and session state of every pane), the table;
* with ``--top N``, cProfile's N costliest functions of the work.

On a machine others share, the CPU figures are the steadier. Asserts nothing. Run:

    .venv/bin/python bench/profile_status.py [--agents 8,32] [--top 25]
"""

from __future__ import annotations

import argparse
import json
import pstats
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from bytecode import compile_package  # bench/, this script's folder
from fleet_world import BIN, exit_on_sigterm, fleet, layout, private_tmux, stand_in, timed, working_plan

DRIVER = str(Path(__file__).with_name("status_parts.py"))


def imports_by_package(stderr: str) -> tuple[float, dict[str, float]]:
    """Seconds of all imports, and each package's own share (its modules' self times; our modules
    each by name), from ``-X importtime``."""
    total = 0.0
    by: dict[str, float] = defaultdict(float)
    for line in stderr.splitlines():
        found = re.match(r"import time:\s+(\d+) \|\s+(\d+) \| (\s*)(\S+)", line)
        if not found:
            continue
        name = found.group(4)
        by[name if name.startswith("claude_shepherd") else name.split(".")[0]] += int(found.group(1)) / 1e6
        if not found.group(3):  # a top-level import: its cumulative time holds the rest
            total += int(found.group(2)) / 1e6
    return total, by


def parts(verb: list[str], env: dict[str, str], cwd: Path, times: int = 5) -> dict[str, float]:
    """CPU seconds of ``fleet status`` in parts (start, CLI import, lazy imports, work, the rest), from
    the one of *times* new processes that took the least: the least disturbed by other work."""
    runs = []
    for _ in range(times):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run([sys.executable, DRIVER, *verb, "-"], env=env, cwd=cwd, capture_output=True,
                              text=True, check=True, stdin=subprocess.DEVNULL)  # fmt: skip
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        inside = json.loads(done.stdout.splitlines()[-1])
        inside["whole"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        runs.append(inside)
    best = min(runs, key=lambda run: run["first"] + run["cli_import"])
    return {
        # the driver calls twice: a person's process is all it ran but the second call
        "interpreter start and exit": best["whole"] - best["cli_import"] - best["first"] - best["warm"],
        "import the CLI (typer, ...)": best["cli_import"],
        "the verb's lazy imports": best["first"] - best["warm"],
        "the work, once imported": best["warm"],
    }


def run_importtime(verb: list[str], env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run([sys.executable, "-X", "importtime", str(BIN / "fleet"), *verb], env=env, cwd=cwd,
                          capture_output=True, text=True, check=True)  # fmt: skip
    return done.stderr


def least(argv: list[str], env: dict[str, str], cwd: Path, times: int = 5) -> tuple[float, float]:
    """(median wall, median CPU) seconds of *argv* over *times* new processes."""
    runs = [timed(argv, env, cwd) for _ in range(times)]
    return statistics.median(run[0] for run in runs), statistics.median(run[1] for run in runs)


def profile(agents: int, base: Path, top: int) -> None:
    project = base / f"proj{agents}"
    (project / "sessions").mkdir(parents=True)
    (project / "tmuxinator").mkdir()
    (project / "tmuxinator" / "bench.yml").write_text(layout(agents, 8))
    with private_tmux() as world:
        logs = base / f"logs{agents}"
        logs.mkdir()
        env = world.env(base, base / "claude", FAKE_CLAUDE_SCRIPT=str(working_plan(base)), BENCH_DIR=str(logs),
                        FLEET_START_WAIT="120")  # fmt: skip
        started = fleet(env, project, "start", "bench", "--no-attach", "--socket", world.socket)
        if started.returncode != 0:
            raise SystemExit(f"fleet start failed: {started.stderr.strip()}")
        deadline = time.monotonic() + 120
        while not all((project / "sessions" / f"S_P{n:02d}" / ".state.json").exists() for n in range(agents)):
            if time.monotonic() > deadline:
                raise SystemExit("the agents did not activate their sessions in time")
            time.sleep(0.1)
        verb = ["status", "bench", "--socket", world.socket]
        status = least([str(BIN / "fleet"), *verb], env, project)
        python = least([sys.executable, "-c", "import json"], env, project)
        tmux = least(["tmux", "-L", world.socket, "list-panes", "-a"], env, project)
        split = parts(verb, env, project)
        imports, by_package = min(
            (imports_by_package(run_importtime(verb, env, project)) for _ in range(3)),
            key=lambda found: found[0],
        )
        out = base / f"status{agents}.prof"
        driven = subprocess.run([sys.executable, DRIVER, *verb, str(out)], env=env, cwd=project,
                                capture_output=True, text=True, check=True)  # fmt: skip
        sections = json.loads(driven.stdout.splitlines()[-1])["sections"]
        fleet(env, project, "stop", "bench", "--socket", world.socket)

    floor = (python[0] + tmux[0], python[1] + tmux[1])
    print(f"fleet status, {agents} agents (a session each); medians of 5 new processes, wall and CPU (user + "
          "system, tmux clients included):")  # fmt: skip
    for name, (wall, cpu) in (("fleet status", status), ("floor: python -c 'import json'", python),
                              ("floor: tmux list-panes -a", tmux)):  # fmt: skip
        print(f"  {name:32s} wall {wall * 1000:5.0f} ms  CPU {cpu * 1000:5.0f} ms")
    print(
        f"  fleet status against the floor:  wall {status[0] / floor[0]:.2f}x, CPU {status[1] / floor[1]:.2f}x"
    )
    print("  its CPU in parts (the least disturbed of 5 runs):")
    for name, seconds in split.items():
        print(f"    {name:40s}{seconds * 1000:6.0f} ms")
    print(
        f"  imports (-X importtime, the fastest of 3): {imports * 1000:.0f} ms wall; the costliest, self time:"
    )
    for name, seconds in sorted(by_package.items(), key=lambda item: -item[1])[:12]:
        print(f"    {name:40s}{seconds * 1000:6.0f} ms")
    print(
        "  the work once imported, in sections (wall, the best of 5; rows: /proc and session state per pane):"
    )
    for name, seconds in sections.items():
        print(f"    {name:44s}{seconds * 1000:6.1f} ms")
    if top:
        print(f"  the {top} most costly functions of the work once imported (cumulative, under cProfile):")
        pstats.Stats(str(out)).sort_stats("cumulative").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", default="8,32", help="numbers of agents, comma-separated")
    parser.add_argument("--top", type=int, default=0, help="also print cProfile's N most costly functions")
    args = parser.parse_args()
    exit_on_sigterm()
    compile_package()
    with tempfile.TemporaryDirectory(prefix="profile-status-") as tmp:
        base = Path(tmp)
        (base / "home").mkdir()
        stand_in(base)
        for agents in sorted({int(n) for n in args.agents.split(",") if n.strip()}):
            profile(agents, base, args.top)


if __name__ == "__main__":
    main()
