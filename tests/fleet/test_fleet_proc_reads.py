"""``fleet status`` reads its panes' processes from /proc itself; what it reads is what psutil reads
(the start time to the same float: a handle for signalling is checked against it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil
from hypothesis import given
from hypothesis import strategies as st

from claude_shepherd.fleet import procs


def test_a_process_read_from_proc_is_the_one_psutil_reads(tmp_path: Path) -> None:
    long_name = tmp_path / "a-name-longer-than-fifteen"  # the kernel keeps 15 characters of a name
    long_name.write_text("#!/bin/sh\nexec sleep 30\n")
    long_name.chmod(0o755)
    env = {**os.environ, "TMUX_PANE": "%7"}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(30)", "two words"], env=env, cwd=tmp_path
        ),
        subprocess.Popen([str(long_name)], env=env),
    ]
    try:
        table = procs.snapshot(with_env=False)
        mine = [p for p in table.by_pid.values() if p.pid in {c.pid for c in children} | {os.getpid()}]
        assert len(mine) == 3
        for seen in mine:
            read = procs.read_proc(seen.pid)
            assert read is not None
            assert (read.ppid, read.name, read.cmdline, read.create_time) == (
                seen.ppid, seen.name, seen.cmdline, seen.create_time
            )  # fmt: skip
            environ = psutil.Process(seen.pid).environ()
            assert procs.env_of(read) == {k: environ[k] for k in procs._ENV_KEYS if k in environ}
            assert procs.cwd_of(read) == psutil.Process(seen.pid).cwd()
        first = procs.read_proc(children[0].pid)
        assert first is not None and procs.env_of(first)["TMUX_PANE"] == "%7"
        tree = procs.trees([os.getpid()])
        assert {c.pid for c in children} <= set(tree.by_pid)
    finally:
        for child in children:
            child.kill()
            child.wait()
    gone = procs.read_proc(children[0].pid)
    assert gone is None
    assert procs.env_of(first) == {"TMUX_PANE": "%7"}  # read while it ran: kept
    stale = procs.Proc(pid=os.getpid(), ppid=0, cmdline=[], create_time=1.0)  # the pid, another start
    assert procs.env_of(stale) == {} and procs.cwd_of(stale) is None


def every_entry(block: str) -> dict[str, str]:
    """An environ block read entry by entry, as psutil's ``environ`` reads it: NUL-ended ``KEY=value``
    entries up to the first empty one, the last of each key kept."""
    found: dict[str, str] = {}
    at = 0
    while (end := block.find("\x00", at)) > at:
        equal = block.find("=", at, end)
        if equal > at:
            found[block[at:equal]] = block[equal + 1 : end]
        at = end + 1
    return found


@given(st.text(alphabet="AB=C\x00x", max_size=24))
def test_the_keys_searched_for_in_an_environ_block_are_those_read_entry_by_entry(block: str) -> None:
    keys = ("A", "B", "C", "AB")
    whole = every_entry(block)
    assert procs._environ(block, keys) == {key: whole[key] for key in keys if key in whole}


def test_a_processs_own_keys_are_read_from_its_environ_as_psutil_reads_them() -> None:
    env = {**os.environ, "TMUX_PANE": "%7", "TMUX": "/tmp/x,1,2"}
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(30)"],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "up\n"  # its own environment now
        (proc,) = [p for p in procs.trees([child.pid]).by_pid.values() if p.pid == child.pid]
        wanted = psutil.Process(child.pid).environ()
        assert procs.env_of(proc) == {k: wanted[k] for k in procs._ENV_KEYS if k in wanted}
        assert procs.env_of(proc)["TMUX_PANE"] == "%7"
    finally:
        child.kill()
        child.communicate()
