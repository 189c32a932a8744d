"""Every ``fleet`` --help example runs as written, against the shipped layout, in a copy of the project.

The only thing around the commands is isolation: a private tmux socket
(``FLEET_SOCKET``) and socket directory, the stand-in Claude, a scratch HOME.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from support.fleet import BIN, FleetWorld

ROOT = Path(__file__).resolve().parents[2]
NEEDS_A_TERMINAL = {"watch"}
"""Refused without a terminal by design (``fleet watch needs a terminal``); tests/fleet/test_fleet_watch.py
drives it in one."""
NEEDS_A_HOST = {"host"}
"""``fleet host add`` needs another machine: tests/fleet/test_fleet_hosts.py runs it against a real sshd."""


def examples(world: FleetWorld) -> dict[str, str]:
    """Subcommand -> the example its --help shows."""
    top = world.fleet("--help", socket=False).stdout
    commands = re.findall(r"^\s{2}([a-z-]+)\s{2,}", top[top.index("Commands:") :], re.M)
    found = {"": re.search(r"Example: (fleet .+)", top).group(1)}  # type: ignore[union-attr]
    for command in commands:
        text = world.fleet(command, "--help", socket=False).stdout
        match = re.search(r"Example: (fleet [^\n(]+)", text)
        assert match, f"fleet {command} --help shows no example"
        found[command] = match.group(1).strip()
    return found


def test_every_help_example_runs_as_written_against_the_shipped_layout(world: FleetWorld) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    shutil.copytree(ROOT / "tmuxinator", world.project / "tmuxinator", dirs_exist_ok=True)
    world.plan("all")
    world.env.update({"FLEET_SOCKET": world.socket, "FAKE_CLAUDE_SCRIPT": str(world.dir / "all.json"),
                      "FAKE_CLAUDE_LOG": str(world.dir / "all.log")})  # fmt: skip
    shown = examples(world)
    order = [
        "",
        "start",
        "status",
        "budget",
        "usage",
        "ls",
        "logs",
        "attach",
        "restart",
        "stop",
        "pane-id",
        "doctor",
        "drain",
        "forget",
        "worktree",
        "web",
        "boot",
    ]
    assert set(shown) - NEEDS_A_TERMINAL - NEEDS_A_HOST == set(order), shown
    for command in order:
        argv = shlex.split(shown[command])
        assert argv[0] == "fleet"
        if command == "logs":  # -f follows until stopped: it must print the pane, then keep going
            follow = subprocess.Popen([str(BIN / "fleet"), *argv[1:]], cwd=world.project, env=world.env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
            try:
                with pytest.raises(subprocess.TimeoutExpired):
                    follow.communicate(timeout=3)
            finally:
                follow.kill()
                out, err = follow.communicate()
            assert out and not err, (shown[command], out, err)
            continue
        if command == "web":  # serves until stopped: it must say its URL, then stop cleanly on SIGTERM
            served = subprocess.Popen([str(BIN / "fleet"), *argv[1:]], cwd=world.project, env=world.env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
            try:
                assert served.stdout is not None and served.stdout.readline().startswith("http://127.0.0.1:")
            finally:
                served.terminate()
                out, err = served.communicate(timeout=20)
            assert served.returncode == 0 and not err, (shown[command], out, err)
            continue
        if command == "worktree":  # agents' worktrees are a repository's: the project is one, as this one is
            subprocess.run(["git", "init", "-q", str(world.project)], check=True)
        if command == "forget":  # forgets a fleet once it is stopped whole (the stop example stops a pane)
            assert world.fleet("stop", "agents-2x2", socket=False).returncode == 0
        done = world.fleet(*argv[1:], socket=False)
        expected = 1 if command == "pane-id" else 0  # outside a fleet pane, as its help says
        assert done.returncode == expected, (shown[command], done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
