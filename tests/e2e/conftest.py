"""Fixtures for the end-to-end suite: the real Claude Code CLI against the mock API.

The whole directory is skipped, with the reason printed (`pytest -rs`), when the
pinned CLI cannot be installed (no npm, or the registry is unreachable); a test
that asks for another version (``@pytest.mark.claude_version``) is skipped when that one cannot.
"""

from __future__ import annotations

import os
import sys
import typing as t
from pathlib import Path

import pytest

from .cli import CLI_VERSION, MODEL, Tmux, Unavailable, clean_env, install_cli, prepare_home
from .mock_api import MockAPI

BIN = Path(sys.executable).parent


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"claude_version(V): run the real Claude Code CLI V in this test, not {CLI_VERSION}"
    )


_installed: dict[str, Path | str] = {}
"""Per version: its binary, or why it cannot be installed (asked once a run, as the session-wide fixture did)."""


@pytest.fixture
def claude_bin(request: pytest.FixtureRequest) -> Path:
    """The real CLI: the version the test asks for with ``@pytest.mark.claude_version(V)``, else the
    pinned one; installed from npm on first use, skipping the test with the reason when it cannot be."""
    marker = request.node.get_closest_marker("claude_version")
    version = marker.args[0] if marker else CLI_VERSION
    if version not in _installed:
        try:
            _installed[version] = install_cli(version)
        except Unavailable as exc:
            _installed[version] = f"end-to-end tests need the real Claude Code CLI {version}: {exc}"
    found = _installed[version]
    if isinstance(found, str):
        pytest.skip(found)
    return found


@pytest.fixture
def mock_api() -> t.Iterator[MockAPI]:
    api = MockAPI(model=MODEL).start()
    yield api
    api.stop()


class World(t.NamedTuple):
    home: Path
    project: Path
    sessions: Path
    settings: Path


@pytest.fixture
def world(tmp_path: Path) -> World:
    """A scratch HOME and a trusted project with a sessions root."""
    home = tmp_path / "home"
    project = Path(os.path.realpath(tmp_path)) / "project"
    (project / "sessions").mkdir(parents=True)
    (project / ".git").mkdir()  # marks the project root
    prepare_home(home, project)
    return World(home, project, project / "sessions", home / ".claude" / "settings.json")


@pytest.fixture
def env_for(world: World, mock_api: MockAPI, claude_bin: Path) -> t.Callable[..., dict[str, str]]:
    def make(oauth: bool = False, **extra: str) -> dict[str, str]:
        env = clean_env(world.home, mock_api.url, oauth, CLAUDE_BIN=str(claude_bin), **extra)
        env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
        return env

    return make


@pytest.fixture
def tmux() -> t.Iterator[Tmux]:
    server = Tmux()
    yield server
    server.kill()
