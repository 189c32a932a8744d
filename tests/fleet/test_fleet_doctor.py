"""fleet doctor: finds, and with --fix repairs, orphans, stale bindings, duplicate labels, hooks, the index.

Everything is planted in the test's private tmux world (its own ``TMUX_TMPDIR``),
so the doctor never sees — let alone kills — anything outside the test.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import typing as t
from pathlib import Path

import psutil
from support.claude_run import DEAD_PID
from support.fleet import FleetWorld
from support.waiting import wait_until

from claude_shepherd.supervisor.session import index
from claude_shepherd.supervisor.session.identity import start_token
from claude_shepherd.supervisor.session.store import read_state


def write_state(session: Path, **state: t.Any) -> None:
    session.mkdir(parents=True, exist_ok=True)
    (session / ".state.json").write_text(
        json.dumps({"pid": DEAD_PID, "skill": "implement", **state}, indent=2)
    )


def plant(world: FleetWorld, **env: str) -> subprocess.Popen[bytes]:
    """A long-lived process that looks like an agent's (it carries the test tag, so it is reaped)."""
    return subprocess.Popen(["sleep", "600"], env={**world.env, **env}, stdin=subprocess.DEVNULL)


def test_doctor_finds_and_fixes_what_a_fleet_leaves_wrong(world: FleetWorld) -> None:
    # A running fleet whose window has two panes with the same identity (R6), and a pane B.
    world.tmux(
        "-f", "/dev/null", "new-session", "-d", "-s", "dup", "-n", "w", "-x", "120", "-y", "40", "sleep 600"
    )
    world.tmux("split-window", "-t", "dup:w", "sleep 600")
    world.tmux("split-window", "-t", "dup:w", "sleep 600")
    first, second, third = world.tmux("list-panes", "-t", "dup:w", "-F", "#{pane_id}").split()
    for pane, label in ((first, "A"), (second, "A"), (third, "B")):
        world.tmux("set-option", "-p", "-t", pane, "@pane_label", label)

    # Orphans: one from a fleet pane that no longer exists, one whose supervisor died.
    gone_socket = world.tmux_tmpdir / f"tmux-{os.getuid()}" / "fleet-pytest-gone"
    orphan = plant(world, TMUX=f"{gone_socket},1,0", TMUX_PANE="%7", CLAUDE_SUPERVISOR_PID=str(DEAD_PID))
    lost = plant(world, **world.pane_env("B"), CLAUDE_SUPERVISOR_PID=str(DEAD_PID))
    bystander = plant(world, **world.pane_env("B"))  # a pane's own process: not an agent, left alone

    # Sessions: bound to a pane that is gone, two bound to one pane, one fine, one of a stopped fleet.
    root = world.project / "sessions"
    write_state(root / "S_STALE", fleetPaneId="dup:w:Gone")
    write_state(root / "S_OLD", fleetPaneId="dup:w:B", lastHeartbeat="2026-11-01T00:00:00Z")
    write_state(root / "S_NEW", fleetPaneId="dup:w:B", lastHeartbeat="2026-11-21T00:00:00Z")
    write_state(root / "S_OTHER", fleetPaneId="stopped-fleet:w:X")
    write_state(root / "S_OK", fleetPaneId="dup:w:Old")
    index.rebuild(root)
    write_state(root / "S_OK", fleetPaneId="dup:w:A")  # rebound behind the index's back: it is stale

    found = world.fleet("doctor")
    assert found.returncode == 1
    out = found.stdout
    assert (
        f"orphan: orphaned agent process {orphan.pid} (sleep 600): its fleet pane %7 on fleet-pytest-gone no longer exists"
        in out
    )
    assert f"orphan: orphaned agent process {lost.pid} (sleep 600): its supervisor {DEAD_PID} is gone" in out
    assert str(bystander.pid) not in out
    assert f"duplicate-pane: panes {first} and {second} on {world.socket} share the identity dup:w:A" in out
    assert (
        f"stale-binding: session {root / 'S_STALE'} is bound to pane dup:w:Gone, but its running fleet has no such pane"
        in out
    )
    assert "duplicate-binding: 2 sessions are bound to pane dup:w:B: S_NEW, S_OLD (keeping S_NEW)" in out
    assert "S_OTHER" not in out, "a stopped fleet's binding is what its next start resumes"
    assert f"index: refreshed the session index of {root} (a cache: not a problem)" in out
    assert "hooks: hooks PreToolUse" in out and "are not installed in the settings Claude reads" in out
    assert found.stderr == "fleet: error: 6 problem(s) found; run `fleet doctor --fix` to repair\n"
    assert psutil.pid_exists(orphan.pid), "without --fix nothing is touched"

    fixed = world.fleet("doctor", "--fix")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert fixed.stdout.count("  fixed: ") == 6
    wait_until(lambda: orphan.poll() is not None and lost.poll() is not None, 10, "the orphans to end")
    assert bystander.poll() is None
    labels = world.tmux("list-panes", "-t", "dup:w", "-F", "#{@pane_label}").split()
    assert labels == ["A", "A-2", "B"]
    assert "fleetPaneId" not in read_state(root / "S_STALE")
    assert (
        "fleetPaneId" not in read_state(root / "S_OLD")
        and read_state(root / "S_NEW")["fleetPaneId"] == "dup:w:B"
    )
    assert read_state(root / "S_OTHER")["fleetPaneId"] == "stopped-fleet:w:X"
    assert index.by_pane(root, "dup:w:A") == ["S_OK"]
    settings = json.loads((world.config / "settings.json").read_text())
    assert {"PreToolUse", "UserPromptSubmit", "SessionStart"} <= set(settings["hooks"])

    clean = world.fleet("doctor")
    assert (clean.returncode, clean.stdout) == (0, "No problems found.\n"), clean.stdout


