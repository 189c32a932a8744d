"""tmux's version is asked once per binary (``tmux -V`` is a process, as costly as the one tmux call
`fleet status` makes): a binary found recent enough is known by its file until it is replaced, and
one too old is refused every time."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from support.fleet import BIN

REAL_TMUX = shutil.which("tmux")


def wrapper(folder: Path, version: str | None = None) -> Path:
    """A ``tmux`` that notes each ``-V`` it is asked, then is the real tmux (or says *version*)."""
    folder.mkdir(exist_ok=True)
    script = folder / "tmux"
    answer = f'echo "tmux {version}"; exit 0' if version else f'exec "{REAL_TMUX}" "$@"'
    script.write_text(f'#!/bin/sh\n[ "$1" = -V ] && echo asked >> "{folder}/asked"\n[ "$1" = -V ] && {answer}\n'
                      f'exec "{REAL_TMUX}" "$@"\n')  # fmt: skip
    script.chmod(0o755)
    return script


def status(tmp_path: Path, folder: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": f"{folder}:/usr/bin:/bin", "HOME": str(tmp_path), "TMUX_TMPDIR": str(tmp_path)}
    return subprocess.run([str(BIN / "fleet"), "status", "--socket", "fleet-none"], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=60, check=False)  # fmt: skip


def asked(folder: Path) -> int:
    return (folder / "asked").read_text().count("asked") if (folder / "asked").exists() else 0


def test_a_tmux_found_recent_enough_is_asked_its_version_once_until_it_is_replaced(tmp_path: Path) -> None:
    folder = tmp_path / "bin"
    wrapper(folder)
    first, again = status(tmp_path, folder), status(tmp_path, folder)
    assert first.returncode == again.returncode == 3, (first.stderr, again.stderr)  # no fleet runs there
    assert asked(folder) == 1
    wrapper(folder).write_text(wrapper(folder).read_text() + "# upgraded\n")
    assert status(tmp_path, folder).returncode == 3
    assert asked(folder) == 2


def test_a_tmux_too_old_is_refused_every_time(tmp_path: Path) -> None:
    folder = tmp_path / "bin"
    wrapper(folder, version="2.9")
    for _ in range(2):
        done = status(tmp_path, folder)
        assert (done.returncode, done.stderr) == (
            127,
            f"fleet: error: {folder}/tmux is tmux 2.9; the fleet needs tmux 3.2 or newer\n",
        )
    assert asked(folder) == 2
