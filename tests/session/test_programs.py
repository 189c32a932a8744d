"""``programs.run``: the hooks' own way to run tmux (posix_spawn, no subprocess import) — real processes."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import psutil
import pytest

from claude_shepherd.supervisor.session.programs import run

PY = sys.executable


def test_output_status_and_stderr_come_back() -> None:
    done = run(
        [PY, "-c", "import sys; print('out é'); print('err', file=sys.stderr); sys.exit(3)"], timeout=10
    )
    assert done is not None
    assert (done.returncode, done.stdout, done.stderr) == (3, "out é\n", "err\n")


def test_stdin_is_empty_and_a_signal_is_a_negative_status() -> None:
    done = run([PY, "-c", "import sys; print(repr(sys.stdin.read()))"], timeout=10)
    assert done is not None and done.stdout == "''\n"
    killed = run([PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"], timeout=10)
    assert killed is not None and killed.returncode == -15


def test_large_output_on_both_streams_does_not_deadlock() -> None:
    code = "import sys; sys.stderr.write('e' * 300_000); sys.stdout.write('o' * 300_000)"
    done = run([PY, "-c", code], timeout=20)
    assert done is not None and len(done.stdout) == len(done.stderr) == 300_000


@pytest.mark.slow  # over a second
def test_an_overrun_is_killed_and_reaped(tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    began = time.monotonic()
    done = run([PY, "-c", f"import os, time; open({str(marker)!r}, 'w').write(str(os.getpid())); time.sleep(60)"],
               timeout=1.0)  # fmt: skip
    assert done is None and time.monotonic() - began < 10
    pid = int(marker.read_text())
    assert not psutil.pid_exists(pid), "killed and reaped: not even a zombie is left"


@pytest.mark.slow  # over a second
def test_a_program_that_closes_its_output_but_keeps_running_is_still_bounded(tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    code = f"import os, time; open({str(marker)!r}, 'w').write(str(os.getpid())); os.close(1); os.close(2); time.sleep(60)"
    began = time.monotonic()
    assert run([PY, "-c", code], timeout=1.0) is None
    assert time.monotonic() - began < 10
    assert not psutil.pid_exists(int(marker.read_text())), "nothing left behind"


def test_a_missing_program_is_none_and_no_descriptor_leaks() -> None:
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        assert run(["/nonexistent/tmux", "-V"], timeout=1.0) is None
        assert run([PY, "-c", "pass"], timeout=5.0) is not None
    assert len(os.listdir("/proc/self/fd")) == before
