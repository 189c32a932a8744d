"""Benchmark: ``fleet start``, ``status`` and ``stop`` as the fleet grows, each beside its floor.

For each number of agents (4, 8, 16, 32 by default; 8 panes to a tiled
window) and each round, on a private tmux server (socket ``fleet-bench-*``,
its own ``TMUX_TMPDIR``, HOME in a temporary folder), with the real console
scripts of this checkout's .venv and ``tests/fake_claude.py`` as every
agent's Claude:

* tmuxp (when importable): ``tmuxp load -d`` of the same windows and panes,
  each pane running the stand-in Claude itself (no supervisor), timed until
  every stand-in has run its first line; then that server is killed;
* ``fleet start``: until it returns (it waits until each Claude has stayed up
  ``$FLEET_START_SETTLE``, 2 s by default), and until every stand-in has run
  its first line, the figure comparable with tmuxp's; each agent then
  activates a session of its own, as agents do;
* ``fleet status`` (the table, as a person runs it; one call first that is not
  counted), each call beside the floors measured right after it: the bare
  interpreter (``python -c 'import json'``) and one ``tmux list-panes -a`` on
  the fleet's server;
* ``fleet stop``: until it returns; then no process of the round may be left.

Prints min, median and max of each, and the ratios the goals are stated in:
``fleet status`` within 3x (interpreter + one list-panes), flat from 4 to 32
agents; ``fleet start`` of 32 agents within 2x (tmuxp build + the agents' own
start). Figures are wall times, and the CPU (user + system) of each process
with the children it waited for: on a machine others share, compare the
ratios of one run, the CPU ones the steadiest. Asserts nothing. Run:

    .venv/bin/python bench/bench_verbs.py [--agents 4,8,16,32] [--rounds 3]

tmuxp is not a dependency of the project: ``.venv/bin/pip install -e '.[bench]'``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import typing as t
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from bytecode import compile_package  # bench/, this script's folder
from fleet_world import (
    BIN,
    TmuxWorld,
    exit_on_sigterm,
    fleet,
    layout,
    private_tmux,
    stand_in,
    timed,
    until_up,
    working_plan,
)

PER_WINDOW = 8
STATUS_CALLS = 5
"""``fleet status`` calls counted per round (each beside its floors)."""
START_TIMEOUT = 120.0
FLOOR_PYTHON = "floor: python -c 'import json'"
FLOOR_TMUX = "floor: tmux list-panes -a"
STATUS = "fleet status"
START = "fleet start, returns"
START_UP = "fleet start, every agent up"
TMUXP = "tmuxp load -d, returns"
TMUXP_UP = "tmuxp load -d, every agent up"
STOP = "fleet stop, returns"
ROWS = (STATUS, FLOOR_PYTHON, FLOOR_TMUX, START, START_UP, TMUXP, TMUXP_UP, STOP)


def tmuxp_version() -> str | None:
    """tmuxp's version when it is importable here and its console script is beside ours, else None."""
    if importlib.util.find_spec("tmuxp") is None or not (BIN / "tmuxp").exists():
        return None
    from importlib.metadata import version

    return version("tmuxp")


def tmuxp_workspace(agents: int, folder: Path) -> str:
    """The layout's windows and panes for tmuxp, each pane running the stand-in Claude (JSON is YAML)."""
    windows = []
    for first in range(0, agents, PER_WINDOW):
        panes = [
            {"shell_command": [f'FAKE_CLAUDE_LOG="$BENCH_DIR/T{n:02d}.log" exec "$CLAUDE_BIN"']}
            for n in range(first, min(first + PER_WINDOW, agents))
        ]
        windows.append({"window_name": f"w{first // PER_WINDOW}", "layout": "tiled", "panes": panes})
    return json.dumps({"session_name": "plain", "start_directory": str(folder), "windows": windows})


def until_active(sessions: list[Path]) -> None:
    """Until each agent has activated its session (``fleet status`` is measured with a session a pane)."""
    deadline = time.monotonic() + START_TIMEOUT
    while not all((session / ".state.json").exists() for session in sessions):
        if time.monotonic() > deadline:
            missing = [session.name for session in sessions if not (session / ".state.json").exists()]
            raise SystemExit(f"sessions not activated in time: {', '.join(missing)}")
        time.sleep(0.05)


