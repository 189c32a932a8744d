"""Benchmark: what the budget gate adds to a PreToolUse hook call in a fleet pane.

Setup as in bench_hooks.py (a sessions root of N sessions, one active session per pane), then, in a
pane of a private tmux server (socket ``fleet-bench-*``, fleet ``bench``, pane ``bench:w:A``) as the
agent would run it, the floor (``python -I -c 'import json'``) and the installed hook are timed:

* without budgets (the fleet wrote no budgets file: one failed ``open``);
* with a pane, a window and a fleet budget, the fleet's spend the sum of AGENTS agents' ledgers (the
  pane's own at 83 %: its first call alerts once, then each call reads every ledger and the gate
  record, and nothing pauses).

Not a test: run it by hand::

    .venv/bin/python bench/bench_budget.py [--rounds 100] [--agents 20]
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_hooks import in_fleet_pane, make_project, payload  # bench/, this script's folder
from bytecode import compile_package

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from claude_shepherd.hooks.claude_settings import PRE_TOOL_USE, hook_command  # noqa: E402
from claude_shepherd.supervisor.session import budget_records, budgets, spend_writes  # noqa: E402


def budgeted(root: Path, agents: int) -> None:
    """A budgets file for fleet ``bench`` and *agents* ledgers of its window ``w`` (``A`` among them)."""
    budgets.write_fleet(
        root,
        "bench",
        {
            "roots": [str(root)],
            "budget": {"usd": 1000.0, "per": "life"},
            "windows": {"w": {"usd": 500.0, "per": "day"}},
            "panes": {"bench:w:A": {"usd": 1.2, "per": "life"}},
        },
    )
    now = time.time()
    for n in range(agents):
        label = "A" if n == 0 else f"P{n}"
        spend_writes.measure(root, f"bench:w:{label}", f"conv-{n}", 1.0, now=now)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--sessions", type=int, default=200)
    args = parser.parse_args()
    compile_package()
    installed = shlex.split(hook_command(PRE_TOOL_USE))
    with tempfile.TemporaryDirectory() as tmp:
        project, env, transcript = make_project(Path(tmp), args.sessions)
        stdin = payload(project, transcript)
        without = in_fleet_pane(Path(tmp), project, env, stdin, installed, args.rounds)
        budgeted(project / "sessions", args.agents)
        held = in_fleet_pane(Path(tmp), project, env, stdin, installed, args.rounds)
        gate = budget_records.read(project / "sessions", "bench:w:A")
    print(
        f"PreToolUse in a fleet pane, budget gate: {args.agents} agents' ledgers, {args.rounds} rounds, "
        f"Python {sys.version.split()[0]}"
    )
    for name, times in (("no budgets", without), (f"pane+window+fleet budgets, {args.agents} ledgers", held)):
        floor, hook = statistics.median(times["floor"]), statistics.median(times["hook"])
        print(
            f"{name:45s} floor {floor * 1000:6.1f} ms, hook {hook * 1000:6.1f} ms, "
            f"{(hook - floor) * 1000:6.1f} ms above the floor"
        )
    added = statistics.median(held["hook"]) - statistics.median(without["hook"])
    print(f"the budget gate adds {added * 1000:.1f} ms (median); gate record: {json.dumps(gate)}")


if __name__ == "__main__":
    main()
