"""Test harness for claude-run: the stand-in Claude, a pty driver, a fleet tmux, and a reaper.

* :class:`FakeClaude` — a ``claude`` wrapper around ``tests/fake_claude.py``,
  its per-invocation plans and its log.
* :class:`PtyRun` — ``claude-run`` started with ``pty.fork()``: it is the
  session leader with the pty as its controlling terminal and in the
  terminal's foreground, as in a tmux pane. Output is read continuously.
* :class:`FleetTmux` — a real tmux server on a private ``fleet-pytest-*``
  socket with one labelled pane, whose ``TMUX``/``TMUX_PANE`` make claude-run
  believe it runs in a fleet pane.
* :func:`reap` — every process started for a test carries ``SHEPHERD_TEST_TAG``
  in its environment; at teardown each one still running is SIGKILLed by PID.

Fixtures importing this module get: ``fake`` (a FakeClaude), ``run_env`` (a
clean environment for claude-run), ``start_run`` (starts a PtyRun, killed at
teardown), ``fleet_tmux``.
"""

from __future__ import annotations

import json
import os
import pty
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import typing as t
import uuid
from pathlib import Path

import psutil
import pytest
from support.waiting import wait_until

from claude_shepherd.supervisor.claude_run.watchdog import wait_pid
from claude_shepherd.supervisor.session.identity import start_token

TESTS = Path(__file__).resolve().parent.parent
FAKE_CLAUDE = TESTS / "fake_claude.py"
BIN = Path(sys.executable).parent
TAG_ENV = "SHEPHERD_TEST_TAG"
DEAD_PID = 4_194_304  # PID_MAX: PIDs stay below pid_max, so no process ever has it
"""Above any Linux pid_max: a PID that is certainly not running."""


def claude_run_path() -> str:
    path = BIN / "claude-run"
    if not path.exists():
        pytest.fail(f"claude-run is not installed in {BIN}; run pip install -e '.[test]'")
    return str(path)


# --------------------------------------------------------------------------- processes


def tagged(tag: str) -> list[psutil.Process]:
    """Every live process whose environment carries this test's tag."""
    found = []
    for proc in psutil.process_iter(["pid"]):
        if proc.pid == os.getpid():
            continue
        try:
            if proc.environ().get(TAG_ENV) == tag:
                found.append(proc)
        except (psutil.Error, OSError):
            continue
    return found


def reap(tag: str) -> list[int]:
    """SIGKILL every process of the test; returns the PIDs that had been left running."""
    left = tagged(tag)
    for proc in left:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(left, timeout=3)
    return [p.pid for p in left]


def alive(pid: int, token: str | None = None) -> bool:
    """Is *pid* running (and not a zombie), and still the process of *token*?"""
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
    except psutil.Error:
        return False
    return token is None or start_token(pid) == token


# --------------------------------------------------------------------------- the stand-in


class FakeClaude:
    """The stand-in ``claude`` of one test: wrapper script, plans, log."""

    def __init__(self, base: Path) -> None:
        self.bin_dir = base / "fake-bin"
        self.bin_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.bin_dir / "claude"
        self.path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_CLAUDE}" "$@"\n')
        self.path.chmod(0o755)
        self.log = base / "fake_claude.jsonl"
        self.script = base / "fake_claude_script.json"
        self.plan()

    def plan(self, *invocations: t.Any, default: t.Any = None) -> None:
        """One plan per invocation (a list of steps, or ``{"resume": ..., "steps": [...]}``)."""
        self.script.write_text(json.dumps({"invocations": list(invocations), "default": default or []}))

    def events(self, kind: str | None = None) -> list[dict[str, t.Any]]:
        try:
            lines = self.log.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        events = [json.loads(line) for line in lines if line.strip()]
        return [e for e in events if kind is None or e["event"] == kind]

    def starts(self) -> list[dict[str, t.Any]]:
        return self.events("start")

    def wait_starts(self, count: int, timeout: float = 10) -> list[dict[str, t.Any]]:
        return wait_until(
            lambda: (s := self.starts()) and len(s) >= count and s, timeout, f"{count} Claude start(s)"
        )

    def wait_event(self, kind: str, timeout: float = 10, **match: t.Any) -> dict[str, t.Any]:
        def find() -> dict[str, t.Any] | None:
            for event in self.events(kind):
                if all(event.get(k) == v for k, v in match.items()):
                    return event
            return None

        return wait_until(find, timeout, f"fake_claude event {kind} {match}")


# --------------------------------------------------------------------------- pty


