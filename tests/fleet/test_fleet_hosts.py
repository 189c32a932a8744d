"""A fleet across two hosts, for real: this machine, and another account on 127.0.0.1 behind a real
sshd (:mod:`support.sshd`) with its own install (made by ``fleet host add``), tmux server, sessions
root and stand-in Claude. ``fleet`` reaches it only through ssh, as it would another machine."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import typing as t
from pathlib import Path

import pytest
from support.fleet import BIN, FleetWorld, agent, resume_of
from support.sshd import SshHost
from support.waiting import wait_until

from claude_shepherd.supervisor import __version__


@pytest.fixture(scope="module")
def installed(ssh_host: SshHost, tmp_path_factory: pytest.TempPathFactory) -> SshHost:
    """The remote host after ``fleet host add`` (once: pip fetches the dependencies there)."""
    home = tmp_path_factory.mktemp("adder")
    env = {**os.environ, **ssh_host.env, "HOME": str(home), "FLEET_SSH_REUSE": "0"}
    added = subprocess.run(
        [str(BIN / "fleet"), "host", "add", ssh_host.alias],
        capture_output=True, text=True, env=env, timeout=900, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert added.returncode == 0, added.stdout + added.stderr
    lines = added.stdout.splitlines()
    assert lines[0].startswith("remote: tmux ") and ", Python 3." in lines[0], lines
    assert f"sending claude-shepherd {__version__}" in added.stdout
    assert "remote: hooks: Settings: " in added.stdout
    assert (
        lines[-1]
        == f"remote is ready (fleet {__version__}); give a layout's window `host: remote` to run it there"
    )
    settings = json.loads((ssh_host.home / ".claude" / "settings.json").read_text())
    assert "PreToolUse" in settings["hooks"], "the hooks are installed there"
    return ssh_host


class Remote:
    """The remote host's side of one test: its project, the stand-in Claude's plans and logs."""

    def __init__(self, host: SshHost, socket: str) -> None:
        self.host = host
        self.socket = socket
        made = host.run('mkdir -p proj/sessions && rm -rf proj/sessions/* && rm -f "$FLEET_TEST_DIR"/*')
        assert made.returncode == 0, made.stderr

    def plan(self, label: str, *invocations: t.Any) -> None:
        path = self.host.test_dir / f"{label}.json"
        path.write_text(json.dumps({"invocations": list(invocations), "default": [{"wait": None}]}))
        path.chmod(0o644)

    def events(self, label: str, kind: str) -> list[dict[str, t.Any]]:
        try:
            lines = (self.host.test_dir / f"{label}.log").read_text().splitlines()
        except FileNotFoundError:
            return []
        return [e for e in map(json.loads, filter(None, lines)) if e["event"] == kind]

    def wait_event(self, label: str, kind: str, **match: t.Any) -> dict[str, t.Any]:
        return wait_until(
            lambda: next(
                (e for e in self.events(label, kind) if all(e.get(k) == v for k, v in match.items())), None
            ),
            30,
            f"{kind} {match} from the agent in remote pane {label}",
        )

    def agents(self) -> list[str]:
        """The command lines of the remote user's claude-run and stand-in Claude processes."""
        found = []
        for proc in self.host.processes():
            try:
                line = " ".join(proc.cmdline())
            except Exception:
                continue
            if "claude-run" in line or "fake_claude" in line:
                found.append(line)
        return found

    def server_alive(self) -> bool:
        return self.host.run(f"tmux -L {self.socket} list-sessions").returncode == 0

    def close(self) -> None:
        self.host.run(f"tmux -L {self.socket} kill-server")
        self.host.kill_user_processes()


@pytest.fixture
def remote(installed: SshHost, world: FleetWorld) -> t.Iterator[Remote]:
    world.env.update(installed.env)
    side = Remote(installed, world.socket)
    try:
        yield side
    finally:
        if installed.sshd_pid is None:
            installed.start_sshd()
        side.close()


