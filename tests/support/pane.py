"""Run commands *inside* a real fleet pane: a pane's identity is only believed from within it.

A private tmux server on its own ``fleet-pytest-*`` socket with one labelled
pane; :meth:`FleetPane.run` respawns the pane with a command (as ``fleet
start`` does with ``claude-run``) and returns its exit status and output. The
pane's own process is a shell that exports its PID as ``CLAUDE_SUPERVISOR_PID``
when asked, playing claude-run. The server is killed at teardown.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import typing as t
import uuid
from pathlib import Path

import pytest
from support.waiting import wait_until


class FleetPane:
    def __init__(self, label: str = "SDK") -> None:
        self.socket = f"fleet-pytest-{uuid.uuid4().hex[:10]}"
        self.session, self.window, self.label = "crew", "agents", label
        self.dir = Path(tempfile.mkdtemp(prefix="pane-"))
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
        self._env = env
        self.tmux("-f", "/dev/null", "new-session", "-d", "-s", self.session, "-n", self.window, "sleep 600")
        self.pane = self.tmux("display-message", "-p", "-t", f"{self.session}:{self.window}", "#{pane_id}")
        self.tmux("set-option", "-p", "-t", self.pane, "@pane_label", label)
        self.tmux("set-option", "-p", "-t", self.pane, "remain-on-exit", "on")
        self.socket_path = self.tmux("display-message", "-p", "#{socket_path}")
        self.server_pid = int(self.tmux("display-message", "-p", "#{pid}"))
        self._runs = 0

    @property
    def pane_id(self) -> str:
        return f"{self.session}:{self.window}:{self.label}"

    def env(self) -> dict[str, str]:
        """What a process in the pane has (tmux sets these for the pane's process)."""
        return {"TMUX": f"{self.socket_path},{self.server_pid},0", "TMUX_PANE": self.pane}

    def tmux(self, *args: str) -> str:
        out = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, env=self._env, timeout=10
        )
        if out.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args)} failed: {out.stderr.strip()}")
        return out.stdout.strip()

    def run(
        self, argv: list[str], *, env: dict[str, str], cwd: Path, supervisor: bool = True, input: str = ""
    ) -> subprocess.CompletedProcess[str]:
        """Run *argv* in the pane with exactly *env* (plus the pane's own variables)."""
        self._runs += 1
        base = self.dir / f"run{self._runs}"
        Path(f"{base}.in").write_text(input)
        full = {k: v for k, v in env.items() if k != "CLAUDE_SUPERVISOR_PID"}
        full.update(self.env())
        export = "export CLAUDE_SUPERVISOR_PID=$$; " if supervisor else ""
        inner = (
            f"{export}{shlex.join(argv)} < {base}.in > {base}.out 2> {base}.err; "
            f"echo $? > {base}.rc.tmp; mv {base}.rc.tmp {base}.rc"
        )
        command = "exec " + shlex.join(
            ["env", "-i", *(f"{k}={v}" for k, v in full.items()), "sh", "-c", inner]
        )
        self.tmux("respawn-pane", "-k", "-t", self.pane, "-c", str(cwd), command)
        rc = Path(f"{base}.rc")
        wait_until(rc.exists, 20, f"{argv} to finish in the pane")
        return subprocess.CompletedProcess(
            argv, int(rc.read_text()), Path(f"{base}.out").read_text(), Path(f"{base}.err").read_text()
        )

    def kill(self) -> None:
        subprocess.run(
            ["tmux", "-L", self.socket, "kill-server"], capture_output=True, env=self._env, timeout=10
        )
        try:
            os.unlink(self.socket_path)
        except OSError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def fleet_pane() -> t.Iterator[FleetPane]:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    pane = FleetPane()
    yield pane
    pane.kill()
