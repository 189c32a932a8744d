"""tmux 3.3 at times misses the exit of a pane's process (no status, no ``pane-died`` hook): the fleet
makes it reap, so every dead pane it lists says how it ended."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from support.waiting import wait_until

from claude_shepherd.fleet.tmux import FleetServer, list_panes

SERVERS = 20
"""Where tmux misses one exit in about seven, twenty panes all listed whole is no accident."""


@pytest.mark.slow
def test_every_dead_pane_is_listed_with_its_exit_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path))
    names = [f"fleet-reap{i}" for i in range(SERVERS)]

    def tmux(name: str, *args: str) -> str:
        done = subprocess.run(["tmux", "-L", name, *args], capture_output=True, text=True, timeout=30)
        return done.stdout.strip()

    try:
        for name in names:
            tmux(name, "-f", "/dev/null", "new-session", "-d", "-s", "s", "sleep 0.3; exit 3",
                 ";", "set-option", "-g", "remain-on-exit", "on")  # fmt: skip

        def dead(name: str) -> bool:
            return tmux(name, "display-message", "-p", "-t", "s", "#{pane_dead}") == "1"

        for name in names:
            wait_until(lambda: dead(name), 30, name)  # noqa: B023 (waited for here)
        listed = {name: [(p.dead, p.dead_status) for p in list_panes(FleetServer(name))] for name in names}
        assert listed == {name: [(True, "3")] for name in names}
    finally:
        for name in names:
            tmux(name, "kill-server")