def span(world: FleetWorld, name: str = "duo", extra: str = "") -> Path:
    """A layout of two windows: ``here`` (pane A, this machine) and ``there`` (pane B, host remote)."""
    return world.layout(
        name,
        "  - here:\n      panes:\n        - A: claude-run\n"
        "  - there:\n      host: remote\n      root: ~/proj\n      panes:\n        - B: claude-run\n",
        extra=extra,
    )


def started(world: FleetWorld, remote: Remote, extra: str = "") -> subprocess.CompletedProcess[str]:
    """The two-host fleet ``duo`` started (A here, B there), each agent with its session active."""
    span(world, extra=extra)
    world.plan("A", agent(label="A"))
    remote.plan("B", agent(label="B"))
    start = world.fleet("start", "duo", "--no-attach")
    assert start.returncode == 0, start.stdout + start.stderr
    world.wait_event("A", "mark", name="ready")
    remote.wait_event("B", "mark", name="ready")
    return start


def rows(world: FleetWorld, **env: str) -> dict[str, dict[str, t.Any]]:
    status = world.fleet("status", "duo", "--json", env=env)
    return {row["identity"]: row for row in json.loads(status.stdout)}


def test_a_fleet_across_two_hosts_starts_shows_resumes_and_stops_on_each_host(
    world: FleetWorld, remote: Remote
) -> None:
    start = started(world, remote)
    assert re.search(
        r"^local +  here:A +started, running \(claude-run \d+, Claude \d+\)$", start.stdout, re.M
    )
    assert re.search(
        r"^remote +  there:B +started, running \(claude-run \d+, Claude \d+\)$", start.stdout, re.M
    )

    seen = rows(world)
    assert set(seen) == {"local/duo:here:A", "remote/duo:there:B"}, "two hosts may use the same labels"
    b = seen["remote/duo:there:B"]
    assert b["host"] == "remote" and b["supervisor_alive"] and b["skill"] == "implement" and b["started_at"]
    assert b["session_dir"] == str(remote.host.home / "proj" / "sessions" / "S_B"), "its host's sessions root"
    assert seen["local/duo:here:A"]["session_dir"] == str(world.project / "sessions" / "S_A")
    table = world.fleet("status", "duo")
    assert table.returncode == 0, table.stderr
    assert re.search(r"^HOST +PANE ", table.stdout, re.M) and re.search(
        r"^remote +there:B ", table.stdout, re.M
    )
    assert re.search(r"^  remote +1 running, \$0\.00 \(\d+ ms\)$", table.stdout, re.M), table.stdout

    doctor = world.fleet("doctor", "duo")
    assert re.search(
        rf"^remote +reachable \(\d+ ms\), claude-shepherd {re.escape(__version__)}, tmux \S+, clock [+-]\d+\.\d s$",
        doctor.stdout,
        re.M,
    ), doctor.stdout
    assert re.search(r"^remote +No problems found\.$", doctor.stdout, re.M), "its own doctor: hooks there"

    stop = world.fleet("stop", "duo", "--grace", "5")
    assert stop.returncode == 0, stop.stdout + stop.stderr
    assert stop.stdout.count("no process of the fleet is left.") == 2, stop.stdout
    assert world.leftovers() == [], [p.cmdline() for p in world.leftovers()]
    assert remote.agents() == [] and not remote.server_alive(), "nothing runs on either host"

    again = world.fleet("start", "duo", "--no-attach")
    assert again.returncode == 0, again.stdout + again.stderr
    first, second = wait_until(lambda: len(s := world.starts("A")) >= 2 and s, 30, "A's second start")
    assert resume_of(first) is None and resume_of(second) == "conv-A"
    first, second = wait_until(
        lambda: len(s := remote.events("B", "start")) >= 2 and s, 30, "B's second start"
    )
    assert resume_of(first) is None and resume_of(second) == "conv-B", (
        "each pane's own conversation, on its host"
    )
    assert world.fleet("stop", "duo", "--grace", "5").returncode == 0
    assert remote.agents() == [] and world.leftovers() == []


