"""End to end: usage windows with the real Claude Code CLI under OAuth against the mock API.

* ``claude-run -- -p`` at a usage limit: Claude exits 1, its StopFailure hook (installed behind
  ``setsid -f``) outlives it and parks the agent; claude-run counts no crash, waits for the reset
  and goes on in the same conversation.
* Claude's own auto-continue after the reset passes through UserPromptSubmit (observed here), so
  three parked agents of a fleet go on one at a time, the interval apart, not within the same
  minute as Claude alone would.
"""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import typing as t
import uuid
from pathlib import Path

import pytest
from support.waiting import wait_until

from .cli import MODEL, takes_keys
from .mock_api import MockAPI, Turn
from .test_headless import install_hooks

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
RESET_TEXT = "usage limit has reset"


def continue_requests(api: MockAPI) -> list[dict[str, t.Any]]:
    """The agents' requests whose last message is the continue prompt (Claude's own, or retyped)."""
    return [body for body in api.main_requests() if RESET_TEXT in json.dumps(body["messages"][-1:])]


def test_print_mode_usage_limit_is_waited_out_without_a_crash(world, mock_api: MockAPI, env_for) -> None:
    env = env_for(oauth=True, CLAUDE_RUN_CRASH_LIMIT="1")  # one crash would give up
    settings = install_hooks(world, env)
    # The limit holds 20 s from now: a Claude slow to start on a loaded machine (5 s was seen) still meets it.
    mock_api.script(Turn.usage_limit(reset_in=20, until="{now+20}"), Turn.say("went on", times=-1))
    argv = [str(BIN / "claude-run"), "--", "-p", "--dangerously-skip-permissions", "--model", MODEL,
            "--settings", str(settings), "work on"]  # fmt: skip
    done = subprocess.run(argv, env=env, cwd=world.project, capture_output=True, text=True, timeout=240)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "Claude stopped at the five_hour usage limit" in out and "not a crash" in out, out
    assert "went on" in done.stdout
    assert "giving up" not in out and "(crash " not in out
    records = list((world.sessions / ".shepherd" / "usage" / "agents").glob("*.json"))
    assert records, "the detached StopFailure hook recorded the agent"


class ThreeAgents:
    """A fleet of three real Claudes under claude-run on a private socket."""

    def __init__(self, world: t.Any, env: dict[str, str], settings: Path) -> None:
        self.socket = f"fleet-pytest-{uuid.uuid4().hex[:8]}"
        self.tmpdir = Path(tempfile.mkdtemp(prefix="e2eu-", dir="/tmp"))
        self.env = dict(env, TMUX_TMPDIR=str(self.tmpdir), FLEET_START_WAIT="120")
        self.project = world.project
        self.layout = world.project / "fleet.yml"
        command = f"claude-run -- --dangerously-skip-permissions --model {MODEL} --settings {settings}"
        panes = "".join(f"        - {label}: {command}\n" for label in "ABC")
        self.layout.write_text(
            f"name: e2eusage\nroot: {world.project}\nsocket_name: {self.socket}\n"
            f"windows:\n  - agents:\n      panes:\n{panes}"
        )

    def fleet(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(BIN / "fleet"), *args, str(self.layout)], env=self.env, cwd=self.project,
                              capture_output=True, text=True, timeout=300)  # fmt: skip

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], env=self.env, capture_output=True, text=True,
                              timeout=15).stdout  # fmt: skip

    def panes(self) -> list[str]:
        return self.tmux("list-panes", "-t", "e2eusage:agents", "-F", "#{pane_id}").split()

    def type(self, pane: str, text: str) -> None:
        tty = self.tmux("display-message", "-p", "-t", pane, "#{pane_tty}").strip()
        wait_until(lambda: takes_keys(tty), timeout=90, what="Claude to read keys (raw mode)")
        self.tmux("send-keys", "-t", pane, "-l", text)
        wait_until(lambda: text[:20] in self.tmux("capture-pane", "-p", "-t", pane), 20, "the typed prompt")
        self.tmux("send-keys", "-t", pane, "Enter")

    def close(self) -> None:
        self.tmux("kill-server")
        shutil.rmtree(self.tmpdir, ignore_errors=True)


def test_three_parked_agents_go_on_one_at_a_time(world, mock_api: MockAPI, env_for) -> None:
    interval = 20
    env = env_for(oauth=True, CLAUDE_USAGE_RESUME_INTERVAL=str(interval))
    agents = ThreeAgents(world, env, install_hooks(world, env))
    try:
        mock_api.script(Turn.usage_limit(reset_in=45, until="{now+45}"), Turn.say("going on", times=-1))
        started = agents.fleet("start", "--no-attach")
        assert started.returncode == 0, started.stdout + started.stderr
        panes = agents.panes()
        assert len(panes) == 3
        for pane in panes:
            agents.type(pane, "keep working")
        seen: dict[int, float] = {}
        lock = threading.Lock()

        def count() -> int:
            with lock:
                n = len(continue_requests(mock_api))
                for i in range(n):
                    seen.setdefault(i, time.time())
                return n

        wait_until(lambda: count() >= 3, 420, "three agents going on after the reset")
        times = sorted(seen.values())
        gaps = [b - a for a, b in itertools.pairwise(times)]
        screens = "\n".join(agents.tmux("capture-pane", "-p", "-t", pane) for pane in panes)
        assert all(gap >= interval - 3 for gap in gaps), (
            f"went on {gaps} s apart, not one at a time:\n{screens}"
        )
        status = agents.fleet("status", "--json")
        rows = json.loads(status.stdout)
        assert all(row.get("credential") for row in rows), rows
    finally:
        agents.close()