class _Run:
    """What a running ``claude-run`` offers a test, however it was started."""

    pid: int
    status: int | None
    text: str

    def wait(self, timeout: float = 60) -> int:
        raise NotImplementedError

    def expect(self, needle: str, timeout: float = 10) -> None:
        try:
            wait_until(lambda: needle in self.text, timeout, f"{needle!r} in the output")
        except AssertionError as exc:  # the output as it stood when the wait gave up, not when it began
            raise AssertionError(f"{exc}:\n{self.text}") from None

    def _kill(self) -> None:
        """SIGKILL it if it still runs, and collect its status."""
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                self.wait(timeout=30)
            except AssertionError:
                pass


class PtyRun(_Run):
    """``claude-run`` on a fresh pty, like the command of a tmux pane."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        pid, fd = pty.fork()
        if pid == 0:  # child: never return into pytest
            try:
                os.chdir(cwd)
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)
        self.pid = pid
        self.fd = fd
        self.status: int | None = None
        self._output = bytearray()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                ready, _, _ = select.select([self.fd], [], [], 0.2)
                if not ready:
                    if self.status is not None:
                        return
                    continue
                chunk = os.read(self.fd, 4096)
            except OSError:
                return  # EIO: every slave side is closed
            if not chunk:
                return
            with self._lock:
                self._output += chunk

    @property
    def text(self) -> str:
        with self._lock:
            return self._output.decode("utf-8", "replace").replace("\r\n", "\n")

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def wait(self, timeout: float = 60) -> int:
        """Claude-run's exit status (shell style)."""
        if self.status is None:
            status = wait_pid(self.pid, timeout)
            if status is None:
                raise AssertionError(f"claude-run did not exit within {timeout}s; output:\n{self.text}")
            self.status = 128 - status if status < 0 else status
            self._reader.join(timeout=2)
        return self.status

    def kill(self) -> None:
        self._kill()
        self._reader.join(timeout=1)
        try:
            os.close(self.fd)
        except OSError:
            pass


# --------------------------------------------------------------------------- tmux