def test_doctor_never_judges_agents_of_a_server_that_does_not_answer(world: FleetWorld) -> None:
    """A wedged (here: stopped) tmux server's panes are unknown, not gone: --fix must not kill its agents."""
    world.tmux("-f", "/dev/null", "new-session", "-d", "-s", "busy", "-n", "w", "sleep 600")
    pane = world.tmux("list-panes", "-t", "busy:w", "-F", "#{pane_id}")
    world.tmux("set-option", "-p", "-t", pane, "@pane_label", "A")
    server_pid = int(world.tmux("display-message", "-p", "#{pid}"))
    agent = plant(
        world, TMUX=f"{world.socket_path},{server_pid},0", TMUX_PANE=pane, CLAUDE_SUPERVISOR_PID="1"
    )
    os.kill(server_pid, signal.SIGSTOP)
    try:
        fixed = world.fleet("doctor", "--fix")
    finally:
        os.kill(server_pid, signal.SIGCONT)
    assert f"orphaned agent process {agent.pid}" not in fixed.stdout, fixed.stdout
    assert agent.poll() is None, "the agent of a live (if slow) fleet is left alone"


def test_what_agents_named_reaches_the_operator_without_escapes(world: FleetWorld) -> None:
    """An agent names its processes and can create folders: doctor shows them, never their escapes."""
    gone_socket = world.tmux_tmpdir / f"tmux-{os.getuid()}" / "fleet-pytest-gone"
    world.tmux("-f", "/dev/null", "new-session", "-d", "-s", "live", "-n", "w", "sleep 600")
    argv0 = "\x1b]52;c;cHduZWQ=\x07\u202eevil"  # OSC 52 (set the clipboard) and a bidi override
    orphan = subprocess.Popen(
        [argv0, "600"], executable="sleep", stdin=subprocess.DEVNULL,
        env={**world.env, "TMUX": f"{gone_socket},1,0", "TMUX_PANE": "%7", "CLAUDE_SUPERVISOR_PID": str(DEAD_PID)},
    )  # fmt: skip
    write_state(world.project / "sessions" / "S_\x1b[2J", fleetPaneId="live:w:\x1b]0;title\x07")
    try:
        found = world.fleet("doctor")
        assert found.returncode == 1
        assert (
            f"orphaned agent process {orphan.pid} (\ufffd]52;c;cHduZWQ=\ufffd\ufffdevil 600)" in found.stdout
        )
        assert "S_\ufffd[2J is bound to pane live:w:\ufffd]0;title\ufffd" in found.stdout
        assert "\x1b" not in found.stdout + found.stderr and "\u202e" not in found.stdout + found.stderr
    finally:
        orphan.kill()
        orphan.wait()


