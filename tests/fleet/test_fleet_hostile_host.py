"""A hostile host: another account behind a real sshd (:mod:`support.sshd`) whose ``fleet`` answers what
the test forges. ``fleet`` reaches it as any host, over ssh, at ``$FLEET_REMOTE_HOME/venv/bin/fleet``;
this machine's part of the fleet is real (pane A, the stand-in Claude). Whatever the host says costs
only its own rows, reaches the terminal as text, and pages only for its own agents, named by it."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import typing as t

import pytest
from support.fleet import BIN, FleetWorld
from support.sshd import REMOTE_PYTHON, SshHost
from support.waiting import wait_until

pytestmark = pytest.mark.slow

FOLDER = "hostile"
"""The remote's install folder (``$FLEET_REMOTE_HOME``), in its login's home."""
FAKE_FLEET = f"""#!{REMOTE_PYTHON}
import os, sys
args = sys.argv[1:]
document = sys.stdin.buffer.read() if "-" in args else b""
verb = args[0] if args else ""
out, err = sys.stdout.buffer, sys.stderr.buffer
answers = os.path.join(os.path.expanduser("~"), "{FOLDER}", "answers")
try:
    source = open(os.path.join(answers, verb)).read()
except FileNotFoundError:
    source = "out.write(b'{{\\"exit_code\\": 0, \\"lines\\": [\\"done\\"], \\"error\\": null}}')"
exec(source)
"""
"""The host's ``fleet``: each verb runs the Python in ``answers/VERB`` (``out`` and ``err`` are its raw
stdout and stderr, ``args`` its arguments), else says it did as asked."""


def status_row(label: str, state: str, window: str = "there", session: str = "duo") -> dict[str, t.Any]:
    return {"session": session, "window": window, "label": label, "pane": f"%{label}",
            "pane_id": f"{session}:{window}:{label}", "state": state, "supervisor_alive": True,
            "agent": True}  # fmt: skip


class Hostile:
    """The remote account with the forging ``fleet``, and this machine's fleet ``duo`` that spans it."""

    def __init__(self, host: SshHost, world: FleetWorld) -> None:
        self.host = host
        self.world = world
        self.folder = host.home / FOLDER
        fleet = self.folder / "venv" / "bin" / "fleet"
        fleet.parent.mkdir(parents=True)
        (self.folder / "answers").mkdir()
        fleet.write_text(FAKE_FLEET)
        fleet.chmod(0o755)
        for path in (self.folder, *self.folder.rglob("*")):
            os.chown(path, host.uid, host.gid)
        world.env.update(host.env)
        world.env["FLEET_REMOTE_HOME"] = FOLDER
        world.env["FLEET_HOST_TIMEOUT"] = "20"

    def answer(self, verb: str, python: str) -> None:
        """What the host's ``fleet VERB`` does from now on."""
        path = self.folder / "answers" / verb
        path.write_text(python)
        os.chown(path, self.host.uid, self.host.gid)

    def answer_json(self, verb: str, value: t.Any) -> None:
        self.answer(verb, f"out.write({json.dumps(value).encode()!r})")

    def start(self, notify: str = "") -> None:
        """``duo``: pane A here (running), pane B on the host (as the host says)."""
        extra = f"notify: {notify}\nnotify_on: [needs-you, error]\n" if notify else ""
        self.world.layout(
            "duo",
            "  - here:\n      panes:\n        - A: claude-run\n"
            "  - there:\n      host: remote\n      panes:\n        - B: claude-run\n",
            extra=extra,
        )
        self.world.plan("A", [{"mark": "ready"}, {"wait": None}])
        started = self.world.fleet("start", "duo", "--no-attach")
        assert started.returncode == 0, started.stdout + started.stderr
        self.world.wait_event("A", "mark", name="ready")

    def close(self) -> None:
        self.host.kill_user_processes()
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture
def hostile(ssh_host: SshHost, world: FleetWorld) -> t.Iterator[Hostile]:
    side = Hostile(ssh_host, world)
    try:
        yield side
    finally:
        side.close()