class FleetTmux:
    """A tmux server on a private ``fleet-pytest-*`` socket with one labelled pane."""

    def __init__(self, env: dict[str, str], label: str = "alpha") -> None:
        self.socket = f"fleet-pytest-{uuid.uuid4().hex[:10]}"
        self.env = env
        self.session, self.window, self.label = "fleet-t", "agents", label
        self.tmux(
            "-f", "/dev/null", "new-session", "-d", "-s", self.session, "-n", self.window,
            "-x", "80", "-y", "24", f"{sys.executable} -c 'import time; time.sleep(600)'",
        )  # fmt: skip
        self.pane = self.tmux("display-message", "-p", "-t", f"{self.session}:{self.window}", "#{pane_id}")
        self.tmux("set-option", "-p", "-t", self.pane, "@pane_label", label)
        self.socket_path = self.tmux("display-message", "-p", "#{socket_path}")
        self.server_pid = int(self.tmux("display-message", "-p", "#{pid}"))

    @property
    def pane_id(self) -> str:
        """The fleet identity claude-run computes for this pane."""
        return f"{self.session}:{self.window}:{self.label}"

    def tmux(self, *args: str) -> str:
        out = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, env=self.env, timeout=10
        )
        if out.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args)} failed: {out.stderr.strip()}")
        return out.stdout.strip()

    def client_env(self) -> dict[str, str]:
        """What a process inside the pane would have."""
        return {"TMUX": f"{self.socket_path},{self.server_pid},0", "TMUX_PANE": self.pane}

    def run_in_pane(self, argv: list[str], env: dict[str, str], cwd: Path) -> TmuxRun:
        """Run *argv* as the pane's own process (as ``fleet start`` does), with exactly *env*."""
        return TmuxRun(self, argv, env, cwd)

    def kill(self) -> None:
        subprocess.run(
            ["tmux", "-L", self.socket, "kill-server"], capture_output=True, env=self.env, timeout=10
        )
        try:
            os.kill(self.server_pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.unlink(self.socket_path)
        except OSError:
            pass


PANE_WRAPPER = """
import os, sys
status_file, argv = sys.argv[1], sys.argv[2:]
pid = os.fork()
if pid == 0:
    os.execv(argv[0], argv)
with open(status_file + ".pid", "w") as f:
    f.write(str(pid))
code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
with open(status_file + ".tmp", "w") as f:
    f.write(str(128 - code if code < 0 else code))
os.replace(status_file + ".tmp", status_file)
"""
"""The pane's own process: runs claude-run as its child and records its PID and exit status
(tmux's own ``pane_dead_status`` can lag behind the pane's death)."""


class TmuxRun(_Run):
    """``claude-run`` inside a real fleet pane: the pane's identity is then really its own.

    Same interface as :class:`PtyRun`; the output is the pane's screen and history.
    """

    def __init__(self, server: FleetTmux, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self.server = server
        self.status: int | None = None
        self._status_file = Path(tempfile.mkdtemp(prefix="tmuxrun-")) / "status"
        full = dict(env, **server.client_env())
        command = "exec " + shlex.join(
            ["env", "-i", *(f"{k}={v}" for k, v in full.items()),
             sys.executable, "-c", PANE_WRAPPER, str(self._status_file), *argv]
        )  # fmt: skip
        server.tmux("set-option", "-p", "-t", server.pane, "remain-on-exit", "on")
        server.tmux("respawn-pane", "-k", "-t", server.pane, "-c", str(cwd), command)
        pid_file = Path(str(self._status_file) + ".pid")
        self.pid = int(
            wait_until(lambda: pid_file.exists() and pid_file.read_text(), 10, "claude-run in the pane")
        )

    @property
    def text(self) -> str:
        try:
            return self.server.tmux("capture-pane", "-p", "-J", "-S", "-32768", "-t", self.server.pane)
        except RuntimeError as exc:
            return f"(no screen: {exc})"

    def send(self, data: bytes) -> None:
        self.server.tmux("send-keys", "-t", self.server.pane, "-l", data.decode())

    def wait(self, timeout: float = 60) -> int:
        """Claude-run's exit status (shell style)."""
        if self.status is None:
            raw = wait_until(
                lambda: self._status_file.exists() and self._status_file.read_text(), timeout,
                f"claude-run to exit; output:\n{self.text}",
            )  # fmt: skip
            self.status = int(raw)
        return self.status

    def kill(self) -> None:
        self._kill()


# --------------------------------------------------------------------------- state helpers


def write_state(session_dir: Path, state: dict[str, t.Any]) -> None:
    session_dir.mkdir(parents=True, exist_ok=True)
    (session_dir / ".state.json").write_text(json.dumps(state, indent=2) + "\n")


def read_state(session_dir: Path) -> dict[str, t.Any]:
    return json.loads((session_dir / ".state.json").read_text())


def make_transcript(config: Path, cwd: Path, session_id: str) -> Path:
    path = config / "projects" / str(cwd).replace("/", "-") / f"{session_id}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"type":"summary"}\n')
    return path


# --------------------------------------------------------------------------- fixtures


@pytest.fixture
def test_tag() -> t.Iterator[str]:
    tag = uuid.uuid4().hex
    yield tag
    reap(tag)


@pytest.fixture
def fake(tmp_path: Path) -> FakeClaude:
    return FakeClaude(tmp_path)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """The project claude-run runs in (with ``sessions/``)."""
    proj = tmp_path / "proj"
    (proj / "sessions").mkdir(parents=True)
    return proj


@pytest.fixture
def run_env(tmp_path: Path, fake: FakeClaude, test_tag: str) -> dict[str, str]:
    """A clean environment: no TMUX, a scratch HOME and Claude config, fast timings."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "TERM": "xterm",
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config"),
        "CLAUDE_BIN": str(fake.path),
        "FAKE_CLAUDE_LOG": str(fake.log),
        "FAKE_CLAUDE_SCRIPT": str(fake.script),
        "CLAUDE_RUN_KILL_GRACE": "0.5",
        "CLAUDE_RUN_BACKOFF": "0.05",
        TAG_ENV: test_tag,
    }


@pytest.fixture
def start_run(run_env: dict[str, str], workdir: Path) -> t.Iterator[t.Callable[..., PtyRun]]:
    runs: list[PtyRun] = []

    def start(
        *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, pane: FleetTmux | None = None
    ) -> PtyRun | TmuxRun:
        full = dict(run_env)
        full.update(env or {})
        run: PtyRun | TmuxRun
        if pane is not None:
            run = pane.run_in_pane([claude_run_path(), *args], full, cwd or workdir)
        else:
            run = PtyRun([claude_run_path(), *args], full, cwd or workdir)
        runs.append(run)
        return run

    yield start
    for run in runs:
        run.kill()


@pytest.fixture
def fleet_tmux(run_env: dict[str, str]) -> t.Iterator[FleetTmux]:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    env[TAG_ENV] = run_env[TAG_ENV]
    server = FleetTmux(env)
    yield server
    server.kill()
