"""claude-shepherd installs beside supervisord, whose import name is ``supervisor``.

Our folders install as ``claude_shepherd.supervisor``, ``.hooks`` and ``.fleet``:
installing either distribution, or uninstalling either, must never break the
other (two distributions sharing a ``supervisor/`` folder break each other on
the first clashing module name, and uninstalling one removes the other's files).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
THEIRS = "import supervisor.states, supervisor.xmlrpc; assert supervisor.states.ProcessStates.RUNNING"
OURS = (
    "import claude_shepherd.supervisor.session.store, claude_shepherd.hooks.protocol; "
    "from claude_shepherd.supervisor import __version__; assert __version__"
)


def _run(argv: list[str], timeout: float = 300, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd)


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """supervisord's wheel (from the package index) and ours (built from this checkout)."""
    out = tmp_path_factory.mktemp("wheels")
    got = _run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(out / "theirs"), "supervisor"]
    )
    if got.returncode != 0:
        pytest.skip(f"supervisord could not be downloaded: {got.stderr.strip().splitlines()[-1:]}")
    source = out / "source"  # a copy: building in the checkout would leave build/ and egg-info there
    shutil.copytree(
        ROOT, source, ignore=shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info", "__pycache__")
    )
    built = _run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(out / "ours"), str(source)]
    )
    assert built.returncode == 0, built.stderr
    return {"theirs": next((out / "theirs").glob("*.whl")), "ours": next((out / "ours").glob("*.whl"))}


def test_supervisord_and_claude_shepherd_install_and_uninstall_side_by_side(
    wheels: dict[str, Path], tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    assert _run([sys.executable, "-m", "venv", str(venv)]).returncode == 0
    python, pip = str(venv / "bin" / "python"), [str(venv / "bin" / "python"), "-m", "pip", "-q"]

    def works(code: str) -> bool:  # run away from the checkout, whose folders would shadow the installs
        return _run([python, "-c", code], timeout=60, cwd=tmp_path).returncode == 0

    for wheel in (wheels["theirs"], wheels["ours"]):
        assert _run([*pip, "install", "--no-deps", str(wheel)]).returncode == 0
    assert works(THEIRS) and works(OURS), "both import, side by side"

    assert _run([*pip, "uninstall", "-y", "supervisor"]).returncode == 0
    assert works(OURS) and not works(THEIRS), "uninstalling supervisord leaves ours whole"

    assert _run([*pip, "install", "--no-deps", str(wheels["theirs"])]).returncode == 0
    assert _run([*pip, "uninstall", "-y", "claude-shepherd"]).returncode == 0
    assert works(THEIRS) and not works(OURS), "uninstalling claude-shepherd leaves supervisord whole"