def test_a_host_gone_mid_run_is_unreachable_within_the_deadline_and_nothing_restarts_when_it_answers(
    world: FleetWorld, remote: Remote
) -> None:
    started(world, remote)
    claude_b = rows(world)["remote/duo:there:B"]["claude_pid"]
    assert claude_b

    remote.host.stop_sshd()
    began = time.monotonic()
    status = world.fleet("status", "duo", env={"FLEET_HOST_TIMEOUT": "3"})
    assert time.monotonic() - began < 10 and status.returncode == 1
    assert re.search(
        r"^  remote +did not answer: .*Connection refused \(1 agent\(s\) unknown\)$", status.stdout, re.M
    )
    assert re.search(r"^remote +there:B .* unknown *$", status.stdout, re.M), "never 'stopped': it may run on"
    assert re.search(r"^local +here:A +\d+ ", status.stdout, re.M), "the other host goes on"
    assert "remote did not answer" in status.stderr

    doctor = world.fleet("doctor", "duo", "--fix", env={"FLEET_HOST_TIMEOUT": "3"})
    assert doctor.returncode == 1
    assert re.search(r"^remote +unreachable: .*; nothing checked or fixed there$", doctor.stdout, re.M)

    remote.host.start_sshd()
    remote.host.freeze_sshd()  # a host that accepts and answers nothing: only the deadline ends the wait
    began = time.monotonic()
    hung = rows(world, FLEET_HOST_TIMEOUT="2")
    assert time.monotonic() - began < 8
    b = hung["remote/duo:there:B"]
    assert b["state"] == "unknown" and re.search(
        r"did not answer: .*(no answer within|timed out)", b["problem"]
    ), b
    remote.host.thaw_sshd()

    back = wait_until(
        lambda: (r := rows(world)) and r["remote/duo:there:B"]["state"] != "unknown" and r, 30, "B back"
    )
    assert back["remote/duo:there:B"]["claude_pid"] == claude_b, "nothing was restarted that was running"
    assert len(remote.events("B", "start")) == 1
    assert world.fleet("stop", "duo", "--grace", "5").returncode == 0


def test_the_watch_shows_both_hosts_and_relays_a_remote_agents_alert_here(
    world: FleetWorld, remote: Remote, monkeypatch: pytest.MonkeyPatch
) -> None:
    from claude_shepherd.fleet import watch as w
    from claude_shepherd.fleet.hosts.relay import Relay

    paged = world.base / "paged-B-needs-you"
    started(world, remote, extra=f'notify: [touch, "{world.base}/paged-{{label}}-{{state}}"]\n')
    for key in ("HOME", "TMUX_TMPDIR", "FLEET_SSH_COMMAND"):
        monkeypatch.setenv(key, world.env[key])
    monkeypatch.delenv("XDG_STATE_HOME")  # the fleet recorded its span under the world's HOME

    relay = Relay()
    first = w.gather([world.socket], relay)
    assert {(r.host, r.name) for r in first.rows} == {("local", "A"), ("remote", "B")} and first.alerts == []
    assert [line for line in w.totals(first.rows)] == [
        f"duo ({world.socket}): 2 agents · $0.00",
        "  local: 1 agent · $0.00",
        "  remote: 1 agent · $0.00",
    ]
    pane = remote.host.run(f"tmux -L {world.socket} list-panes -a -F '#{{pane_id}}'").stdout.strip()
    remote.host.run(f"tmux -L {world.socket} set-option -p -t {pane} @pane_notify needs-you")
    second = w.gather([world.socket], relay)
    assert second.alerts == ["remote/B needs you"]
    wait_until(paged.exists, 10, "the notify command, run here")
    assert w.gather([world.socket], relay).alerts == [], "once per transition"

    remote.host.stop_sshd()
    gone = w.gather([world.socket], relay)
    assert [r.state for r in gone.rows if r.remote] == ["unknown"] and any(
        "remote (did not answer" in s for s in gone.silent
    )
    remote.host.start_sshd()
    assert world.fleet("stop", "duo", "--grace", "5").returncode == 0