def running(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def two_panes(world: FleetWorld, session: str) -> list[str]:
    """A tmux session *session* (window ``w``) of two panes that only sleep: their ids."""
    world.tmux("-f", "/dev/null", "new-session", "-d", "-s", session, "-n", "w", "sleep 600")
    world.tmux("split-window", "-t", f"{session}:w", "sleep 600")
    return world.tmux("list-panes", "-t", f"{session}:w", "-F", "#{pane_id}").split()


def test_a_pane_an_agent_relabelled_with_separators_is_still_seen_and_its_agent_never_ended(
    world: FleetWorld,
) -> None:
    """A unit separator or newline in a label must not hide the pane: doctor --fix would end a live agent."""
    first, second = two_panes(world, "hide")
    world.tmux("set-option", "-p", "-t", first, "@pane_label", "Victim\x1f")
    world.tmux("set-option", "-p", "-t", second, "@pane_label", "Other\n%0\x1fforged")
    server_pid = int(world.tmux("display-message", "-p", "#{pid}"))
    agents = [plant(world, TMUX=f"{world.socket_path},{server_pid},0", TMUX_PANE=pane, CLAUDE_SUPERVISOR_PID="1")
              for pane in (first, second)]  # fmt: skip
    try:
        status = world.fleet("status")
        assert status.returncode == 0, status.stderr
        assert "Victim\ufffd" in status.stdout and "Other\ufffd%0\ufffdforged" in status.stdout, status.stdout
        fixed = world.fleet("doctor", "--fix")
        assert "orphan" not in fixed.stdout, fixed.stdout
        assert all(agent.poll() is None for agent in agents), "doctor ended the agent of a live pane"
    finally:
        for agent in agents:
            agent.kill()
            agent.wait()


def test_one_unreadable_state_costs_only_itself(world: FleetWorld) -> None:
    """A state nested deeper than the JSON parser's stack (a Bash write) is skipped, not a traceback."""
    root = world.project / "sessions"
    write_state(root / "S_FINE", fleetPaneId="gone:w:X")
    (root / "S_DEEP").mkdir()
    (root / "S_DEEP" / ".state.json").write_text("[" * 200_000 + "]" * 200_000)
    found = world.fleet("doctor")
    assert "Traceback" not in found.stderr, found.stderr
    assert found.returncode in (0, 1) and found.stderr.count("\n") <= 1, found.stderr


def test_of_two_panes_with_one_label_the_one_whose_agent_holds_its_session_keeps_it(
    world: FleetWorld,
) -> None:
    """An agent in the first pane took the label of the second: --fix renames the impostor, not the agent."""
    impostor, real = two_panes(world, "dup")
    for pane in (impostor, real):
        world.tmux("set-option", "-p", "-t", pane, "@pane_label", "Victim")
    supervisor_script = world.base / "claude-run"
    supervisor_script.write_text(
        "import time\ntime.sleep(600)\n"
    )  # named like the supervisor, as doctor sees it

    def supervise(pane: str, session: str) -> psutil.Process:
        """A supervisor running as *pane*'s process that owns *session*, bound to the identity."""
        world.tmux("respawn-pane", "-k", "-t", pane, f"exec {sys.executable} {supervisor_script}")
        proc = psutil.Process(int(world.tmux("display-message", "-p", "-t", pane, "#{pane_pid}")))
        wait_until(lambda: proc.cmdline()[1:] == [str(supervisor_script)], 5, f"the supervisor in {pane}")
        write_state(world.project / "sessions" / session, fleetPaneId="dup:w:Victim", pid=proc.pid,
                    pidStart=start_token(proc.pid))  # fmt: skip
        return proc

    def labels() -> dict[str, str]:
        return dict(
            line.split()
            for line in world.tmux(
                "list-panes", "-t", "dup:w", "-F", "#{pane_id} #{@pane_label}"
            ).splitlines()
        )

    supervisors = [supervise(real, "S_VICTIM")]
    try:
        found = world.fleet("doctor")
        assert (
            f"share the identity dup:w:Victim; sessions cannot tell them apart ({real} keeps it"
            in found.stdout
        ), found.stdout
        fixed = world.fleet("doctor", "--fix")
        assert labels() == {impostor: "Victim-2", real: "Victim"}
        assert all(running(s) for s in supervisors), f"doctor ended an agent:\n{fixed.stdout}"

        # Both agents hold a session bound to it (the impostor activated one too): nothing to go by.
        world.tmux("set-option", "-p", "-t", impostor, "@pane_label", "Victim")
        supervisors.append(supervise(impostor, "S_IMPOSTOR"))
        found = world.fleet("doctor", "--fix")
        assert f"the agents of {impostor}, {real} each hold a session bound to it" in found.stdout, (
            found.stdout
        )
        assert labels() == {impostor: "Victim", real: "Victim"}, "nothing renamed on a guess"
        assert all(running(s) for s in supervisors), f"doctor ended an agent:\n{found.stdout}"
    finally:
        for supervisor in supervisors:
            with contextlib.suppress(psutil.NoSuchProcess):
                supervisor.kill()
        # Never psutil's wait(): tmux, their parent, may leave a killed pane process a zombie until its
        # next child exits (here, the other pane's sleep 600); a zombie has ended, and teardown reaps it.
        wait_until(lambda: not any(running(s) for s in supervisors), 10, "the killed supervisors to end")


def test_a_stale_index_after_a_restart_is_refreshed_and_no_problem(world: FleetWorld) -> None:
    """A restart gives a session a new owner behind the index's back: doctor refreshes it and exits 0."""
    installed = subprocess.run(
        [str(Path(sys.executable).parent / "claude-hook"), "install", "--user"],
        capture_output=True,
        text=True,
        env=world.env,
        cwd=world.project,
        timeout=30,
    )
    assert installed.returncode == 0, installed.stderr
    root = world.project / "sessions"
    write_state(root / "S_A", fleetPaneId="gone:w:A")
    index.rebuild(root)
    write_state(root / "S_A", pid=os.getpid(), pidStart=start_token(os.getpid()))  # the new supervisor's

    found = world.fleet("doctor")
    assert (found.returncode, found.stderr) == (0, ""), found.stdout + found.stderr
    assert found.stdout == (
        f"index: refreshed the session index of {root} (a cache: not a problem)\nNo problems found.\n"
    )
    assert index.stored(root) == index.scan(root)
    again = world.fleet("doctor")
    assert (again.returncode, again.stdout) == (0, "No problems found.\n")


def test_doctor_says_where_it_looked_for_claude_code_when_every_agent_would_die_at_start(
    world: FleetWorld,
) -> None:
    home = world.env["HOME"]
    missing = world.fleet("doctor", env={"CLAUDE_BIN": "", "PATH": "/usr/bin:/bin"})
    assert missing.returncode == 1, missing.stdout + missing.stderr
    assert (
        f"claude: every agent started here would die at once: claude not found on PATH nor in "
        f"{home}/.claude/local, {home}/.local/bin, /usr/local/bin; install Claude Code or set "
        "CLAUDE_BIN=/path/to/claude (PATH here is /usr/bin:/bin)\n"
    ) in missing.stdout, missing.stdout
    wrong = world.fleet("doctor", env={"CLAUDE_BIN": "/nonexistent/claude"})
    assert "claude: every agent started here would die at once: CLAUDE_BIN=/nonexistent/claude is not an" in (
        wrong.stdout
    ), wrong.stdout
    found = world.fleet("doctor")
    assert "claude:" not in found.stdout, "the stand-in Claude the fleet's agents run is found"


def test_a_skill_shell_gate_missing_after_claude_code_was_updated_is_found_and_installed(
    world: FleetWorld,
) -> None:
    """Claude Code 2.1.328 has no PreSkillShellCommand, so the install left it out; once Claude Code is
    updated (the stand-in answers 2.1.332) every skill's inline command would run ungated until doctor
    finds the hook missing and --fix installs it."""
    older = {"FAKE_CLAUDE_VERSION": "2.1.328"}
    installed = subprocess.run(
        [str(Path(sys.executable).parent / "claude-hook"), "install", "--user"],
        capture_output=True,
        text=True,
        env={**world.env, **older},
        cwd=world.project,
        timeout=30,
    )
    assert installed.returncode == 0, installed.stderr
    settings = world.config / "settings.json"
    assert "PreSkillShellCommand" not in json.loads(settings.read_text())["hooks"]
    assert world.fleet("doctor", env=older).stdout == "No problems found.\n"

    updated = world.fleet("doctor")
    assert updated.returncode == 1
    assert (
        "hooks: hooks PreSkillShellCommand are not installed in the settings Claude reads for "
        f"{world.project}"
    ) in updated.stdout, updated.stdout
    fixed = world.fleet("doctor", "--fix")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "PreSkillShellCommand" in json.loads(settings.read_text())["hooks"]
    assert world.fleet("doctor").stdout == "No problems found.\n"