def in_process(world: FleetWorld, monkeypatch: pytest.MonkeyPatch) -> None:
    """This process sees the world's fleet and its remembered span, as the watch in its terminal would."""
    for key in ("HOME", "TMUX_TMPDIR", "FLEET_SSH_COMMAND", "FLEET_REMOTE_HOME", "FLEET_HOST_TIMEOUT"):
        monkeypatch.setenv(key, world.env[key])
    monkeypatch.delenv("XDG_STATE_HOME")  # the fleet recorded its span under the world's HOME


FORGED = {
    "a number of 400 digits": "out.write(b'[{\"label\": \"B\", \"restarts\": 1' + b'0' * 400 + b'}]')",
    "arrays nested 100000 deep": "out.write(b'[' * 100000 + b']' * 100000)",
    "64 MiB of blanks around []": "out.write(b' ' * (64 << 20) + b'[]')",
}


@pytest.mark.parametrize("what", sorted(FORGED))
def test_a_host_that_forges_its_answer_costs_only_its_own_rows_in_status_stop_and_watch(
    hostile: Hostile, monkeypatch: pytest.MonkeyPatch, what: str
) -> None:
    from claude_shepherd.fleet import watch as w
    from claude_shepherd.fleet.hosts.span import remembered

    world = hostile.world
    hostile.start()
    hostile.answer("status", FORGED[what])
    hostile.answer("stop", FORGED[what])

    status = world.fleet("status", "duo", "--json")
    assert status.returncode == 1 and "Traceback" not in status.stderr, status.stderr
    rows = {row["identity"]: row for row in json.loads(status.stdout)}
    assert rows["local/duo:here:A"]["supervisor_alive"] and "problem" not in rows["local/duo:here:A"]
    b = rows["remote/duo:there:B"]
    assert b["state"] == "unknown" and b["problem"].startswith("remote: its fleet"), b
    assert b["problem"].endswith("; not believed"), b
    assert status.stderr.count("\n") == 1 and "remote: its fleet" in status.stderr, status.stderr
    table = world.fleet("status", "duo")
    assert table.returncode == 1 and "Traceback" not in table.stderr, table.stderr
    assert "not believed (1 agent(s) unknown)" in table.stdout and "here:A" in table.stdout, table.stdout

    in_process(world, monkeypatch)
    seen = w.gather([world.socket])
    assert {(r.host, r.name, r.state) for r in seen.rows} >= {("remote", "B", "unknown")}
    assert any(r.host == "local" and r.name == "A" for r in seen.rows), "the other host's rows come"
    assert any(s.startswith("remote (remote: its fleet") for s in seen.silent), seen.silent

    stop = world.fleet("stop", "duo", "--grace", "5")
    assert stop.returncode == 1 and "Traceback" not in stop.stderr, stop.stderr
    assert "remote  remote: its fleet" in stop.stdout and "not believed" in stop.stdout, stop.stdout
    assert re.search(r"^local +.*no process of the fleet is left\.$", stop.stdout, re.M), stop.stdout
    assert [s.layout.name for s in remembered()] == ["duo"], (
        "a host whose answer was not believed may still run its agents: the fleet stays remembered"
    )


HOSTILE_OUTPUT = (
    "screen \x1b]52;c;cm0gLXJmIH4=\x07 clear\x1b[2J csi\u009b31m osc\u009d0;title\u009c bidi\u202eevil\r\n"
).encode()
"""An OSC 52 clipboard write, a screen clear, C1 controls (CSI, OSC, ST) and a bidi override."""
SHOWN = (
    "screen \ufffd]52;c;cm0gLXJmIH4=\ufffd clear\ufffd[2J csi\ufffd31m osc\ufffd0;title\ufffd bidi\ufffdevil"
)


