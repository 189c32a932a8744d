"""Benchmark: a PreToolUse hook's answer time against the size of what the agent sends.

A hook that runs past its timeout fails open, so its time must not grow with
its input: a 5 MB ``cwd`` once cost seconds of path normalisation and walking
up from it. Setup as ``bench_hooks`` (an active session owned by this process,
a transcript with real usage); then, interleaved round by round, the installed
command (``python -I -S …/hooks/__main__.py pre-tool-use``, a fresh process
each call) answers:

* a normal Bash call (the reference);
* 4 MiB at ``cwd``, ``tool_name``, ``transcript_path`` and an Edit's
  ``file_path`` (denied: no path or tool name is that long);
* the longest real-sized paths (4,096 characters, 2,048 levels deep) at ``cwd``
  and at an Edit's ``file_path`` (judged like any path);
* 4 MiB in a Bash ``command`` on one line, in a ``session log`` here-document,
  and in a Write's ``content`` (the hook does not need to read it);
* 16 MiB of stdin (over the 8 MiB read: drained, denied).

It prints each input's size, median and worst time, and the median's ratio to
the normal call's. Goal: no input above 3x the normal call. Not a test::

    .venv/bin/python bench/bench_hook_inputs.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_hooks import make_project  # bench/, this script's folder
from bytecode import compile_package

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from claude_shepherd.hooks.claude_settings import PRE_TOOL_USE, hook_command  # noqa: E402

HUGE = 4 * 1024 * 1024
DEEPEST = "/a" * 2048  # 4,096 characters: PATH_MAX


def inputs(project: Path, transcript: Path) -> dict[str, dict[str, object]]:
    def call(tool: str, tool_input: dict[str, object], **envelope: object) -> dict[str, object]:
        return {
            "session_id": "bench",
            "transcript_path": str(transcript),
            "cwd": str(project),
            "hook_event_name": "PreToolUse",
            "tool_name": tool,
            "tool_input": tool_input,
            "tool_use_id": "toolu_1",
            **envelope,
        }

    status = {"command": "git status", "description": "status"}
    log = "session log sessions/2026_11_22_BENCH <<'EOF'\n" + "progress\n" * (HUGE // 9) + "EOF"
    return {
        "normal Bash call": call("Bash", status),
        "cwd 4 MiB": call("Bash", status, cwd="/" + "a" * HUGE),
        "cwd 4,096 chars, 2,048 levels": call("Bash", status, cwd=DEEPEST),
        "tool_name 4 MiB": call("X" * HUGE, status),
        "transcript_path 4 MiB": call("Bash", status, transcript_path="/a" * (HUGE // 2)),
        "Edit file_path 4 MiB": call("Edit", {"file_path": "/a" * (HUGE // 2), "old_string": "x", "new_string": "y"}),
        "Edit file_path 4,096 chars": call("Edit", {"file_path": DEEPEST, "old_string": "x", "new_string": "y"}),
        "Bash command 4 MiB, one line": call("Bash", {"command": "echo " + "a " * (HUGE // 2)}),
        "session log here-doc 4 MiB": call("Bash", {"command": log}),
        "Write content 4 MiB": call("Write", {"file_path": str(project / "big.txt"), "content": "line\n" * (HUGE // 5)}),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    compile_package()
    hook = shlex.split(hook_command(PRE_TOOL_USE))
    with tempfile.TemporaryDirectory() as tmp:
        project, env, transcript = make_project(Path(tmp), 10)
        stdins = {name: json.dumps(data).encode() for name, data in inputs(project, transcript).items()}
        stdins["stdin 16 MiB"] = json.dumps({"tool_name": "Bash", "pad": "x" * (16 * 1024 * 1024)}).encode()
        answers: dict[str, str] = {}
        for name, stdin in stdins.items():  # warm up, and see what each gets
            done = subprocess.run(hook, input=stdin, env=env, cwd=project, capture_output=True, timeout=60)
            assert done.returncode == 0 and not done.stderr, (name, done.stderr[-300:])
            answers[name] = "deny" if b'"deny"' in done.stdout else "note" if done.stdout else "allow"
        times: dict[str, list[float]] = {name: [] for name in stdins}
        for _ in range(args.rounds):
            for name, stdin in stdins.items():
                start = time.perf_counter()
                subprocess.run(hook, input=stdin, env=env, cwd=project, stdout=subprocess.DEVNULL, timeout=60)
                times[name].append(time.perf_counter() - start)

    reference = statistics.median(times["normal Bash call"])
    print(f"PreToolUse answer time by input, fresh process each call, {args.rounds} rounds")
    print(f"{'input':32s} {'stdin':>9s} {'answer':>7s} {'p50 ms':>8s} {'max ms':>8s} {'p50/normal':>11s}")
    for name, samples in times.items():
        p50 = statistics.median(samples)
        size = (
            f"{len(stdins[name]) / 1024:.0f} KiB" if len(stdins[name]) >= 1024 else f"{len(stdins[name])} B"
        )
        print(
            f"{name:32s} {size:>9s} {answers[name]:>7s} {p50 * 1000:8.1f} {max(samples) * 1000:8.1f} "
            f"{p50 / reference:11.2f}"
        )


if __name__ == "__main__":
    main()
