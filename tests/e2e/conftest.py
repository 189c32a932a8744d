"""Fixtures for the end-to-end suite: the real Claude Code CLI against the mock API.

The whole directory is skipped, with the reason printed (`pytest -rs`), when the
pinned CLI cannot be installed (no npm, or the registry is unreachable).
"""

from __future__ import annotations

import os
import sys
import typing as t
from pathlib import Path

import pytest

from .cli import MODEL, Tmux, Unavailable, clean_env, install_cli, prepare_home
from .mock_api import MockAPI

BIN = Path(sys.executable).parent


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    try:
        return install_cli()
    except Unavailable as exc:
        pytest.skip(f"end-to-end tests need the real Claude Code CLI: {exc}")


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
