"""Benchmark: memory per supervised agent — claude-run and its watchdog, as a fleet runs them.

Starts N ``claude-run`` processes side by side, each supervising a stand-in
Claude that only sleeps, and reads the proportional set size (PSS: shared
pages divided among the processes sharing them, so N agents add up to what
they really cost) of every claude-run and its watchdog from
``/proc/PID/smaps_rollup``. Prints figures; asserts nothing. Run:

    .venv/bin/python bench/bench_memory.py [--agents 16]

Goal: claude-run and its watchdog together at most 8 MiB PSS per agent. The package's bytecode is
brought up to date first, as an install leaves it.
Linux only (``smaps_rollup``).
"""

from __future__ import annotations

import argparse
import compileall
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
WATCHDOG_NAME = "claude-watchdog"


def pss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1])
    raise RuntimeError(f"no Pss line for {pid}")


def watchdog_of(pid: int) -> int | None:
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            if Path(f"/proc/{child}/comm").read_text().strip() == WATCHDOG_NAME:
                return int(child)
    return None


def compile_package() -> None:
    """Write the bytecode of claude-run's modules where it is missing or stale: with
    ``PYTHONDONTWRITEBYTECODE`` set, or modules edited since, every claude-run would compile them from
    source, and the compiler's leftovers would be measured too (0.5 MiB and more per agent)."""
    import claude_shepherd.supervisor

    for folder in claude_shepherd.supervisor.__path__:
        compileall.compile_dir(folder, quiet=1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=16)
    args = parser.parse_args()
    compile_package()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        claude = base / "claude"
        claude.write_text("#!/bin/sh\nexec sleep 600\n")
        claude.chmod(0o755)
        env = dict(os.environ, CLAUDE_BIN=str(claude), HOME=str(base))
        env.pop("TMUX", None)
        runs = []
        for n in range(args.agents):
            project = base / f"p{n}"
            (project / "sessions").mkdir(parents=True)
            runs.append(
                subprocess.Popen(
                    [str(BIN / "claude-run")],
                    cwd=project,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        try:
            deadline = time.monotonic() + 30
            watchdogs: dict[int, int] = {}
            while len(watchdogs) < len(runs) and time.monotonic() < deadline:
                for run in runs:
                    found = watchdog_of(run.pid)
                    if found:
                        watchdogs[run.pid] = found
                time.sleep(0.1)
            time.sleep(1.0)  # settled: every claude-run waits on its Claude
            supervisors = sum(pss_kib(run.pid) for run in runs) / len(runs) / 1024
            dogs = sum(pss_kib(pid) for pid in watchdogs.values()) / max(len(watchdogs), 1) / 1024
        finally:
            for run in runs:
                run.terminate()
            for run in runs:
                run.wait(timeout=30)
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} cpus; {args.agents} supervised agents side by side"
    )
    print(
        f"PSS per agent: claude-run {supervisors:.1f} MiB + watchdog {dogs:.1f} MiB = "
        f"{supervisors + dogs:.1f} MiB (goal <= 8 MiB)"
    )


if __name__ == "__main__":
    main()
