"""Test harness for ``fleet``: a private tmux world, the real ``claude-run``, a stand-in Claude per pane.

Every test gets its own tmux socket directory (``TMUX_TMPDIR``, short enough
for a socket path) and a socket named ``fleet-pytest-<uuid>``: never the
user's default server, never the socket ``fleet``. The server is killed and
its socket unlinked at teardown, and every process the test started (all
carry ``SHEPHERD_TEST_TAG``) is SIGKILLed if still running.

Each pane of a test layout runs the real ``claude-run`` with
``CLAUDE_BIN`` pointing at ``tests/fake_claude.py``; ``pre_window`` gives
each pane its own plan and log, named by the pane's label, so a test can
script every agent separately: ``fleet.plan("A", [...], [...])``,
``fleet.starts("A")``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import typing as t
import uuid
from pathlib import Path

import psutil
import pytest
from support.claude_run import FAKE_CLAUDE, TAG_ENV, reap, tagged
from support.waiting import wait_until

BIN = Path(sys.executable).parent
PER_PANE = (
    "L=$(tmux display-message -p -t \"$TMUX_PANE\" '#{@pane_label}'); "
    'export FAKE_CLAUDE_LOG="$FLEET_TEST_DIR/$L.log" FAKE_CLAUDE_SCRIPT="$FLEET_TEST_DIR/$L.json"'
)
"""pre_window of test layouts: each pane's stand-in Claude reads its own plan and writes its own log."""


ACTIVATE = (
    "L=$(fleet pane-id | cut -d: -f3) && "
    'CLAUDE_CODE_SESSION_ID="conv-$L" session activate "sessions/S_$L" implement'
)
"""What each stand-in agent does first: activate sessions/S_<label>, binding conversation conv-<label>."""


def agent(*steps: dict[str, t.Any], label: str) -> list[dict[str, t.Any]]:
    """Activate this pane's session, create the transcript of its conversation, then *steps*."""
    return [
        {"run": ["sh", "-c", ACTIVATE]},
        {"transcript": f"conv-{label}"},
        {"mark": "ready"},
        *steps,
        {"wait": None},
    ]


def resume_of(start: dict[str, t.Any]) -> str | None:
    """The conversation a start of the stand-in Claude resumed (its --resume), or None."""
    argv = start["argv"]
    return argv[argv.index("--resume") + 1] if "--resume" in argv else None


def running(procs: t.Iterable[psutil.Process]) -> list[psutil.Process]:
    """Those not yet exited (a zombie has exited; only its parent can still reap it)."""
    out = []
    for proc in procs:
        try:
            if proc.status() != psutil.STATUS_ZOMBIE:
                out.append(proc)
        except psutil.Error:
            continue
    return out