class Times:
    """Wall seconds of each row's samples, and CPU seconds of those that are one process's run."""

    def __init__(self) -> None:
        self.wall: dict[str, list[float]] = defaultdict(list)
        self.cpu: dict[str, list[float]] = defaultdict(list)

    def run(self, row: str, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        wall, cpu = timed(argv, env, cwd, START_TIMEOUT)
        self.wall[row].append(wall)
        self.cpu[row].append(cpu)


@dataclass
class Setup:
    base: Path
    claude: Path
    plan: Path
    working: Path
    project: Path
    tmuxp: bool


def tmuxp_round(setup: Setup, agents: int, world: TmuxWorld, times: Times) -> None:
    """tmuxp builds the windows and panes, each running its stand-in: until every one is up."""
    logs = setup.base / f"tmuxp-{world.tag[:8]}"
    logs.mkdir()
    workspace = setup.base / f"plain-{agents}.yaml"
    workspace.write_text(tmuxp_workspace(agents, setup.project))
    env = world.env(setup.base, setup.claude, FAKE_CLAUDE_SCRIPT=str(setup.plan), BENCH_DIR=str(logs),
                    TMUXP_PROGRESS="0", SHELL="/bin/sh")  # fmt: skip
    began = time.monotonic()
    times.run(
        TMUXP, [str(BIN / "tmuxp"), "load", "-d", "-L", world.socket, str(workspace)], env, setup.project
    )
    times.wall[TMUXP_UP].append(
        until_up([logs / f"T{n:02d}.log" for n in range(agents)], began, START_TIMEOUT)
    )
    world.tmux("kill-server")
    world.wait_gone(30, "killing tmuxp's server")


def fleet_round(setup: Setup, agents: int, world: TmuxWorld, times: Times) -> None:
    """fleet start, status beside its floors, stop: on a fresh server."""
    logs = setup.base / f"fleet-{world.tag[:8]}"
    logs.mkdir()
    sessions = setup.project / "sessions"
    shutil.rmtree(sessions)
    sessions.mkdir()  # every round's agents activate new sessions
    env = world.env(setup.base, setup.claude, FAKE_CLAUDE_SCRIPT=str(setup.working), BENCH_DIR=str(logs),
                    FLEET_START_WAIT=str(START_TIMEOUT))  # fmt: skip
    name = f"bench{agents}"
    socket = ["--socket", world.socket]
    began = time.monotonic()
    times.run(START, [str(BIN / "fleet"), "start", name, "--no-attach", *socket], env, setup.project)
    times.wall[START_UP].append(
        until_up([logs / f"P{n:02d}.log" for n in range(agents)], began, START_TIMEOUT)
    )
    until_active([sessions / f"S_P{n:02d}" for n in range(agents)])

    status = [str(BIN / "fleet"), "status", name, *socket]
    shown = fleet(env, setup.project, *status[1:], "--json")  # not counted: the first call warms the caches
    rows = json.loads(shown.stdout) if shown.returncode == 0 else []
    if len(rows) != agents or not all(row["session_dir"] for row in rows):
        raise SystemExit(
            f"fleet status did not show {agents} agents with a session each: {shown.stdout[-500:]}"
        )
    floors = {
        FLOOR_PYTHON: [sys.executable, "-c", "import json"],
        FLOOR_TMUX: ["tmux", "-L", world.socket, "list-panes", "-a"],
    }
    for _ in range(STATUS_CALLS):
        times.run(STATUS, status, env, setup.project)
        for row, argv in floors.items():
            times.run(row, argv, env, setup.project)

    times.run(STOP, [str(BIN / "fleet"), "stop", name, *socket], env, setup.project)
    world.wait_gone(30, "fleet stop")


def measure(setup: Setup, agents: int, rounds: int) -> Times:
    (setup.project / "tmuxinator" / f"bench{agents}.yml").write_text(
        layout(agents, PER_WINDOW, f"bench{agents}")
    )
    times = Times()
    for _ in range(rounds):
        if setup.tmuxp:
            with private_tmux() as world:
                tmuxp_round(setup, agents, world, times)
        with private_tmux() as world:
            fleet_round(setup, agents, world, times)
    return times


def report(results: dict[int, Times], rounds: int, tmuxp: str | None) -> None:
    versions = subprocess.run(["tmux", "-V"], capture_output=True, text=True).stdout.strip()
    print(f"fleet verbs by number of agents: {os.cpu_count()} CPUs, python {sys.version.split()[0]}, {versions}, "
          f"tmuxp {tmuxp or '-'}; {rounds} round(s), fleet status {STATUS_CALLS}x a round")  # fmt: skip
    print(f"  {'':36s}{'wall: min':>10s}{'median':>8s}{'max':>8s}{'CPU':>8s}  (ms; CPU: median, the "
          "process's and its children's)")  # fmt: skip
    for agents, times in results.items():
        print(f"  {agents} agents")
        for row in ROWS:
            if times.wall.get(row):
                low, mid, high = (1000 * f(times.wall[row]) for f in (min, statistics.median, max))
                cpu = f"{statistics.median(times.cpu[row]) * 1000:8.0f}" if times.cpu.get(row) else ""
                print(f"    {row:32s}{low:10.0f}{mid:8.0f}{high:8.0f}{cpu}")

    def ratio(
        agents: int, measure: str, pick: t.Callable[[list[float]], float]
    ) -> tuple[float, float, float]:
        samples = getattr(results[agents], measure)
        floor = pick(samples[FLOOR_PYTHON]) + pick(samples[FLOOR_TMUX])
        return pick(samples[STATUS]), floor, pick(samples[STATUS]) / floor

    print("fleet status against its floor (python + one list-panes); goal <= 3x, flat:")
    for agents in results:
        parts = [
            f"{how} {status * 1000:4.0f} / {floor * 1000:3.0f} ms = {share:5.2f}x"
            for how, (status, floor, share) in (
                ("wall median", ratio(agents, "wall", statistics.median)),
                ("wall min", ratio(agents, "wall", min)),
                ("CPU median", ratio(agents, "cpu", statistics.median)),
            )
        ]
        print(f"  {agents:3d} agents  " + ";  ".join(parts))
    fewest, most = min(results), max(results)
    if most > fewest:
        for how, measure in (("wall", "wall"), ("CPU", "cpu")):
            low, high = (ratio(n, measure, statistics.median)[0] for n in (fewest, most))
            print(f"  {fewest} -> {most} agents, {how}: {(high - low) / (most - fewest) * 1000:+.1f} ms per agent "
                  f"({high / low:.2f}x)")  # fmt: skip
    if not tmuxp:
        print("fleet start against tmuxp: not measured, tmuxp is not installed (pip install -e '.[bench]')")
        return
    settle = os.environ.get("FLEET_START_SETTLE", "2")
    print(
        f"fleet start of {most} agents against tmuxp's build and the agents' own start, medians; goal <= 2x:"
    )
    floor = statistics.median(results[most].wall[TMUXP_UP])
    for row in (START_UP, START):
        figure = statistics.median(results[most].wall[row])
        extra = f" (it waits until each Claude has stayed up {settle} s)" if row == START else ""
        print(f"  {row:30s}{figure * 1000:6.0f} ms / {floor * 1000:4.0f} ms = {figure / floor:5.2f}x{extra}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", default="4,8,16,32", help="numbers of agents, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    counts = sorted({int(n) for n in args.agents.split(",") if n.strip()})
    if not counts or counts[0] < 1 or args.rounds < 1:
        raise SystemExit("bench_verbs: --agents needs numbers >= 1 (e.g. 4,8,16,32), --rounds a number >= 1")
    exit_on_sigterm()
    compile_package()
    tmuxp = tmuxp_version()
    if tmuxp is None:
        print("bench_verbs: tmuxp is not installed here; its column is skipped (pip install -e '.[bench]')")
    with tempfile.TemporaryDirectory(prefix="bench-verbs-") as tmp:
        base = Path(tmp)
        (base / "home").mkdir()
        project = base / "proj"
        (project / "sessions").mkdir(parents=True)
        (project / "tmuxinator").mkdir()
        claude, plan = stand_in(base)
        setup = Setup(base, claude, plan, working_plan(base), project, tmuxp is not None)
        results = {agents: measure(setup, agents, args.rounds) for agents in counts}
    report(results, args.rounds, tmuxp)


if __name__ == "__main__":
    main()
