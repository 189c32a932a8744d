"""What the fleet benches share: stand-in Claudes, the ``fleet`` console script, a private tmux world.

The pieces of the test harness (``tests/support/``) serve here too: every
process a bench starts carries the harness's tag in its environment, so it
can be found by that tag and killed by PID; each world has its own
``TMUX_TMPDIR`` and a socket named ``fleet-bench-*`` (never the user's server,
never the socket ``fleet``), which :func:`private_tmux` kills on the way out —
on an error, Ctrl-C or SIGTERM (see :func:`exit_on_sigterm`) too.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import typing as t
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the test harness: support/

from support.claude_run import BIN, FAKE_CLAUDE, reap, tagged  # noqa: E402
from support.claude_run import TAG_ENV as TAG  # noqa: E402
from support.fleet import ACTIVATE, running  # noqa: E402

PLAN = {"invocations": [], "default": [{"wait": None}]}
"""The stand-in's plan: start, log it, and wait until a signal ends it."""


def stand_in(base: Path) -> tuple[Path, Path]:
    """Write a ``claude`` that execs tests/fake_claude.py, and its plan, into *base*: (claude, plan)."""
    claude = base / "claude"
    claude.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_CLAUDE}" "$@"\n')
    claude.chmod(0o755)
    plan = base / "plan.json"
    plan.write_text(json.dumps(PLAN))
    return claude, plan


def working_plan(base: Path) -> Path:
    """A plan for fleet panes whose agents work as the tests' do: each activates its own session
    (``sessions/S_<label>``, bound to its pane), then waits; so ``fleet status`` reads a session a pane."""
    plan = base / "working.json"
    plan.write_text(
        json.dumps({"invocations": [], "default": [{"run": ["sh", "-c", ACTIVATE]}, {"wait": None}]})
    )
    return plan


def layout(panes: int, per_window: int | None = None, name: str = "bench") -> str:
    """A tmuxinator layout *name* of *panes* agents ``P00``, ``P01``, … (*per_window* to a tiled
    window), each logging to ``$BENCH_DIR/<label>.log``."""
    per_pane = (
        "L=$(tmux display-message -p -t \"$TMUX_PANE\" '#{@pane_label}'); "
        'export FAKE_CLAUDE_LOG="$BENCH_DIR/$L.log"'
    )
    per_window = per_window or panes
    windows = ""
    for first in range(0, panes, per_window):
        rows = "".join(
            f"        - P{n:02d}: claude-run\n" for n in range(first, min(first + per_window, panes))
        )
        windows += f"  - w{first // per_window}:\n      layout: tiled\n      panes:\n{rows}"
    return f"name: {name}\npre_window: {json.dumps(per_pane)}\nwindows:\n{windows}"


def first_start(log: Path) -> float | None:
    """When the stand-in logging to *log* ran its first line (``time.monotonic()``), or None yet."""
    try:
        for line in log.read_text().splitlines():
            event = json.loads(line)
            if event.get("event") == "start":
                return float(event["t"])
    except (OSError, ValueError):
        return None
    return None


def until_up(logs: list[Path], began: float, timeout: float) -> float:
    """Seconds from *began* (``time.monotonic()``) until every stand-in logging to *logs* ran its first
    line; SystemExit when some have not within *timeout*."""
    deadline = time.monotonic() + timeout
    while True:
        starts = [first_start(log) for log in logs]
        if all(s is not None for s in starts):
            return max(t for t in starts if t is not None) - began
        if time.monotonic() > deadline:
            raise SystemExit(
                f"only {sum(s is not None for s in starts)} of {len(logs)} agents started in {timeout:g} s"
            )
        time.sleep(0.01)


def fleet(
    env: dict[str, str], cwd: Path, *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run the ``fleet`` console script as a person would (a new process), stdin not a terminal."""
    return subprocess.run(
        [str(BIN / "fleet"), *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def timed(argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 120) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, the children it waited for included) of running *argv*
    to its end; SystemExit naming it when it fails. On a shared machine the CPU figure is the steadier."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=timeout)  # fmt: skip
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        what = " ".join(Path(argv[0]).name.split() + argv[1:2])
        raise SystemExit(f"{what} failed ({done.returncode}): {(done.stderr or done.stdout).strip()[-500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


@dataclass(frozen=True)
class TmuxWorld:
    """One private tmux server: its socket name, its ``TMUX_TMPDIR``, the tag of what it runs."""

    socket: str
    tmux_dir: Path
    tag: str

    def env(self, base: Path, claude: Path, **extra: str) -> dict[str, str]:
        """A clean environment for the fleet's console scripts in this world (HOME under *base*)."""
        return {
            "PATH": f"{BIN}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(base / "home"),
            "TERM": "xterm-256color",
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "TMUX_TMPDIR": str(self.tmux_dir),
            "CLAUDE_CONFIG_DIR": str(base / "claude-config"),
            "CLAUDE_BIN": str(claude),
            TAG: self.tag,
            **extra,
        }

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], env={**os.environ, "TMUX_TMPDIR": str(self.tmux_dir)},
            capture_output=True, text=True, timeout=10,
        )  # fmt: skip

    def wait_gone(self, within: float, what: str) -> None:
        """Until no process of this world is left (its server included); SystemExit after *within* s."""
        deadline = time.monotonic() + within
        while left := running(tagged(self.tag)):
            if time.monotonic() > deadline:
                raise SystemExit(f"{len(left)} process(es) left after {what}: {[p.pid for p in left]}")
            time.sleep(0.01)

    def reap(self) -> None:
        """Kill the server and SIGKILL, by PID, every tagged process still running."""
        self.tmux("kill-server")
        reap(self.tag)


@contextmanager
def private_tmux() -> t.Iterator[TmuxWorld]:
    """A world of its own (socket ``fleet-bench-*``, a short ``TMUX_TMPDIR``), reaped however we leave."""
    tag = uuid.uuid4().hex
    world = TmuxWorld(f"fleet-bench-{tag[:12]}", Path(tempfile.mkdtemp(prefix="flb-", dir="/tmp")), tag)
    try:
        yield world
    finally:
        world.reap()
        shutil.rmtree(world.tmux_dir, ignore_errors=True)


def exit_on_sigterm() -> None:
    """SIGTERM ends the bench as Ctrl-C does: through every ``finally``, so nothing it started is left."""

    def leave(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, leave)