def test_the_watchs_keys_on_a_remote_agent_act_on_its_own_host(
    world: FleetWorld, remote: Remote, monkeypatch: pytest.MonkeyPatch
) -> None:
    """l, r and s on another host's row ask that row's fleet (the span), which asks the host's own fleet."""
    from claude_shepherd.fleet import watch as w

    started(world, remote)
    for key in ("HOME", "TMUX_TMPDIR", "FLEET_SSH_COMMAND"):
        monkeypatch.setenv(key, world.env[key])
    monkeypatch.delenv("XDG_STATE_HOME")  # the fleet recorded its span under the world's HOME

    (b,) = [r for r in w.gather([world.socket]).rows if r.host == "remote"]
    assert any("claude-run's log of duo:there:B" in line for line in w.log_lines(b, 20))
    assert w.restart_agent(b, 5) == "B: restarted on remote"
    assert w.stop_agent(b, 5) == "B: stopped on remote"
    (again,) = [r for r in w.gather([world.socket]).rows if r.host == "remote"]
    assert again.state == "stopped"
    assert world.fleet("stop", "duo", "--grace", "5").returncode == 0


def test_one_shared_connection_per_host_that_keeps_the_deadline_and_is_replaced_when_it_dies(
    installed: SshHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The review's findings: a call on the shared connection ends at its deadline; a connection killed
    under us is replaced, not joined by a plain one that never ends; two names of one host share one;
    closing it lets a call under way finish."""
    import threading

    import psutil

    from claude_shepherd.fleet.hosts.transport import SshHost as Transport

    private = Path(tempfile.mkdtemp(prefix="ctl-", dir="/tmp"))
    monkeypatch.setenv("TMUX_TMPDIR", str(private))
    monkeypatch.setenv("FLEET_SSH_COMMAND", installed.ssh_command)

    def ssh_of_ours() -> list[psutil.Process]:
        found = []
        for proc in psutil.process_iter(["name", "cmdline"]):
            if proc.info["name"] == "ssh" and any(str(private) in arg for arg in proc.info["cmdline"] or ()):
                found.append(proc)
        return found

    host = Transport("remote-1")
    try:
        assert host.run(["true"]).status == 0
        (master,) = ssh_of_ours()
        began = time.monotonic()
        slow = host.run(["sleep", "30"], timeout=2)
        assert slow.problem == "no answer within 2 s" and time.monotonic() - began < 5

        master.kill()
        master.wait(5)
        for _ in range(3):
            assert host.run(["true"]).status == 0
        alias = Transport("remote-2")
        assert alias.control_path() == host.control_path(), "two names of one host, one connection"
        answers = []
        threads = [
            threading.Thread(target=lambda h=h: answers.append(h.run(["true"]).status))
            for h in (host, alias) * 3
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert answers == [0] * 6
        wait_until(lambda: len(ssh_of_ours()) == 1, 10, "one connection, and no other ssh of ours")
        assert "ControlMaster=yes" in ssh_of_ours()[0].cmdline()

        under_way: list[str] = []
        call = threading.Thread(
            target=lambda: under_way.append(host.run(["sh", "-c", "sleep 1; echo done"]).stdout)
        )
        call.start()
        time.sleep(0.3)
        alias.disconnect()
        call.join()
        assert under_way == ["done\n"], "another fleet's call under way finishes"
    finally:
        for proc in ssh_of_ours():
            proc.kill()
        shutil.rmtree(private, ignore_errors=True)


def test_with_no_layout_a_fleet_across_hosts_and_another_fleet_are_listed_not_guessed(
    world: FleetWorld,
) -> None:
    """No sshd needed: the span's only host does not exist, and nothing here asks it."""
    world.layout("solo", "  - agents:\n      panes:\n        - A: claude-run\n")
    world.layout("far", "  - gpu:\n      host: nosuch.invalid\n      panes:\n        - T: claude-run\n")
    world.plan("A", [{"wait": None}])
    assert world.fleet("start", "solo", "--no-attach").returncode == 0
    far = world.fleet("start", "far", "--no-attach", env={"FLEET_HOST_TIMEOUT": "3"})
    assert far.returncode == 1 and "nosuch.invalid  UNREACHABLE: " in far.stdout, far.stdout
    status = world.fleet("status")
    assert status.returncode == 2, status.stdout + status.stderr
    assert "2 fleets: far (on nosuch.invalid), solo (socket " in status.stderr and "name one" in status.stderr
    named = world.fleet("status", "solo")
    assert named.returncode == 0 and "agents:A" in named.stdout, "named, it is the local fleet alone"
    assert world.fleet("stop", "solo").returncode == 0


def test_a_host_without_claude_code_is_named_by_host_add_and_by_doctor_with_where_it_looked(
    world: FleetWorld, remote: Remote
) -> None:
    span(world)
    claude = remote.host.claude_bin
    away = claude.with_name("claude.away")
    claude.rename(away)
    try:
        added = world.fleet("host", "add", "remote")
        assert added.returncode == 1, added.stdout + added.stderr
        assert (
            f"remote: claude-shepherd is installed, but its agents would die at start: CLAUDE_BIN={claude} "
            "is not an executable file; fix it or unset it to search PATH; then `fleet doctor` checks again"
        ) in added.stderr, added.stderr
        doctor = world.fleet("doctor", "duo")
        assert doctor.returncode == 1, doctor.stdout + doctor.stderr
        assert re.search(
            rf"^remote +claude: every agent started here would die at once: CLAUDE_BIN={re.escape(str(claude))} "
            "is not an executable file",
            doctor.stdout,
            re.M,
        ), doctor.stdout
        assert not re.search(r"^local +claude:", doctor.stdout, re.M), "this machine has its stand-in"
    finally:
        away.rename(claude)
    added = world.fleet("host", "add", "remote")
    assert added.returncode == 0 and f"remote: Claude Code at {claude}\n" in added.stdout, added.stdout
    assert re.search(r"^remote +No problems found\.$", world.fleet("doctor", "duo").stdout, re.M)


def test_the_attach_hint_of_a_fleet_all_on_another_host_is_one_that_works_when_typed(
    world: FleetWorld, remote: Remote
) -> None:
    world.layout(
        "ronly", "  - there:\n      host: remote\n      root: ~/proj\n      panes:\n        - B: claude-run\n"
    )
    remote.plan("B", agent(label="B"))
    start = world.fleet("start", "ronly")  # not --no-attach: stdin is no terminal, so a hint
    try:
        assert start.returncode == 0, start.stdout + start.stderr
        assert start.stdout.splitlines()[-1] == "Attach with: fleet attach ronly", start.stdout
        assert " on 1 host: remote (1 pane)\n" in start.stdout, start.stdout
        status = world.fleet("status", "ronly")
        assert " on 1 host: 1 pane(s)" in status.stdout, status.stdout
        assert "ssh" not in start.stdout and "--here" not in start.stdout, start.stdout
        attach = world.fleet("attach", "ronly", "--pane", "B")
        assert attach.returncode == 0, attach.stdout + attach.stderr
        assert attach.stdout == "Attach with: fleet attach ronly --pane B\n", attach.stdout
    finally:
        assert world.fleet("stop", "ronly", "--grace", "5").returncode == 0
    assert remote.agents() == []


def test_fleet_start_by_name_respawns_a_dead_agent_on_another_host_as_status_advises(
    world: FleetWorld, remote: Remote
) -> None:
    elsewhere = world.project / "layouts" / "duo.yml"  # not where a name is looked up: found by its name
    elsewhere.parent.mkdir()
    span(world).rename(elsewhere)
    world.plan("A", agent(label="A"))
    remote.plan("B", agent(label="B"))
    try:
        assert world.fleet("start", str(elsewhere), "--no-attach").returncode == 0
        remote.wait_event("B", "mark", name="ready")
        supervisor = next(
            p for p in remote.host.processes() if any(a.endswith("/claude-run") for a in p.cmdline()[:2])
        )  # not tmux, whose command line names claude-run too
        supervisor.kill()
        wait_until(lambda: rows(world)["remote/duo:there:B"]["state"].startswith("exited"), 20, "B dead")
        status = world.fleet("status", "duo")
        assert status.returncode == 1 and "`fleet start duo` respawns dead agents" in status.stderr, (
            status.stdout + status.stderr
        )
        again = world.fleet("start", "duo", "--no-attach")
        assert again.returncode == 0, again.stdout + again.stderr
        assert re.search(
            r"^remote +there:B +respawned \(killed by SIGKILL\), running ", again.stdout, re.M
        ), again.stdout
        wait_until(lambda: len(remote.events("B", "start")) >= 2, 30, "B respawned on its host")
        assert rows(world)["remote/duo:there:B"]["state"] != "exited", "running again"
    finally:
        assert world.fleet("stop", "duo", "--grace", "5").returncode == 0
    assert remote.agents() == [] and world.leftovers() == []


def test_a_host_gone_for_good_is_forgotten_on_purpose_saying_what_may_still_run_there(
    world: FleetWorld, remote: Remote
) -> None:
    started(world, remote)
    remote.host.stop_sshd()  # the host is gone: its agent runs on, unreachable
    stop = world.fleet("stop", "duo", "--grace", "5", env={"FLEET_HOST_TIMEOUT": "3"})
    assert stop.returncode == 1, stop.stdout + stop.stderr
    assert "`fleet forget duo --host HOST` forgets a host gone for good" in stop.stdout, stop.stdout
    kept = world.fleet("status", env={"FLEET_HOST_TIMEOUT": "3"})
    assert re.search(r"^remote +there:B .* unknown *$", kept.stdout, re.M), "with no LAYOUT: it may run on"
    assert not re.search(r"^local ", kept.stdout, re.M), "this machine's part answered its stop"
    assert world.fleet("forget", "duo").returncode == 1, "not the whole fleet while a host may run it"

    forgot = world.fleet("forget", "duo", "--host", "remote")
    assert forgot.returncode == 0, forgot.stderr
    assert forgot.stdout == (
        "Forgot remote's part of fleet 'duo': nothing will ask remote again.\n"
        "Its agents (B) may still run there; if it comes back, `fleet stop duo` run there ends them.\n"
    )
    status = world.fleet("status")
    assert status.returncode == 3 and "no fleet is running" in status.stderr, status.stdout + status.stderr
    assert [(f["name"], f["state"]) for f in json.loads(world.fleet("ls", "--json").stdout)] == [
        ("duo", "stopped")
    ]
    remote.host.start_sshd()
    assert any("fake_claude" in line for line in remote.agents()), "nothing stopped it there: as it said"


def test_a_fleet_budget_across_hosts_is_held_as_each_hosts_share_and_changed_there(
    world: FleetWorld, remote: Remote
) -> None:
    """No host sees another's ledgers: each holds its share of the fleet's budget (one of two labelled
    panes: half), a fleet change goes to every host as its share, a pane's to its host alone."""
    started(world, remote, extra="budget: 10\n")
    shown = world.fleet("budget", "duo", "--socket", world.socket)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert re.search(r"^local +  fleet  duo +\$5\.00 ", shown.stdout, re.M), shown.stdout
    assert re.search(r"^remote +  fleet  duo +\$5\.00 ", shown.stdout, re.M), shown.stdout
    raised = world.fleet("budget", "duo", "--socket", world.socket, "--add", "4")
    assert raised.returncode == 0, raised.stdout + raised.stderr
    assert re.search(
        r"^local +Budget of fleet duo: \$5\.00 -> \$7\.00 \(in effect now\)$", raised.stdout, re.M
    )
    assert re.search(
        r"^remote +Budget of fleet duo: \$5\.00 -> \$7\.00 \(in effect now\)$", raised.stdout, re.M
    )
    pane = world.fleet("budget", "duo", "--socket", world.socket, "--pane", "B", "--set", "3")
    assert pane.returncode == 0, pane.stdout + pane.stderr
    assert re.search(r"^remote +Budget of pane B: none -> \$3\.00 \(in effect now\)$", pane.stdout, re.M)
    assert not re.search(r"^local +Budget", pane.stdout, re.M), "the pane's host alone"
    assert world.fleet("stop", "duo", "--grace", "5").returncode == 0
