"""Shared fixtures: a scratch project with its own sessions root, and the CLIs of this venv.

Tests run the real console scripts of this installation as subprocesses, with
real files and real processes; nothing of ours is mocked.
"""

from __future__ import annotations

import os
import subprocess
import sys
import typing as t
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


SLOW_FIXTURES = frozenset(
    {"world", "fleet_tmux", "fleet_pane", "shell", "start_run", "run_session", "ssh_host"}
)
"""A real tmux fleet (``world``, ``fleet_tmux``, ``fleet_pane``, a person's ``shell``) or the real CLI as
processes (``start_run``: claude-run on a pty ending process trees; ``run_session``: each ``session``
command a new interpreter), or a second account behind a real sshd (``ssh_host``): tenths of a second
to seconds a test. The fast tier keeps every area's
in-process tests and the few quick processes (hooks, locks, the watchdog)."""
SLOW_FILES = frozenset({"test_new_user.py", "test_packaging.py"})
"""They build and install the project into new virtual environments."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``slow`` what needs a tmux fleet, the real Claude Code CLI or a fresh install, so that
    ``pytest -m "not slow"`` is the fast everyday tier; CI runs everything."""
    for item in items:
        path = Path(str(item.fspath))
        if (
            "e2e" in path.parts
            or path.name in SLOW_FILES
            or SLOW_FIXTURES & set(getattr(item, "fixturenames", ()))
        ):
            item.add_marker(pytest.mark.slow)


def script(name: str) -> str:
    """Absolute path of one of our console scripts in this venv."""
    path = BIN / name
    if not path.exists():
        pytest.fail(f"console script {name} is not installed in {BIN}; run pip install -e '.[test]'")
    return str(path)


@pytest.fixture(autouse=True)
def own_state_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test's commands record sessions roots in a registry of their own, never the user's."""
    state = tmp_path_factory.mktemp("state-home")
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    return state


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project directory with ``sessions/``; the process env points at it."""
    proj = tmp_path / "proj"
    (proj / "sessions").mkdir(parents=True)
    monkeypatch.chdir(proj)
    monkeypatch.setenv("CLAUDE_SESSIONS_DIR", str(proj / "sessions"))
    for var in ("TMUX", "TMUX_PANE", "WATCHDOG_PID", "CLAUDE_CODE_SESSION_ID", "SESSION_REQUIRED"):
        monkeypatch.delenv(var, raising=False)
    # By default the "supervisor" of CLI calls is this test process (alive, stable).
    monkeypatch.setenv("CLAUDE_SUPERVISOR_PID", str(os.getpid()))
    return proj


class Run(t.Protocol):
    def __call__(
        self, *args: str, input: str | None = None, env: dict[str, str] | None = None, timeout: float = 20
    ) -> subprocess.CompletedProcess[str]: ...


@pytest.fixture
def run_session(project: Path) -> Run:
    """Run ``session ARGS...`` in the project; returns the completed process."""

    def run(
        *args: str, input: str | None = None, env: dict[str, str] | None = None, timeout: float = 20
    ) -> subprocess.CompletedProcess[str]:
        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        return subprocess.run(
            [script("session"), *args],
            input=input if input is not None else "",
            capture_output=True,
            text=True,
            cwd=project,
            env=full_env,
            timeout=timeout,
        )

    return run
