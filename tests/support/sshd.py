"""A real "remote host" for multi-host tests: another local account on 127.0.0.1 behind a real sshd.

The session-scoped fixture ``ssh_host`` creates a fresh user (``shrt`` + 6 hex digits, its own HOME),
a throwaway host key and client key, and runs Debian's ``/usr/sbin/sshd`` in the foreground on a free
loopback port with a private ``sshd_config``. The client side is one ``ssh_config`` file naming the
host ``remote`` (and ``remote-1`` … ``remote-8``, the same host under eight aliases for the benchmark of
``fleet status`` against many hosts); ``ssh -F <that file>`` is all a test needs, so nothing of root's
``~/.ssh`` is read or written. The remote sessions get ``CLAUDE_BIN`` (a stand-in Claude in the remote
home, run by Debian's ``/usr/bin/python3``) and ``FLEET_TEST_DIR`` from sshd's ``SetEnv``.

``stop_sshd()`` ends the listener and every sshd process of its connections — multiplexed masters see
their connection closed at once, as when a host's sshd dies —, never the remote user's own processes
(its tmux server survives); ``freeze_sshd()`` instead stops them all with SIGSTOP, a host that no
longer answers (connections hang until the client's timeouts), until ``thaw_sshd()``.

At teardown every process of the user is killed, the user and its home are removed (``userdel -r``),
so are the files it left at the top of ``/tmp``, ``/var/tmp`` and ``/dev/shm`` (its tmux socket
folder), and the private folder of keys and configs; a run killed before its teardown leaves them,
and the next run's ``ssh_host`` reclaims them (the account's comment names the run that owns it).
Tests are skipped with the reason where this
cannot run: not root, no sshd, ssh or ssh-keygen, or an sshd that does not start.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import typing as t
from pathlib import Path

import psutil
import pytest
from support.claude_run import FAKE_CLAUDE

SSHD = "/usr/sbin/sshd"
REMOTE_PYTHON = "/usr/bin/python3"
"""The remote's Python: Debian's, readable by every user (root's pyenv under /root is not)."""
GECOS = "claude-shepherd ssh test host"
"""The comment of the accounts, then the PID and start time of the test run that owns it and its folder."""
ALIAS = "remote"
ALIASES = (ALIAS, *(f"{ALIAS}-{n}" for n in range(1, 9)))
START_TIMEOUT = 30.0
GONE_TIMEOUT = 15.0
TMP_ROOTS = ("/tmp", "/var/tmp", "/dev/shm")


class SshdUnavailable(Exception):
    """This machine cannot run the harness; the message says why (tests skip with it)."""


def unavailable() -> str | None:
    """Why the harness cannot run here, or None."""
    if os.geteuid() != 0:
        return "the ssh harness needs root (useradd for the remote account, sshd)"
    if not os.access(SSHD, os.X_OK):
        return f"{SSHD} is missing: install openssh-server"
    for tool in ("ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            return f"{tool} is missing: install openssh-client"
    if not os.access(REMOTE_PYTHON, os.X_OK):
        return f"{REMOTE_PYTHON} is missing: the remote account's Python"
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def is_sshd(proc: psutil.Process) -> bool:
    """An sshd process (``sshd``; OpenSSH 9.8+ also runs ``sshd-session`` and ``sshd-auth``)."""
    try:
        return proc.name().startswith("sshd")
    except psutil.Error:
        return False


def gone(proc: psutil.Process) -> bool:
    """Exited: no longer there, or a zombie (only its parent, or init, can still reap it)."""
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def wait_gone(procs: t.Iterable[psutil.Process], what: str, timeout: float = GONE_TIMEOUT) -> None:
    left = list(procs)
    deadline = time.monotonic() + timeout
    while left := [p for p in left if not gone(p)]:
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} still running after {timeout:g}s: {[p.pid for p in left]}")
        time.sleep(0.02)


def signal_all(procs: t.Iterable[psutil.Process], sig: int) -> None:
    for proc in procs:
        try:
            proc.send_signal(sig)
        except psutil.Error:
            pass


def sshd_tree(listener_pid: int, sig: int) -> list[psutil.Process]:
    """Send *sig* to an sshd listener and to every sshd process under it; returns them all.

    The listener is stopped first (SIGSTOP: it forks no new connection meanwhile), then each
    generation of sshd processes below it, until no new one appears; only then does *sig* go out.
    The remote user's own processes (shells, tmux) are never signalled.
    """
    try:
        listener = psutil.Process(listener_pid)
        listener.suspend()
    except psutil.Error:
        return []
    stopped = {listener.pid: listener}
    while True:
        try:
            below = [p for p in listener.children(recursive=True) if p.pid not in stopped and is_sshd(p)]
        except psutil.Error:
            below = []
        if not below:
            break
        for proc in below:
            stopped[proc.pid] = proc
        signal_all(below, signal.SIGSTOP)
    procs = list(stopped.values())
    if sig != signal.SIGSTOP:
        signal_all(procs, sig)
    return procs


def owner(pid: int | None = None) -> str:
    """``PID START``: a process, told apart from a later one with the same PID by its start time."""
    proc = psutil.Process(pid)
    return f"{proc.pid} {int(proc.create_time() * 100)}"


def alive(owner_field: str) -> bool:
    try:
        pid, _ = owner_field.split()
        return owner(int(pid)) == owner_field
    except (ValueError, psutil.Error):
        return False


def reclaim_stale() -> list[str]:
    """Remove the accounts (and their sshd, processes, folders) of test runs that were killed before
    their teardown; returns their names. Those of runs still going (CI runs two suites at once) stay."""
    removed = []
    for entry in pwd.getpwall():
        words = entry.pw_gecos.removeprefix(GECOS).split()
        if not (entry.pw_name.startswith("shrt") and entry.pw_gecos.startswith(GECOS) and len(words) == 3):
            continue
        if alive(f"{words[0]} {words[1]}"):
            continue
        tmp = Path(words[2])
        if not tmp.name.startswith("shrt-sshd-"):
            continue
        host = SshHost(tmp=tmp)
        host.user, host.uid, host.gid, host.home = (
            entry.pw_name,
            entry.pw_uid,
            entry.pw_gid,
            Path(entry.pw_dir),
        )
        host._user_created = True
        try:
            host.close()
        except AssertionError:
            continue
        removed.append(entry.pw_name)
    return removed


def run_quiet(argv: list[str], what: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise AssertionError(f"{what} failed ({done.returncode}): {(done.stderr or done.stdout).strip()}")
    return done


class SshHost:
    """Another account on 127.0.0.1 reached through a real sshd: the "remote host" of multi-host tests.

    Attributes: ``user``, ``uid``, ``gid``, ``home`` (its HOME), ``port``, ``alias`` (``"remote"``),
    ``aliases`` (``remote``, ``remote-1`` … ``remote-8``), ``ssh_config`` (the client config),
    ``ssh_command`` (``ssh -F <ssh_config>``), ``env`` (for the local side: ``FLEET_SSH_COMMAND``),
    ``remote_env`` (what sshd sets in the remote sessions), ``claude_bin`` and ``test_dir`` (their
    values), ``tmp`` (the private folder of keys, configs and ``sshd.log``), ``sshd_log``.
    """

    def __init__(self, tmp: Path | None = None) -> None:
        self.user = f"shrt{secrets.token_hex(3)}"
        self.uid = -1
        self.gid = -1
        self.home = Path("/nonexistent")
        self.alias = ALIAS
        self.aliases = ALIASES
        self.tmp = tmp or Path(tempfile.mkdtemp(prefix="shrt-sshd-", dir="/tmp"))
        self.port = free_port() if tmp is None else 0
        self.ssh_config = self.tmp / "ssh_config"
        self.sshd_config = self.tmp / "sshd_config"
        self.sshd_log = self.tmp / "sshd.log"
        self.pid_file = self.tmp / "sshd.pid"
        self.host_key = self.tmp / "ssh_host_ed25519_key"
        self.identity = self.tmp / "id_ed25519"
        self.known_hosts = self.tmp / "known_hosts"
        self.ssh_command = shlex.join(["ssh", "-F", str(self.ssh_config)])
        self.env: dict[str, str] = {"FLEET_SSH_COMMAND": self.ssh_command}
        self.remote_env: dict[str, str] = {}
        self.claude_bin = Path("/nonexistent")
        self.test_dir = Path("/nonexistent")
        self._sshd: subprocess.Popen[bytes] | None = None
        self._frozen: list[psutil.Process] = []
        self._user_created = False

    # ------------------------------------------------------------------ setup

    @classmethod
    def create(cls) -> SshHost:
        """A running host; on any failure what was made so far is removed before the error is raised."""
        host = cls()
        try:
            host._make_user()
            host._make_keys()
            host._write_configs()
            host.start_sshd()
        except BaseException:
            host.close()
            raise
        return host

    def _make_user(self) -> None:
        run_quiet(
            ["useradd", "-m", "-s", "/bin/bash", "-c", f"{GECOS} {owner()} {self.tmp}", self.user],
            f"useradd {self.user}",
        )
        self._user_created = True
        # useradd leaves the password '!' (locked): without PAM, sshd refuses any login of a locked
        # account, keys included. '*' matches no password and is not "locked".
        run_quiet(["usermod", "-p", "*", self.user], f"usermod -p '*' {self.user}")
        entry = pwd.getpwnam(self.user)
        self.uid, self.gid, self.home = entry.pw_uid, entry.pw_gid, Path(entry.pw_dir)
        fake_bin = self.home / "fake-bin"
        fake_bin.mkdir()
        shutil.copyfile(FAKE_CLAUDE, fake_bin / "fake_claude.py")
        self.claude_bin = fake_bin / "claude"
        self.claude_bin.write_text(f'#!/bin/sh\nexec {REMOTE_PYTHON} "$HOME/fake-bin/fake_claude.py" "$@"\n')
        self.claude_bin.chmod(0o755)
        self.test_dir = self.home / "agents"
        self.test_dir.mkdir()
        ssh_dir = self.home / ".ssh"
        ssh_dir.mkdir(mode=0o700)
        for path in (fake_bin, fake_bin / "fake_claude.py", self.claude_bin, self.test_dir, ssh_dir):
            os.chown(path, self.uid, self.gid)
        self.remote_env = {"CLAUDE_BIN": str(self.claude_bin), "FLEET_TEST_DIR": str(self.test_dir)}

    def _make_keys(self) -> None:
        for key, comment in ((self.host_key, "host"), (self.identity, "client")):
            run_quiet(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"shrt-{comment}", "-f", str(key)],
                f"ssh-keygen ({comment} key)",
            )
        authorized = self.home / ".ssh" / "authorized_keys"
        authorized.write_text(self.identity.with_suffix(".pub").read_text())
        authorized.chmod(0o600)
        os.chown(authorized, self.uid, self.gid)
        host_pub = self.host_key.with_name(self.host_key.name + ".pub").read_text().split()
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {host_pub[0]} {host_pub[1]}\n")

    def _write_configs(self) -> None:
        # sshd reads one SetEnv line only (the first): every variable goes on it.
        setenv = " ".join(f"{name}={value}" for name, value in self.remote_env.items())
        self.sshd_config.write_text(
            f"ListenAddress 127.0.0.1\n"
            f"Port {self.port}\n"
            f"HostKey {self.host_key}\n"
            f"PidFile {self.pid_file}\n"
            f"AuthorizedKeysFile {self.home / '.ssh' / 'authorized_keys'}\n"
            "StrictModes no\n"
            "UsePAM no\n"
            "PasswordAuthentication no\n"
            "KbdInteractiveAuthentication no\n"
            "PubkeyAuthentication yes\n"
            f"AllowUsers {self.user}\n"
            "PermitRootLogin no\n"
            "MaxSessions 64\n"
            "MaxStartups 64:30:128\n"
            "PrintMotd no\n"
            "PrintLastLog no\n"
            "X11Forwarding no\n"
            f"SetEnv {setenv}\n"
        )
        self.ssh_config.write_text(
            f"Host {' '.join(self.aliases)}\n"
            "    HostName 127.0.0.1\n"
            f"    Port {self.port}\n"
            f"    User {self.user}\n"
            f"    IdentityFile {self.identity}\n"
            "    IdentitiesOnly yes\n"
            "    BatchMode yes\n"
            f"    UserKnownHostsFile {self.known_hosts}\n"
            "    GlobalKnownHostsFile /dev/null\n"
            "    StrictHostKeyChecking yes\n"
            "    ConnectTimeout 5\n"
            "    LogLevel ERROR\n"
        )
        self.ssh_config.chmod(0o600)

    # ------------------------------------------------------------------ sshd

    def log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.sshd_log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    @property
    def sshd_pid(self) -> int | None:
        """The listener's PID while it runs."""
        return self._sshd.pid if self._sshd is not None and self._sshd.poll() is None else None

    def start_sshd(self) -> None:
        """Start sshd on the same port; returns once the port accepts. SshdUnavailable if it does not."""
        if self.sshd_pid is not None:
            return
        Path("/run/sshd").mkdir(mode=0o755, parents=True, exist_ok=True)  # privilege separation
        self.pid_file.unlink(missing_ok=True)
        with open(self.sshd_log, "ab") as log:
            self._sshd = subprocess.Popen(
                [SSHD, "-f", str(self.sshd_config), "-D", "-e"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_TIMEOUT
        # sshd writes its PID file once it listens: a port that accepts without it may be another's.
        while not (self._pid_file_says(self._sshd.pid) and accepts(self.port)):
            code = self._sshd.poll()
            if code is not None or time.monotonic() > deadline:
                if code is None:
                    self._sshd.kill()
                    self._sshd.wait()
                self._sshd = None
                state = (
                    f"exited with {code}" if code is not None else f"not listening after {START_TIMEOUT:g}s"
                )
                raise SshdUnavailable(f"sshd on 127.0.0.1:{self.port} {state}; its log:\n{self.log_tail()}")
            time.sleep(0.01)

    def _pid_file_says(self, pid: int) -> bool:
        try:
            return self.pid_file.read_text().strip() == str(pid)
        except OSError:
            return False

    def _sshd_tree(self, sig: int) -> list[psutil.Process]:
        return [] if self.sshd_pid is None else sshd_tree(self.sshd_pid, sig)

    def _strays(self) -> list[psutil.Process]:
        """sshd listeners of our config that we do not hold (left by a test run that was killed)."""
        config = f" -f {self.sshd_config} "
        out = []
        for proc in psutil.process_iter(["cmdline"]):
            if proc.pid != self.sshd_pid and config in f" {' '.join(proc.info['cmdline'] or [])} ":
                out.append(proc)
        return [p for p in out if is_sshd(p)]

    def stop_sshd(self) -> None:
        """End the listener and every sshd process of its connections, as when the host's sshd dies:
        multiplexed connections close at once and no new one is accepted. The remote user's other
        processes (its tmux server, commands of the sessions) are left running."""
        if self._sshd is None:
            return
        procs = self._sshd_tree(signal.SIGKILL)
        self._frozen = []
        self._sshd.wait()
        self._sshd = None
        wait_gone(procs, "sshd processes")

    def freeze_sshd(self) -> None:
        """SIGSTOP the listener and every sshd process of its connections: a host that stopped
        answering (nothing is refused or closed; clients wait for their own timeouts)."""
        self._frozen = self._sshd_tree(signal.SIGSTOP)

    def thaw_sshd(self) -> None:
        """Let the sshd processes ``freeze_sshd`` stopped run again."""
        signal_all(self._frozen, signal.SIGCONT)
        self._frozen = []

    # ------------------------------------------------------------------ use

    def run(self, command: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        """Run a shell *command* on the remote over a plain ``ssh -F cfg remote`` (no multiplexing)."""
        return subprocess.run(
            ["ssh", "-F", str(self.ssh_config), "-o", "ControlPath=none", self.alias, command],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def processes(self) -> list[psutil.Process]:
        """Every live process of the remote user (by real, effective or saved UID; zombies left out)."""
        out = []
        for proc in psutil.process_iter(["uids"]):
            uids = proc.info["uids"]
            if uids is not None and self.uid in tuple(uids) and not gone(proc):
                out.append(proc)
        return out

    def kill_user_processes(self) -> None:
        """SIGKILL every process of the remote user (its sshd sessions included) and wait until gone."""
        if self.uid < 0:
            return
        deadline = time.monotonic() + GONE_TIMEOUT
        while procs := self.processes():  # again: one may have forked meanwhile
            if time.monotonic() > deadline:
                raise AssertionError(f"processes of {self.user} still running: {[p.pid for p in procs]}")
            signal_all(procs, signal.SIGKILL)
            wait_gone(procs, f"processes of {self.user}")

    # ------------------------------------------------------------------ teardown

    def _remove_user(self) -> None:
        # A killed orphan stays a zombie until init reaps it (here about a second later); userdel
        # counts zombies as processes of the user, so wait for them a while, then force.
        deadline = time.monotonic() + GONE_TIMEOUT
        while self._any_pid_of_user() and time.monotonic() < deadline:
            time.sleep(0.05)
        force = ["-f"] if self._any_pid_of_user() else []
        subprocess.run(
            ["userdel", "-r", *force, self.user],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        try:
            pwd.getpwnam(self.user)
        except KeyError:
            self._user_created = False
        else:
            raise AssertionError(f"userdel -r {self.user} left the account in place")

    def _any_pid_of_user(self) -> bool:
        for proc in psutil.process_iter(["uids"]):
            uids = proc.info["uids"]
            if uids is not None and self.uid in tuple(uids):
                return True
        return False

    def _sweep_tmp(self) -> None:
        """Remove what the user left at the top of the shared temporary folders (tmux-UID/ and such)."""
        for root in TMP_ROOTS:
            try:
                entries = list(os.scandir(root))
            except OSError:
                continue
            for entry in entries:
                try:
                    if entry.stat(follow_symlinks=False).st_uid != self.uid:
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        shutil.rmtree(entry.path)
                    else:
                        os.unlink(entry.path)
                except OSError:
                    continue

    def close(self) -> None:
        """Stop sshd, kill the user's processes, remove the user, its home and files, and our folder."""
        errors: list[str] = []
        steps: list[tuple[str, t.Callable[[], None]]] = [
            ("stop sshd", self.thaw_and_stop),
            ("kill the user's processes", self.kill_user_processes),
        ]
        # /tmp first: once the account is gone, its UID may be the next account's (a suite beside this one)
        if self.uid >= 0:
            steps += [("sweep /tmp", self._sweep_tmp)]
        if self._user_created:
            steps += [("remove the user", self._remove_user)]
        for what, step in steps:
            try:
                step()
            except Exception as exc:
                errors.append(f"{what}: {exc}")
        shutil.rmtree(self.tmp, ignore_errors=True)
        if errors:
            raise AssertionError(f"ssh host {self.user} teardown: " + "; ".join(errors))

    def thaw_and_stop(self) -> None:
        self.thaw_sshd()
        self.stop_sshd()
        for stray in self._strays():
            procs = sshd_tree(stray.pid, signal.SIGKILL)
            wait_gone(procs, "stray sshd processes")


@pytest.fixture(scope="session")
def ssh_host() -> t.Iterator[SshHost]:
    """The remote host of multi-host tests (one per session; see the module's docstring)."""
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)
    reclaim_stale()
    try:
        host = SshHost.create()
    except SshdUnavailable as exc:
        pytest.skip(str(exc))
    try:
        yield host
    finally:
        host.close()


@pytest.fixture(scope="session")
def other_account() -> t.Iterator[SshHost]:
    """Another local account and nothing more (no keys, no sshd): someone else on this machine, for the
    tests of what another user could do to ours. Removed as ``ssh_host``'s is, with what it left in /tmp."""
    if os.geteuid() != 0:
        pytest.skip("another local account needs root (useradd)")
    reclaim_stale()
    account = SshHost()
    try:
        account._make_user()
        yield account
    finally:
        account.close()


def as_user(account: SshHost, *argv: str) -> None:
    """Run *argv* as *account* (its own uid and groups, nothing of ours), and insist it succeeded."""
    run_quiet(["setpriv", f"--reuid={account.uid}", f"--regid={account.gid}", "--init-groups", *argv],
              f"{argv[0]} as {account.user}")  # fmt: skip
