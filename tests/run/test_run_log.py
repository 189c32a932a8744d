"""claude-run's per-pane log: safe names, private files, rotation, tails across rotations."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from claude_shepherd.supervisor.claude_run.run_log import (
    NAME_LIMIT,
    PaneLog,
    RunLines,
    log_dir,
    log_name,
    tail,
)


@pytest.mark.parametrize("label", ["../../etc/passwd", "..", ".hidden", "a/b\\c", "x" * 5000, "\x1b]0;t\x07\u202e",
                                   "sp ace:colon", "\ufffd\ufffd"])  # fmt: skip
def test_a_label_an_agent_chose_names_one_file_inside_the_log_folder(tmp_path: Path, label: str) -> None:
    name = log_name("fleet-x", f"duo:agents:{label}")
    assert "/" not in name and "\\" not in name and not name.startswith(".") and ".." not in name
    assert len(name) <= NAME_LIMIT + 20 and name.isprintable() and name.isascii()
    log = PaneLog(tmp_path / "logs" / name)
    assert log.write("hello")
    assert [p.name for p in (tmp_path / "logs").iterdir()] == [name]


def test_identities_that_read_alike_get_their_own_files() -> None:
    names = {log_name("fleet", "s:w:a/b"), log_name("fleet", "s:w:a_b"), log_name("fleet-2", "s:w:a/b"),
             log_name("fleet", "s:w:a/b" + "x" * 200), log_name("fleet", "s:w:a/b" + "y" * 200)}  # fmt: skip
    assert len(names) == 5


def test_the_folder_follows_xdg_state_home() -> None:
    assert log_dir({"HOME": "/h"}) == Path("/h/.local/state/claude-shepherd/logs")
    assert log_dir({"HOME": "/h", "XDG_STATE_HOME": "/s"}) == Path("/s/claude-shepherd/logs")
    assert log_dir({"HOME": "/h", "XDG_STATE_HOME": "relative"}) == Path(
        "/h/.local/state/claude-shepherd/logs"
    )


def test_private_rotated_by_size_and_tailed_across_rotations(tmp_path: Path) -> None:
    os.umask(0o022)
    path = tmp_path / "state" / "logs" / "p.log"
    log = PaneLog(path, max_bytes=200, backups=3)
    for n in range(40):
        assert log.write(f"line {n:02d}", now=0)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    kept = sorted(p.name for p in path.parent.iterdir())
    assert kept == ["p.log", "p.log.1", "p.log.2", "p.log.3"]
    assert all(p.stat().st_size <= 200 for p in path.parent.iterdir())
    last = tail(path, 12)
    assert [line.rsplit(" ", 1)[1] for line in last] == [f"{n:02d}" for n in range(28, 40)]


def test_a_symlink_or_fifo_in_place_of_the_log_is_not_written_through(tmp_path: Path) -> None:
    target = tmp_path / "victim"
    target.write_text("keep\n")
    (tmp_path / "logs").mkdir(mode=0o700)
    (tmp_path / "logs" / "p.log").symlink_to(target)
    os.mkfifo(tmp_path / "logs" / "q.log")
    for name in ("p.log", "q.log"):
        log = PaneLog(tmp_path / "logs" / name)
        assert not log.write("x") and log.failed
        assert tail(tmp_path / "logs" / name, 5) == []
    assert target.read_text() == "keep\n"


def test_lines_said_before_the_pane_is_known_land_first(tmp_path: Path) -> None:
    lines = RunLines()
    lines.add("early")
    log = lines.bind("/tmp/tmux-1/fleet", "s:w:A", {"HOME": str(tmp_path)})
    lines.add("late")
    assert log is not None and [line.split(" ", 2)[2] for line in tail(log.path, 5)] == ["early", "late"]
    outside = RunLines()
    outside.add("x")
    assert outside.bind(None, None, {"HOME": str(tmp_path)}) is None
