"""Every fleet back after a reboot, without a person: `fleet boot enable` writes a unit that runs this
installation's `fleet start --all`; a power loss (every process of the running fleets killed, their tmux
sockets gone) is followed by the unit's own command line, and each fleet that ran is back, each pane in its
own conversation, while the fleet a person stopped stays stopped. The failures peers' units had, each a test.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import plistlib
import shlex
import shutil
import signal
import subprocess
import typing as t
from pathlib import Path

import psutil
import pytest
from support.claude_run import TAG_ENV
from support.fleet import FleetWorld, agent, resume_of
from support.waiting import wait_until

from claude_shepherd.fleet import boot

UNIT = Path(".config/systemd/user/claude-shepherd-fleets.service")


def _unit(world: FleetWorld) -> str:
    return (world.home / UNIT).read_text()


def _unit_env(text: str) -> dict[str, str]:
    """The Environment= of a unit, as systemd reads it (each line one quoted NAME=value)."""
    out = {}
    for line in text.splitlines():
        if line.startswith("Environment="):
            (pair,) = shlex.split(line.removeprefix("Environment="))
            name, _, value = pair.replace("%%", "%").replace("$$", "$").partition("=")
            out[name] = value
    return out


def _run_unit(world: FleetWorld) -> subprocess.CompletedProcess[str]:
    """The unit's ExecStart, exactly as written, in the unit's environment (plus the test's tag, so that
    what it starts is reaped at teardown), from / as systemd runs it."""
    text = _unit(world)
    argv = boot.exec_start(text)
    assert argv is not None and Path(argv[0]).is_absolute(), text
    env = {**_unit_env(text), TAG_ENV: world.tag}
    return subprocess.run(list(argv), capture_output=True, text=True, env=env, cwd="/", timeout=120,
                          stdin=subprocess.DEVNULL)  # fmt: skip


def _two_running_one_stopped(world: FleetWorld) -> dict[str, str]:
    """Fleets alpha and beta running (each on its own tmux server), gamma stopped by a person."""
    sockets = {"alpha": world.socket, "beta": f"{world.socket}-b", "gamma": f"{world.socket}-c"}
    for name, label in (("alpha", "A"), ("beta", "B"), ("gamma", "G")):
        world.layout(name, f"  - agents:\n      panes:\n        - {label}: claude-run\n",
                     extra=f"socket_name: {sockets[name]}\n")  # fmt: skip
        world.plan(label, agent(label=label))
        started = world.fleet("start", name, "--no-attach", socket=False)
        assert started.returncode == 0, started.stdout + started.stderr
    for label in "ABG":
        world.wait_event(label, "mark", name="ready")
    stopped = world.fleet("stop", "gamma", socket=False)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    return sockets


def _power_loss(world: FleetWorld, sockets: dict[str, str]) -> None:
    """kill -9 of every process of the test (agents, claude-runs, tmux servers), sockets removed."""
    for proc in world.leftovers():
        try:
            proc.send_signal(signal.SIGKILL)
        except psutil.Error:
            continue
    wait_until(lambda: not world.leftovers(), 10, "every process gone")
    for socket in sockets.values():
        (world.socket_path.parent / socket).unlink(missing_ok=True)


def _kill_servers(world: FleetWorld, sockets: dict[str, str]) -> None:
    for socket in sockets.values():
        world.tmux("kill-server", check=False, socket=socket)


def test_after_a_power_loss_the_units_command_brings_back_what_ran_and_not_what_a_person_stopped(
    world: FleetWorld,
) -> None:
    sockets = _two_running_one_stopped(world)
    try:
        enabled = world.fleet("boot", "enable")
        assert enabled.returncode == 0, enabled.stdout + enabled.stderr
        assert "loginctl enable-linger" in enabled.stdout
        _power_loss(world, sockets)

        booted = _run_unit(world)
        assert booted.returncode == 0, booted.stdout + booted.stderr
        lines = booted.stdout.splitlines()
        assert [line.split(" ")[0] for line in lines] == ["alpha", "beta", "gamma"], lines
        assert "running: 1 agent(s) running, 1 started again" in lines[0], lines
        assert "left stopped" in lines[2], lines
        for label in "AB":
            _, again = world.wait_starts(label, 2)
            assert resume_of(again) == f"conv-{label}", f"{label} resumes its own conversation"
        assert len(world.starts("G")) == 1, "the fleet a person stopped stays stopped"
        assert not (world.socket_path.parent / sockets["gamma"]).exists()

        # the unit runs again (a restart of it, a second login): the running fleets are only reconciled
        again = _run_unit(world)
        assert again.returncode == 0, again.stdout + again.stderr
        assert "1 agent(s) running, none started" in again.stdout, again.stdout
        assert [len(world.starts(label)) for label in "ABG"] == [2, 2, 1], "no agent twice"

        status = world.fleet("boot", "status")
        assert status.returncode == 0, status.stderr
        assert "Boot start is enabled" in status.stdout and "It runs this installation" in status.stdout
        assert (
            "Last `fleet start --all`" in status.stdout
            and "1 agent(s) running, none started" in status.stdout
        )
    finally:
        _kill_servers(world, sockets)


def test_a_restart_that_finds_the_old_server_alive_starts_no_second_set_of_agents(world: FleetWorld) -> None:
    """Whatever survived: one agent killed, its server and the other agent alive. Each runs once."""
    world.layout("duo", "  - agents:\n      panes:\n        - A: claude-run\n        - B: claude-run\n")
    world.plan("A", agent(label="A"))
    world.plan("B", agent(label="B"))
    assert world.fleet("start", "duo", "--no-attach").returncode == 0
    world.wait_event("A", "mark", name="ready")
    world.wait_event("B", "mark", name="ready")
    os.kill(int(world.panes()["A"]["pane_pid"]), signal.SIGKILL)  # its claude-run: the pane is dead
    wait_until(lambda: world.panes()["A"]["pane_dead"] == "1", 10, "A's pane dead")

    started = world.fleet("start", "--all", socket=False)
    assert started.returncode == 0, started.stdout + started.stderr
    assert "2 agent(s) running, 1 started again" in started.stdout, started.stdout
    _, second = world.wait_starts("A", 2)
    assert resume_of(second) == "conv-A"
    assert len(world.starts("B")) == 1, "B was running: left alone"
    claudes = [p for p in world.leftovers() if "fake_claude" in " ".join(p.cmdline())]
    assert len(claudes) == 2, [p.cmdline() for p in claudes]


def test_the_unit_keeps_the_fleet_when_it_stops_and_names_this_installation(world: FleetWorld) -> None:
    """KillMode=control-group (the default) would kill the tmux servers with the unit; a unit left
    pointing at an old installation is named by `fleet boot status` with the command that rewrites it."""
    enabled = world.fleet("boot", "enable", env={"ANTHROPIC_API_KEY": "sk-test"})
    assert enabled.returncode == 0, enabled.stderr
    text = _unit(world)
    settings = dict(
        line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith(("#", "Env"))
    )
    assert settings["KillMode"] == "process" and settings["Type"] == "oneshot", text
    assert settings["RemainAfterExit"] == "no" and settings["WantedBy"] == "default.target"
    assert "sk-test" not in text, "no secret in the unit"
    env = _unit_env(text)
    assert shutil.which("tmux", path=env["PATH"]) and env["HOME"] == str(world.home)
    assert env["TMUX_TMPDIR"] == str(world.tmux_tmpdir), "the fleets' sockets are found where they were"
    assert (world.home / UNIT).stat().st_mode & 0o077 == 0
    assert (world.home / UNIT.parent / "default.target.wants" / UNIT.name).resolve() == world.home / UNIT

    old = text.replace(boot.exec_start(text)[0], "/opt/old-venv/bin/fleet")  # type: ignore[index]
    (world.home / UNIT).write_text(old)
    status = world.fleet("boot", "status")
    assert "It runs another installation: /opt/old-venv/bin/fleet, which no longer exists" in status.stdout
    assert "rewrite it: fleet boot enable" in status.stdout
    assert world.fleet("boot", "enable").returncode == 0
    assert "It runs this installation" in world.fleet("boot", "status").stdout

    disabled = world.fleet("boot", "disable")
    assert disabled.returncode == 0 and not (world.home / UNIT).exists()
    assert not (world.home / UNIT.parent / "default.target.wants" / UNIT.name).is_symlink()
    assert "not enabled" in world.fleet("boot", "status").stdout


def test_the_generated_unit_passes_systemd_analyze_verify(world: FleetWorld) -> None:
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed (apt-get install systemd)")
    assert world.fleet("boot", "enable").returncode == 0
    path = world.home / UNIT
    verified = subprocess.run(
        ["systemd-analyze", "verify", str(path)], capture_output=True, text=True, timeout=60
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    path.write_text(_unit(world).replace('ExecStart="/', 'ExecStart="relative/'))  # the check can fail
    broken = subprocess.run(
        ["systemd-analyze", "verify", str(path)], capture_output=True, text=True, timeout=60
    )
    assert broken.returncode != 0, broken.stdout + broken.stderr


def test_a_stop_of_the_unit_under_a_user_systemd_stops_nothing_of_the_fleet(world: FleetWorld) -> None:
    why_not = boot.user_manager()
    if why_not is not None:
        pytest.skip(f"no user systemd runs here: {why_not}")
    pytest.skip("a user systemd runs here, but its unit would start the user's own fleets: not run in tests")


def test_the_launchd_agent_runs_this_installation_and_abandons_its_process_group() -> None:
    plan = boot.plan("launchd", {**os.environ, "HOME": "/home/someone", "ANTHROPIC_API_KEY": "sk-x"})
    document: dict[str, t.Any] = plistlib.loads(plan.text.encode())
    assert plan.path == Path("/home/someone/Library/LaunchAgents/com.claude-shepherd.fleets.plist")
    assert document["ProgramArguments"][1:] == ["start", "--all"]
    assert os.access(document["ProgramArguments"][0], os.X_OK)
    assert document["AbandonProcessGroup"] is True and document["RunAtLoad"] is True
    assert document["KeepAlive"] is False
    assert document["EnvironmentVariables"]["HOME"] == "/home/someone"
    assert "ANTHROPIC_API_KEY" not in document["EnvironmentVariables"]
    assert boot.exec_start(plan.text) == tuple(document["ProgramArguments"])


def test_start_all_refuses_a_layout_an_agent_changed_and_enable_replaces_a_planted_link(
    world: FleetWorld,
) -> None:
    """No person watches a boot: a layout file written since the fleet last started (agents write files in
    their projects, and ./tmuxinator/ is one) is not run; the other fleets still start."""
    path = world.layout("solo", "  - agents:\n      panes:\n        - S: claude-run\n")
    world.plan("S", [{"wait": None}])
    assert world.fleet("start", "solo", "--no-attach").returncode == 0
    planted = world.project / "PWNED"
    path.write_text(path.read_text().replace("windows:", f"on_project_start: touch {planted}\nwindows:"))
    started = world.fleet("start", "--all", socket=False)
    assert (
        started.returncode == 1 and "its layout file" in started.stdout and "changed since" in started.stdout
    )
    assert "fleet start solo" in started.stdout and not planted.exists(), started.stdout

    wants = world.home / UNIT.parent / "default.target.wants" / UNIT.name
    wants.parent.mkdir(parents=True)
    wants.symlink_to(world.project / "evil.service")
    assert world.fleet("boot", "enable").returncode == 0
    assert os.readlink(wants) == f"../{UNIT.name}", "enabled as our unit, not the link found there"


def test_what_a_boot_holds_a_layout_to_is_the_text_that_ran(
    world: FleetWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A start records the digest of the bytes it parsed and ran, not of the file as it is a moment later
    (an agent could swap the file in between); a record with no digest (an earlier version's, drained
    since) starts nothing at boot."""
    from claude_shepherd.fleet import known
    from claude_shepherd.fleet.layout import load_layout

    monkeypatch.setenv("HOME", world.env["HOME"])  # the records this test writes are the world's fleets'
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    path = world.layout("solo", "  - agents:\n      panes:\n        - S: claude-run\n")
    layout = load_layout(path)
    ran = path.read_bytes()
    path.write_text(path.read_text().replace("windows:", "on_project_start: touch PWNED\nwindows:"))
    known.remember(layout)
    (record,) = known.named(layout.name)

    assert record.digest == hashlib.sha256(ran).hexdigest() != known.digest_of(path)
    started = world.fleet("start", "--all", socket=False)
    assert started.returncode == 1 and "changed since it last started" in started.stdout, started.stdout
    assert not (world.project / "PWNED").exists()

    old = dataclasses.replace(record, digest="", wanted=True)  # as a drain marks an earlier version's record
    known._path(record.socket, record.name).write_text(json.dumps(old.as_json()))
    started = world.fleet("start", "--all", socket=False)
    assert started.returncode == 1 and "start it yourself once: fleet start solo" in started.stdout, (
        started.stdout
    )


def test_the_unit_carries_odd_paths_and_status_names_lines_enable_never_writes(world: FleetWorld) -> None:
    text = boot.unit_text(("/opt/a$b %c/bin/fleet", "start", "--all"), {"HOME": "/home/u$er %x"})
    assert '"/opt/a$$b %%c/bin/fleet"' in text, "a command expands $: written $$"
    assert 'Environment="HOME=/home/u$er %%x"' in text, "Environment= expands no $: written as it is"
    with pytest.raises(boot.BootError, match="backslash or a quote"):
        boot.unit_text(('/opt/a"b/bin/fleet', "start", "--all"), {})
    assert world.fleet("boot", "enable").returncode == 0
    unit = world.home / UNIT
    unit.write_text(
        unit.read_text().replace("ExecStart=", "ExecStartPre=/bin/sh -c 'touch /tmp/x'\nExecStart=")
    )
    status = world.fleet("boot", "status")
    assert "It has lines `fleet boot enable` does not write (ExecStartPre=)" in status.stdout, status.stdout
