"""``fleet status`` reads its panes' processes from /proc itself; what it reads is what psutil reads
(the start time to the same float: a handle for signalling is checked against it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil

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