def test_a_remote_panes_logs_reach_the_terminal_as_text_as_a_local_panes_do(hostile: Hostile) -> None:
    world = hostile.world
    hostile.start()
    hostile.answer(
        "logs",
        f"out.write({HOSTILE_OUTPUT!r}); err.write({HOSTILE_OUTPUT!r}); out.flush()\n"
        "if '-f' in args:\n    import time; time.sleep(120)\n",
    )
    logs = world.fleet("logs", "duo", "--pane", "remote/B", "-n", "5")
    assert logs.returncode == 0, logs.stderr
    assert logs.stdout == SHOWN + "\n" and logs.stderr == SHOWN + "\n", (logs.stdout, logs.stderr)

    follow = subprocess.Popen(
        [str(BIN / "fleet"), "logs", "duo", "--pane", "remote/B", "-f"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        cwd=world.project, env=world.env, text=True,
    )  # fmt: skip
    try:
        assert follow.stdout is not None
        assert follow.stdout.readline() == SHOWN + "\n", "each line as it comes, through the same filter"
    finally:
        follow.send_signal(signal.SIGINT)  # as Ctrl-C does
        status = follow.wait(30)
    assert status == 130, "interrupted, it ends the host's side too"


def test_a_host_pages_only_for_the_agents_its_part_names_and_every_alert_names_it(
    hostile: Hostile, monkeypatch: pytest.MonkeyPatch
) -> None:
    """31 invented labels (one of them this machine's A) change into needs-you in one refresh: only the
    host's own B pages, naming the host in the notify command's values and in the line the watch shows."""
    from claude_shepherd.fleet import watch as w
    from claude_shepherd.fleet.hosts.relay import Relay

    world = hostile.world
    hostile.start(notify=f'[touch, "{world.base}/paged-{{host}}-{{label}}-{{state}}"]')
    in_process(world, monkeypatch)

    def forge(state: str) -> None:
        invented = [status_row(f"X{n}", state) for n in range(29)]
        invented += [status_row("A", state, window="here"), status_row("B", state, session="other")]
        hostile.answer_json("status", [*invented, status_row("B", state)])

    relay = Relay()
    forge("working")
    first = w.gather([world.socket], relay)
    assert first.alerts == [] and len([r for r in first.rows if r.remote]) == 32
    forge("needs-you")
    second = w.gather([world.socket], relay)
    assert second.alerts == ["remote/B needs you"], second.alerts
    wait_until((world.base / "paged-remote-B-needs-you").exists, 30, "the notify command, run here")
    paged = sorted(p.name for p in world.base.glob("paged-*"))
    assert paged == ["paged-remote-B-needs-you"], paged
    assert world.fleet("stop", "duo", "--grace", "5").returncode == 0


def test_doctor_shows_what_a_host_says_of_its_version_and_clock_cut_to_a_word(hostile: Hostile) -> None:
    world = hostile.world
    hostile.start()
    hostile.answer("--version", "out.write(b'fleet \\x1b[2J' + b'9' * 1000000)")
    doctor = world.fleet("doctor", "duo")
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr, doctor.stderr
    line = next(line for line in doctor.stdout.splitlines() if line.startswith("remote  reachable"))
    assert "claude-shepherd \ufffd[2J999" in line and len(line) < 200, line[:300]
    assert world.fleet("stop", "duo", "--grace", "5").returncode == 0


def test_a_hosts_usage_windows_are_numbers_within_bounds_and_text_on_the_terminal(hostile: Hostile) -> None:
    """A host's rows name its agents' credential and usage windows: a reset no clock can show, a use
    of a billion percent and escapes in a window's name cost only those fields, never the command."""
    row = {**status_row("B", "limited"), "credential": "/home/x/.claude\x1b]52;c;cm0=\x07",
           "usage_windows": {"five_hour": {"used_percentage": 1e9, "resets_at": 1e300},
                             "seven_day": {"used_percentage": 40, "resets_at": -1e300},
                             "evil\x1b[2J": {"used_percentage": 50, "resets_at": 1e12}},
           "limited_until": 1e300, "resume_at": 1e300}  # fmt: skip
    hostile.start()
    hostile.answer_json("status", [row])
    table = hostile.world.fleet("status", "duo")
    assert "Traceback" not in table.stderr, table.stderr
    assert "here:A" in table.stdout and "\x1b" not in table.stdout, table.stdout
    assert (
        "usage /home/x/.claude\ufffd]52;c;cm0=\ufffd (1 agent(s)): evil\ufffd[2J 50% (resets " in table.stdout
    )
    status = hostile.world.fleet("status", "duo", "--json")
    b = {r["identity"]: r for r in json.loads(status.stdout)}["remote/duo:there:B"]
    assert b["usage_windows"] == {"evil\x1b[2J": {"used_percentage": 50.0, "resets_at": 1e12}}, b
    assert b["limited_until"] is None and b["resume_at"] is None
