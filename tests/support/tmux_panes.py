"""A private tmux server with three bare panes on a fleet socket, for the pane-state hooks.

Its own ``TMUX_TMPDIR`` and a socket ``fleet-pytest-<uuid>``: never the user's
default server. Session ``s``: window ``w`` with three panes, and window
``other``. :meth:`Tmux.pane_env` is what a process started in a pane has.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import typing as t
import uuid
from pathlib import Path

import pytest


class Tmux:
    def __init__(self, socket: str) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="fln-", dir="/tmp"))
        self.env = {
            **{k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")},
            "TMUX_TMPDIR": str(self.dir),
        }
        self.socket = socket
        self(
            "-f", "/dev/null", "new-session", "-d", "-s", "s", "-n", "w", "-x", "120", "-y", "40", "sleep 600"
        )
        self("split-window", "-t", "s:w", "sleep 600")
        self("split-window", "-t", "s:w", "sleep 600")
        self("new-window", "-d", "-t", "s:", "-n", "other", "sleep 600")
        self.ids = self("list-panes", "-t", "s:w", "-F", "#{pane_id}").split()
        self.path = self("display-message", "-p", "#{socket_path}")
        self.pid = self("display-message", "-p", "#{pid}")

    def __call__(self, *args: str) -> str:
        out = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, env=self.env, timeout=10
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    def pane_env(self, pane: str) -> dict[str, str]:
        return {"TMUX": f"{self.path},{self.pid},0", "TMUX_PANE": pane}

    def option(self, pane: str, name: str) -> str:
        return self("display-message", "-p", "-t", pane, f"#{{{name}}}")

    def close(self) -> None:
        subprocess.run(
            ["tmux", "-L", self.socket, "kill-server"], capture_output=True, env=self.env, timeout=10
        )
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def tmux(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> t.Iterator[Tmux]:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))  # private throttle stamps
    (tmp_path / "run").mkdir(mode=0o700)
    server = Tmux(f"fleet-pytest-{uuid.uuid4().hex}")
    try:
        yield server
    finally:
        server.close()
        reap_spawned_alerts()


def reap_spawned_alerts() -> None:
    """Hooks called in-process spawn alert processes they never wait for (a hook exits at once, and
    init or claude-run reaps them); here the test process is their parent, so it reaps them."""
    import psutil

    for child in psutil.Process().children():
        try:
            if child.status() == psutil.STATUS_ZOMBIE:
                os.waitpid(child.pid, os.WNOHANG)
        except (psutil.Error, ChildProcessError):
            pass