class FleetWorld:
    """One test's fleet: layout files, plans and logs, the ``fleet`` CLI, its tmux server."""

    def __init__(self, base: Path, tag: str) -> None:
        self.base = base
        self.tag = tag
        self.socket = f"fleet-pytest-{uuid.uuid4().hex}"
        self.tmux_tmpdir = Path(tempfile.mkdtemp(prefix="flt-", dir="/tmp"))
        self.project = base / "proj"
        (self.project / "sessions").mkdir(parents=True)
        self.dir = base / "agents"
        self.dir.mkdir()
        self.home = base / "home"
        self.home.mkdir()
        self.config = base / "claude-config"
        fake_bin = base / "fake-bin"
        fake_bin.mkdir()
        self.claude = fake_bin / "claude"
        self.claude.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_CLAUDE}" "$@"\n')
        self.claude.chmod(0o755)
        self.env: dict[str, str] = {
            "PATH": f"{BIN}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "TERM": "xterm-256color",
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "TMUX_TMPDIR": str(self.tmux_tmpdir),
            "CLAUDE_CONFIG_DIR": str(self.config),
            "CLAUDE_BIN": str(self.claude),
            "CLAUDE_RUN_KILL_GRACE": "0.5",
            "CLAUDE_RUN_BACKOFF": "0.05",
            # start returns as soon as each agent is up or dead: a loaded machine only makes it wait longer
            "FLEET_START_WAIT": "120",
            "FLEET_START_SETTLE": "0.5",  # the stand-in Claude either exits at once or stays
            "FLEET_TEST_DIR": str(self.dir),
            TAG_ENV: tag,
        }

    # ------------------------------------------------------------------ files

    def layout(self, name: str, windows: str, *, extra: str = "") -> Path:
        """Write ``<project>/tmuxinator/<name>.yml`` with the per-pane ``pre_window``."""
        path = self.project / "tmuxinator" / f"{name}.yml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"name: {name}\npre_window: {json.dumps(PER_PANE)}\n{extra}windows:\n{windows}")
        return path

    def plan(self, label: str, *invocations: t.Any, default: t.Any = None) -> None:
        """The stand-in Claude's plan for each start in pane *label* (then *default*: wait)."""
        script = {
            "invocations": list(invocations),
            "default": default if default is not None else [{"wait": None}],
        }
        (self.dir / f"{label}.json").write_text(json.dumps(script))

    def events(self, label: str, kind: str | None = None) -> list[dict[str, t.Any]]:
        try:
            lines = (self.dir / f"{label}.log").read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        events = [json.loads(line) for line in lines if line.strip()]
        return [e for e in events if kind is None or e["event"] == kind]

    def starts(self, label: str) -> list[dict[str, t.Any]]:
        return self.events(label, "start")

    def wait_event(self, label: str, kind: str, timeout: float = 15, **match: t.Any) -> dict[str, t.Any]:
        def find() -> dict[str, t.Any] | None:
            return next(
                (e for e in self.events(label, kind) if all(e.get(k) == v for k, v in match.items())), None
            )

        return wait_until(find, timeout, f"{kind} {match} from the agent in pane {label}")

    def wait_starts(self, label: str, count: int, timeout: float = 15) -> list[dict[str, t.Any]]:
        return wait_until(
            lambda: len(s := self.starts(label)) >= count and s, timeout, f"{count} start(s) in {label}"
        )

    # ------------------------------------------------------------------ commands

    def fleet(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        timeout: float = 60,
        socket: bool = True,
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``fleet ARGS [--socket S]`` from the project (or *cwd*), stdin not a terminal."""
        full = dict(self.env)
        full.update(env or {})
        extra = (
            ["--socket", self.socket]
            if socket and args and args[0] in ("start", "stop", "restart", "status", "doctor")
            else []
        )
        return subprocess.run(
            [str(BIN / "fleet"), *args, *extra],
            capture_output=True,
            text=True,
            cwd=cwd or self.project,
            env=full,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def follow_logs(self, *args: str) -> subprocess.Popen[str]:
        """``fleet logs ARGS -f`` on this fleet's socket, running, its output on a pipe."""
        return subprocess.Popen(
            [str(BIN / "fleet"), "logs", *args, "-f", "--socket", self.socket],
            stdout=subprocess.PIPE,
            text=True,
            cwd=self.project,
            env=self.env,
        )

    def tmux(self, *args: str, check: bool = True, socket: str | None = None) -> str:
        out = subprocess.run(
            ["tmux", "-L", socket or self.socket, *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=10,
        )
        if check and out.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args)} failed: {out.stderr.strip()}")
        return out.stdout.rstrip("\n")

    def panes(self) -> dict[str, dict[str, str]]:
        """label (or pane id) -> fields of each pane."""
        fields = [
            "pane_id",
            "@pane_label",
            "pane_pid",
            "pane_dead",
            "pane_dead_status",
            "window_name",
            "pane_active",
        ]
        raw = self.tmux("list-panes", "-a", "-F", "\t".join(f"#{{{f}}}" for f in fields), check=False)
        out: dict[str, dict[str, str]] = {}
        for line in raw.splitlines():
            row = dict(zip(fields, line.split("\t")))
            out[row["@pane_label"] or row["pane_id"]] = row
        return out

    def capture(self, label: str) -> str:
        return self.tmux("capture-pane", "-p", "-t", self.panes()[label]["pane_id"])

    @property
    def socket_path(self) -> Path:
        return self.tmux_tmpdir / f"tmux-{os.getuid()}" / self.socket

    def pane_env(self, label: str) -> dict[str, str]:
        """What a process started in pane *label* has in its environment."""
        server_pid = self.tmux("display-message", "-p", "#{pid}")
        return {"TMUX": f"{self.socket_path},{server_pid},0", "TMUX_PANE": self.panes()[label]["pane_id"]}

    def server_alive(self) -> bool:
        return (
            subprocess.run(
                ["tmux", "-L", self.socket, "list-sessions"], capture_output=True, env=self.env, timeout=10
            ).returncode
            == 0
        )

    def leftovers(self) -> list[psutil.Process]:
        """Every process of this test still running (the tmux server included)."""
        return running(tagged(self.tag))

    # ------------------------------------------------------------------ teardown

    def close(self) -> None:
        subprocess.run(
            ["tmux", "-L", self.socket, "kill-server"], capture_output=True, env=self.env, timeout=10
        )
        reap(self.tag)
        shutil.rmtree(self.tmux_tmpdir, ignore_errors=True)


@pytest.fixture
def world(tmp_path: Path) -> t.Iterator[FleetWorld]:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    tag = uuid.uuid4().hex
    fleet = FleetWorld(tmp_path, tag)
    try:
        yield fleet
    finally:
        fleet.close()
