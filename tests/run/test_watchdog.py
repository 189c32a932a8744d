"""The restart watchdog as a process: what it kills, what it spares, when it exits.

This test process plays the supervisor: it spawns the watchdog through
:class:`claude_shepherd.supervisor.claude_run.watchdog.WatchdogHandle` exactly as claude-run does and a
stand-in Claude as its own child.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import typing as t

import psutil
import pytest
from support.claude_run import FAKE_CLAUDE, TAG_ENV, FakeClaude, alive
from support.waiting import wait_until

from claude_shepherd.supervisor.claude_run.watchdog import WatchdogHandle, marked_processes, wait_pid
from claude_shepherd.supervisor.session.identity import (
    SUPERVISOR_PID_ENV,
    is_watchdog,
    process_stat,
    start_token,
)


@pytest.fixture
def env(fake: FakeClaude, test_tag: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(fake.bin_dir.parent),
        "FAKE_CLAUDE_LOG": str(fake.log),
        "FAKE_CLAUDE_SCRIPT": str(fake.script),
        TAG_ENV: test_tag,
    }


@pytest.fixture
def children() -> t.Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


@pytest.fixture
def watchdogs() -> t.Iterator[list[WatchdogHandle]]:
    started: list[WatchdogHandle] = []
    yield started
    for handle in started:
        handle.stop(0.5)


def start_watchdog(
    env: dict[str, str], watchdogs: list[WatchdogHandle], grace: float = 0.3
) -> WatchdogHandle:
    handle = WatchdogHandle.start(supervisor_pid=os.getpid(), grace=grace)
    watchdogs.append(handle)
    return handle


def start_claude(
    env: dict[str, str], children: list[subprocess.Popen[bytes]], **kwargs: t.Any
) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, str(FAKE_CLAUDE)], env=env, stdin=subprocess.DEVNULL, **kwargs)
    children.append(proc)
    return proc


def test_kills_the_whole_tree_and_nothing_else(
    fake: FakeClaude, env: dict[str, str], children: list, watchdogs: list
) -> None:
    fake.plan(
        [
            {"on_signal": {"TERM": "ignore"}},
            {"spawn": {"setsid": True, "ignore_term": True, "depth": 2}},
            {"spawn": {"setsid": False}},
            {"mark": "ready"},
            {"wait": None},
        ]
    )
    watchdog = start_watchdog(env, watchdogs)
    claude = start_claude(env, children, process_group=0)
    # A process-group kill would take this bystander too: it shares Claude's group.
    bystander = subprocess.Popen(["sleep", "30"], process_group=claude.pid, env=env)
    children.append(bystander)
    watchdog.arm(claude.pid)
    fake.wait_event("mark", name="ready")
    tree = [psutil.Process(claude.pid), *psutil.Process(claude.pid).children(recursive=True)]
    assert len(tree) == 4
    tokens = {p.pid: start_token(p.pid) for p in tree}
    started = time.monotonic()
    watchdog.trigger()
    assert watchdog.stop(5) == 0
    assert time.monotonic() - started < 2
    assert claude.wait(timeout=30) == -signal.SIGKILL
    assert [pid for pid, token in tokens.items() if alive(pid, token)] == []
    assert alive(bystander.pid), "the watchdog must signal nothing outside Claude's tree"


def test_a_request_that_arrives_before_the_watchdog_is_ready_is_not_lost(
    fake: FakeClaude, env: dict[str, str], children: list, watchdogs: list
) -> None:
    fake.plan([{"wait": None}])
    watchdog = start_watchdog(env, watchdogs)
    os.kill(watchdog.pid, signal.SIGUSR1)  # at once: its handler cannot be installed yet
    claude = start_claude(env, children)
    watchdog.arm(claude.pid)
    assert claude.wait(timeout=30) in (143, -signal.SIGTERM)  # before or after its handler
    assert watchdog.stop(5) == 0, "SIGUSR1 must not have killed the watchdog itself"


def test_exits_at_once_when_stopped_while_idle(env: dict[str, str], watchdogs: list) -> None:
    watchdog = start_watchdog(env, watchdogs)
    wait_until(lambda: is_watchdog(watchdog.pid), 5, "the watchdog to run")
    started = time.monotonic()
    assert watchdog.stop(5) == 0
    assert time.monotonic() - started < 0.5


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/PID/maps")
def test_a_stop_from_a_live_supervisor_kills_nothing(
    fake: FakeClaude, env: dict[str, str], children: list, watchdogs: list
) -> None:
    """The normal path: the supervisor stops an armed watchdog; only its own death means a kill."""
    fake.plan([{"mark": "ready"}, {"wait": None}])
    watchdog = start_watchdog(env, watchdogs)
    claude = start_claude(dict(env, **{SUPERVISOR_PID_ENV: str(os.getpid())}), children)
    watchdog.arm(claude.pid)
    fake.wait_event("mark", name="ready")
    assert watchdog.stop(5) == 0
    assert claude.poll() is None, "a stopped watchdog must not touch Claude"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_marked_processes_are_the_supervisors_started_since_it(env: dict[str, str], children: list) -> None:
    """A recycled supervisor PID must not make an older process with the same marker a target."""
    me = str(os.getpid())
    marked = subprocess.Popen(["sleep", "30"], env=dict(env, **{SUPERVISOR_PID_ENV: me}))
    other = subprocess.Popen(["sleep", "30"], env=dict(env, **{SUPERVISOR_PID_ENV: me + "0"}))
    children.extend([marked, other])
    wait_until(lambda: os.path.basename(os.readlink(f"/proc/{marked.pid}/exe")) == "sleep", 5, "exec")
    started = process_stat(marked.pid)[2]  # type: ignore[index]
    found = dict(marked_processes(os.getpid(), since=started))
    assert found == {marked.pid: start_token(marked.pid)}
    assert marked_processes(os.getpid(), since=started + 1) == []


def test_refuses_a_target_that_is_not_the_supervisors_child(
    env: dict[str, str], children: list, watchdogs: list
) -> None:
    parent = subprocess.Popen(["sh", "-c", "sleep 30 & echo $!; wait"], stdout=subprocess.PIPE, env=env)
    children.append(parent)
    grandchild = int(parent.stdout.readline())  # type: ignore[union-attr]
    watchdog = start_watchdog(env, watchdogs)
    watchdog.arm(grandchild)
    watchdog.trigger()
    time.sleep(0.3)
    assert alive(grandchild)
    assert watchdog.stop(5) == 0
    os.kill(grandchild, signal.SIGKILL)


def test_dies_with_its_supervisor(env: dict[str, str], children: list, test_tag: str) -> None:
    code = (
        "import os, sys, time\n"
        "from claude_shepherd.supervisor.claude_run.watchdog import WatchdogHandle\n"
        "h = WatchdogHandle.start(supervisor_pid=os.getpid(), grace=1.0)\n"
        "print(h.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    supervisor = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, env=env)
    children.append(supervisor)
    watchdog = int(supervisor.stdout.readline())  # type: ignore[union-attr]
    wait_until(lambda: is_watchdog(watchdog), 5, "the watchdog to run")
    token = start_token(watchdog)
    supervisor.kill()
    supervisor.wait()
    wait_until(lambda: not alive(watchdog, token), 3, "the orphaned watchdog to exit")


def test_a_supervisor_slow_to_die_still_has_its_claude_ended(
    fake: FakeClaude, env: dict[str, str], children: list, test_tag: str
) -> None:
    """A dying process closes its files before the kernel reparents its children, and on a loaded
    machine that can take seconds: the control pipe's EOF without ``stop`` must keep the watchdog on
    guard until the supervisor is gone, however long, and then it ends Claude."""
    fake.plan([{"mark": "ready"}, {"wait": None}])
    code = (
        "import os, subprocess, sys, time\n"
        "from claude_shepherd.supervisor.claude_run.watchdog import WatchdogHandle\n"
        "h = WatchdogHandle.start(supervisor_pid=os.getpid(), grace=0.5)\n"
        f"claude = subprocess.Popen([sys.executable, {str(FAKE_CLAUDE)!r}], stdin=subprocess.DEVNULL)\n"
        "h.arm(claude.pid)\n"
        "print(h.pid, claude.pid, flush=True)\n"
        "sys.stdin.readline()\n"
        "os.close(h._control)\n"  # its files closed, no stop said: dying
        "sys.stdin.readline()\n"
        "os._exit(9)\n"
    )
    supervisor = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  env=env)  # fmt: skip
    children.append(supervisor)
    watchdog, claude = map(int, supervisor.stdout.readline().split())  # type: ignore[union-attr]
    fake.wait_event("mark", name="ready")
    tokens = {watchdog: start_token(watchdog), claude: start_token(claude)}
    supervisor.stdin.write(b"\n")  # type: ignore[union-attr]
    supervisor.stdin.flush()  # type: ignore[union-attr]
    time.sleep(2.5)  # longer than any fixed wait for the reparenting would be
    assert alive(watchdog, tokens[watchdog]), "the watchdog gave up on a supervisor that had not died yet"
    assert alive(claude, tokens[claude]), "nothing is ended while the supervisor lives"
    supervisor.stdin.write(b"\n")  # type: ignore[union-attr]
    supervisor.stdin.flush()  # type: ignore[union-attr]
    assert supervisor.wait(timeout=30) == 9
    wait_until(lambda: not alive(claude, tokens[claude]), 10, "the orphaned Claude to be ended")
    wait_until(lambda: not alive(watchdog, tokens[watchdog]), 10, "the watchdog to exit after it")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")
def test_the_parent_death_signal_of_a_thread_ending_ends_no_watch(
    fake: FakeClaude, env: dict[str, str], children: list
) -> None:
    """The kernel sends the parent-death signal when the *thread* that forked the watchdog ends: a
    SIGKILLed claude-run's threads end one by one (its stderr tail last), so the signal can come while
    the supervisor still is the watchdog's parent. The watchdog that took it for the end exited and left
    Claude running; it must watch on until its supervisor is really gone, then end Claude."""
    fake.plan([{"mark": "ready"}, {"wait": None}])
    code = (
        "import os, subprocess, sys, threading, time\n"
        "from claude_shepherd.supervisor.claude_run.watchdog import WatchdogHandle\n"
        "made = []\n"
        "forker = threading.Thread(target=lambda: (made.append(WatchdogHandle.start(supervisor_pid=os.getpid(), "
        "grace=0.5)), time.sleep(1)))\n"
        "forker.start(); forker.join()\n"  # the forking thread ended (its watchdog set up): the signal is sent
        f"claude = subprocess.Popen([sys.executable, {str(FAKE_CLAUDE)!r}], stdin=subprocess.DEVNULL)\n"
        "made[0].arm(claude.pid)\n"
        "print(made[0].pid, claude.pid, flush=True)\n"
        "sys.stdin.readline()\n"
        "os._exit(9)\n"
    )
    supervisor = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  env=env)  # fmt: skip
    children.append(supervisor)
    watchdog, claude = map(int, supervisor.stdout.readline().split())  # type: ignore[union-attr]
    fake.wait_event("mark", name="ready")
    tokens = {watchdog: start_token(watchdog), claude: start_token(claude)}
    time.sleep(1.5)
    assert alive(watchdog, tokens[watchdog]), "the watchdog exited while its supervisor lived"
    supervisor.stdin.write(b"\n")  # type: ignore[union-attr]
    supervisor.stdin.flush()  # type: ignore[union-attr]
    assert supervisor.wait(timeout=30) == 9
    wait_until(lambda: not alive(claude, tokens[claude]), 10, "the orphaned Claude to be ended")
    wait_until(lambda: not alive(watchdog, tokens[watchdog]), 10, "the watchdog to exit after it")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")
def test_parent_death_signal_is_available_on_linux() -> None:
    code = (
        "import signal, sys\n"
        "from claude_shepherd.supervisor.claude_run.watchdog import set_parent_death_signal\n"
        "sys.exit(0 if set_parent_death_signal(signal.SIGTERM) else 1)\n"
    )
    assert subprocess.run([sys.executable, "-c", code], timeout=20).returncode == 0


def test_wait_pid_times_out_on_a_running_child(children: list) -> None:
    proc = subprocess.Popen(["sleep", "30"])
    children.append(proc)
    assert wait_pid(proc.pid, 0.05) is None
    proc.kill()
    assert wait_pid(proc.pid, 5) == -signal.SIGKILL
    proc.returncode = -signal.SIGKILL  # reaped here; keep Popen from waiting again
