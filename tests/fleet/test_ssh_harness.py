"""The ssh harness itself: the "remote host" is another account behind a real sshd, reachable under
its aliases, multiplexable, and it goes away and comes back when a test says so."""

from __future__ import annotations

import json
import os
import pwd
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import typing as t
from pathlib import Path

import psutil
import pytest
from support import sshd
from support.sshd import SshHost
from support.waiting import wait_until


def ssh(host: SshHost, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """``$FLEET_SSH_COMMAND ARGS``, as the fleet will run it."""
    return subprocess.run(
        [*shlex.split(host.env["FLEET_SSH_COMMAND"]), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def control_dir() -> t.Iterator[Path]:
    """A private, short folder for control sockets (a socket path has ~104 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="cm-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def mux(control_dir: Path) -> list[str]:
    return ["-o", "ControlMaster=auto", "-o", f"ControlPath={control_dir}/%C", "-o", "ControlPersist=60"]


@pytest.fixture
def master(ssh_host: SshHost, control_dir: Path) -> t.Iterator[list[str]]:
    """The multiplexing options; a master started with them is told to exit at teardown."""
    opts = mux(control_dir)
    yield opts
    ssh(ssh_host, *opts, "-O", "exit", ssh_host.alias, timeout=10)


def accepted(host: SshHost) -> int:
    """Connections sshd has authenticated so far."""
    return host.sshd_log.read_text(errors="replace").count("Accepted publickey for ")


def test_the_remote_is_another_account_with_its_own_home(ssh_host: SshHost) -> None:
    done = ssh_host.run('id -un; id -u; printf "%s\\n" "$HOME"')
    assert done.returncode == 0, done.stderr
    user, uid, home = done.stdout.splitlines()
    assert (user, int(uid), home) == (ssh_host.user, ssh_host.uid, str(ssh_host.home))
    assert home != str(Path.home()) and home != os.environ.get("HOME")
    assert ssh_host.uid != os.getuid()


def test_the_remote_python_makes_venvs(ssh_host: SshHost) -> None:
    done = ssh_host.run("/usr/bin/python3 -c 'import venv, ensurepip, sys; print(sys.version_info[:2])'")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() >= "(3, 11)"


def test_the_remote_sessions_run_the_stand_in_claude(ssh_host: SshHost) -> None:
    done = ssh_host.run(
        'printf "%s\\n" "$CLAUDE_BIN" "$FLEET_TEST_DIR"; '
        'FAKE_CLAUDE_LOG="$FLEET_TEST_DIR/harness.log" "$CLAUDE_BIN" --version && '
        'cat "$FLEET_TEST_DIR/harness.log" && rm "$FLEET_TEST_DIR/harness.log"'
    )
    assert done.returncode == 0, done.stderr
    claude_bin, test_dir, version, *log = done.stdout.splitlines()
    assert claude_bin == str(ssh_host.home / "fake-bin" / "claude")
    assert version == "2.1.332 (Claude Code)", "it answers as Claude Code does"
    assert test_dir == str(ssh_host.home / "agents")
    events = [json.loads(line) for line in log]
    assert [e["event"] for e in events][:1] == ["version"]
    assert events[0]["argv"] == ["--version"] and events[0]["cwd"] == str(ssh_host.home)


def test_every_alias_reaches_the_host(ssh_host: SshHost) -> None:
    assert len(ssh_host.aliases) == 9 and ssh_host.aliases[0] == ssh_host.alias == "remote"
    for alias in ("remote-1", "remote-3", "remote-8"):
        done = ssh(ssh_host, alias, "id -un")
        assert (done.returncode, done.stdout.strip()) == (0, ssh_host.user), done.stderr
    assert ssh(ssh_host, "remote-9", "true").returncode == 255  # not an alias: no such host


def test_a_multiplexed_connection_is_reused(ssh_host: SshHost, master: list[str]) -> None:
    before = accepted(ssh_host)
    first = ssh(ssh_host, *master, ssh_host.alias, "echo one")
    assert (first.returncode, first.stdout) == (0, "one\n"), first.stderr
    check = ssh(ssh_host, *master, "-O", "check", ssh_host.alias)
    assert check.returncode == 0 and "Master running" in check.stderr, check.stderr
    second = ssh(ssh_host, *master, ssh_host.alias, "echo two")
    assert (second.returncode, second.stdout) == (0, "two\n"), second.stderr
    assert ssh(ssh_host, *master, "-O", "check", ssh_host.alias).stderr == check.stderr  # the same pid
    assert accepted(ssh_host) == before + 1  # one authentication for both sessions


def test_a_stopped_sshd_is_unreachable_until_started(ssh_host: SshHost, master: list[str]) -> None:
    assert ssh(ssh_host, *master, ssh_host.alias, "true").returncode == 0
    # a process of the remote user outside any ssh session, as its tmux server will be
    daemon = ssh_host.run("setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $!")
    assert daemon.returncode == 0, daemon.stderr
    pid = int(daemon.stdout)
    try:
        ssh_host.stop_sshd()
        assert ssh_host.sshd_pid is None
        began = time.monotonic()
        fresh = ssh(ssh_host, "-o", "ConnectTimeout=2", ssh_host.alias, "true")
        assert fresh.returncode == 255 and time.monotonic() - began < 3, fresh.stderr
        wait_until(
            lambda: ssh(ssh_host, *master, "-O", "check", ssh_host.alias).returncode != 0,
            5,
            "the master to see its connection gone",
        )
        assert ssh(ssh_host, *master, ssh_host.alias, "true").returncode == 255
        assert Path(f"/proc/{pid}").exists(), "stop_sshd killed a process of the remote user"
    finally:
        ssh_host.start_sshd()
    assert ssh_host.sshd_pid is not None
    again = ssh(ssh_host, *master, ssh_host.alias, f"kill {pid} && echo back")
    assert (again.returncode, again.stdout) == (0, "back\n"), again.stderr
    assert ssh(ssh_host, *master, "-O", "check", ssh_host.alias).returncode == 0


def test_a_frozen_sshd_answers_nothing_until_thawed(ssh_host: SshHost, master: list[str]) -> None:
    assert ssh(ssh_host, *master, ssh_host.alias, "true").returncode == 0
    ssh_host.freeze_sshd()
    try:
        began = time.monotonic()
        fresh = ssh(ssh_host, "-o", "ConnectTimeout=1", ssh_host.alias, "true")
        assert fresh.returncode == 255 and time.monotonic() - began >= 0.9, fresh.stderr
        with pytest.raises(subprocess.TimeoutExpired):  # the master is up, but the host says nothing
            ssh(ssh_host, *master, ssh_host.alias, "true", timeout=1.5)
    finally:
        ssh_host.thaw_sshd()
    done = ssh(ssh_host, *master, ssh_host.alias, "echo awake")
    assert (done.returncode, done.stdout) == (0, "awake\n"), done.stderr


def test_an_sshd_that_cannot_start_is_reported_and_leaves_nothing(
    ssh_host: SshHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the fixture skips with when sshd does not start: its log says why; and the account made
    for it is gone again (``ssh_host`` only makes this test run where the harness can)."""
    made: list[SshHost] = []
    monkeypatch.setattr(sshd.SshHost, "_make_keys", record_and(sshd.SshHost._make_keys, made))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setattr(sshd, "free_port", lambda: port)
        try:
            sshd.SshHost.create().close()
        except sshd.SshdUnavailable as exc:
            reason = str(exc)
        else:
            pytest.fail(f"an sshd started on 127.0.0.1:{port}, a port taken by another")
    assert f"sshd on 127.0.0.1:{port} exited" in reason and "Address already in use" in reason, reason
    (host,) = made
    assert host.user != ssh_host.user
    with pytest.raises(KeyError):
        pwd.getpwnam(host.user)
    assert not host.home.exists() and not host.tmp.exists()


def record_and(method: t.Callable[[SshHost], None], made: list[SshHost]) -> t.Callable[[SshHost], None]:
    def wrapper(self: SshHost) -> None:
        made.append(self)
        method(self)

    return wrapper


def test_a_run_killed_before_its_teardown_is_reclaimed_by_the_next(ssh_host: SshHost) -> None:
    """A test run SIGKILLed with its remote host up leaves an account, its sshd and its processes;
    the next run's ``ssh_host`` removes them, and never the host of a run still going (ours)."""
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_RUN],
        capture_output=True,
        text=True,
        cwd=Path(sshd.__file__).parent.parent,
        timeout=60,
    )
    assert killed.returncode == -9, killed.stderr
    user, tmp = killed.stdout.split()
    uid = pwd.getpwnam(user).pw_uid
    assert ssh_host.user not in sshd.reclaim_stale()  # a suite running beside this one may reclaim it first

    def left() -> list[str]:
        try:
            now = pwd.getpwuid(uid).pw_name
        except KeyError:
            now = None
        out = [f"account {user}"] if now == user else []
        if now in (user, None):  # not yet the UID of a new account (a suite beside this one)
            out += [f"process {p.pid}" for p in psutil.process_iter(["uids"]) if uid in p.info["uids"]]
            out += [f"/tmp/tmux-{uid}"] if Path(f"/tmp/tmux-{uid}").exists() else []
        out += [f"sshd {p.pid}" for p in psutil.process_iter(["cmdline"]) if tmp in str(p.info["cmdline"])]
        return out + ([tmp] if Path(tmp).exists() else [])

    wait_until(lambda: not left(), 20, "the killed run's host to be gone")
    assert ssh_host.run("true").returncode == 0


KILLED_RUN = """
import os, signal
from support.sshd import SshHost
host = SshHost.create()
done = host.run("tmux new-session -d -s keep 'sleep 1000'; setsid sleep 999 </dev/null >/dev/null 2>&1 &")
assert done.returncode == 0, done.stderr
print(host.user, host.tmp, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""
