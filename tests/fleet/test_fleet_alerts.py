"""Alerts: once per transition into needs-you / error (/ done), a tmux bell and message, the fleet's command.

The hooks run as separate processes (``python -m claude_shepherd.supervisor.pane_notify STATE``,
``claude-hook notification``) in a pane's environment on a private tmux server, exactly
as in a fleet; the notify command is a recorder that appends its argv, as JSON, to a file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import typing as t
import uuid
from pathlib import Path

import psutil
import pytest
from support.alerts import processes, recorder, records, settle
from support.fleet import FleetWorld
from support.tmux_panes import Tmux
from support.waiting import wait_until

from claude_shepherd.supervisor import alerts


def alert_processes(tmux: Tmux) -> list[psutil.Process]:
    """The alerts under way for panes of *tmux* (their payload names its socket), from spawn to end."""
    mark = f'"socket": {json.dumps(tmux.path)}'
    return processes(lambda argv: alerts.ALERT_COMMAND in argv and any(mark in arg for arg in argv))


def throttle_passed(tmp_path: Path) -> None:
    """As far as the pane-state throttle knows, each pane's last state was published
    THROTTLE_SECONDS ago (it compares its stamps' times with the clock): the next hook calls tmux."""
    from claude_shepherd.supervisor.pane_notify import THROTTLE_SECONDS

    stamps = list((tmp_path / "run").rglob("*.state"))
    assert stamps, "the hook stamped the state it published"
    for stamp in stamps:
        os.utime(stamp, (time.time() - THROTTLE_SECONDS - 0.1,) * 2)


def hook(tmux: Tmux, pane: str, state: str, tmp_path: Path, **env: str) -> float:
    """Run the pane-state hook as its own process in *pane*; return how long it took."""
    full = {**os.environ, **tmux.pane_env(pane), "XDG_RUNTIME_DIR": str(tmp_path / "run"), **env}
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "claude_shepherd.supervisor.pane_notify", state], env=full,
                          capture_output=True, text=True, timeout=30)  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
    return time.monotonic() - began


def configure(
    tmux: Tmux,
    command: list[str] | None,
    on: t.Sequence[str] = alerts.DEFAULT_ON,
    *,
    tmux_alerts: bool = True,
) -> None:
    tmux("set-option", "-t", "s:", "@fleet_notify", alerts.encode(command, on, tmux=tmux_alerts))


@pytest.mark.slow  # over a second
def test_once_per_transition_with_each_value_in_its_own_argument(tmux: Tmux, tmp_path: Path) -> None:
    a, b, _ = tmux.ids
    argv, out = recorder(tmp_path)
    configure(tmux, [*argv, "{fleet}", "{label}: {state}", "[{session}]", "{state}{label}", "{host}"])
    hostile = "x{state} $(touch pwned); y`id`"
    tmux("set-option", "-p", "-t", a, "@pane_label", hostile)

    hook(tmux, a, "needs-you", tmp_path)
    assert settle(out, 1) == [["s", f"{hostile}: needs-you", "[]", f"needs-you{hostile}", "local"]]
    assert not (tmp_path / "pwned").exists() and not Path("pwned").exists()

    throttle_passed(tmp_path)  # the tmux call is made, and sees no transition
    hook(tmux, a, "needs-you", tmp_path)
    hook(tmux, a, "working", tmp_path)
    hook(tmux, a, "done", tmp_path)  # not asked for
    hook(tmux, a, "error", tmp_path)
    assert [r[2] for r in settle(out, 2)] == ["[]", "[]"] and records(out)[1][1].endswith(": error")
    hook(tmux, b, "needs-you", tmp_path)
    assert settle(out, 3)[2][:2] == ["s", f"{b}: needs-you"], "an unlabelled pane is named by its id"

    configure(tmux, [*argv, "{state}"], on=["done"])
    hook(tmux, b, "done", tmp_path)
    assert settle(out, 4)[3] == ["done"]


@pytest.mark.slow  # over a second
def test_the_hook_returns_at_once_and_a_slow_command_is_killed_at_its_timeout(
    tmux: Tmux, tmp_path: Path
) -> None:
    a = tmux.ids[0]
    argv, out = recorder(tmp_path)
    marker = f"alert-{uuid.uuid4().hex}"
    configure(tmux, [*argv, "slow", marker])
    took = hook(tmux, a, "error", tmp_path, FLEET_NOTIFY_TIMEOUT="1")
    assert took < 3, f"the hook waited {took:.1f}s for the notify command"
    wait_until(lambda: records(out) or None, 10, "the slow command to start")

    def running() -> list[psutil.Process]:
        found = []
        for proc in psutil.process_iter(["cmdline"]):
            if marker in (proc.info["cmdline"] or []) and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        return found

    assert running(), "the command runs on after the hook returned"
    wait_until(lambda: not running() or None, 10, "the command to be killed at its timeout")
    assert records(out) == [["slow", marker]], "killed before it finished"


def test_the_bell_rings_in_the_pane_and_silence_is_respected(tmux: Tmux, tmp_path: Path) -> None:
    a, b, c = tmux.ids
    tmux("select-window", "-t", "s:other")  # the agents' window is not the current one: tmux flags its bell
    configure(tmux, None)
    assert tmux("display-message", "-p", "-t", a, "#{window_bell_flag}") == "0"
    hook(tmux, a, "needs-you", tmp_path)
    wait_until(
        lambda: tmux("display-message", "-p", "-t", a, "#{window_bell_flag}") == "1" or None, 10, "the bell"
    )

    tmux("kill-window", "-t", "s:other")
    tmux("new-window", "-d", "-t", "s:", "-n", "other", "sleep 600")
    tmux("select-window", "-t", "s:other")
    assert tmux("display-message", "-p", "-t", b, "#{window_bell_flag}") == "0"
    configure(tmux, None, tmux_alerts=False)  # notify: false
    hook(tmux, c, "needs-you", tmp_path)
    assert tmux.option(c, "@pane_notify") == "needs-you", "the hook did publish the transition"
    wait_until(lambda: not alert_processes(tmux), 30, "any alert the hook started to end")
    assert tmux("display-message", "-p", "-t", b, "#{window_bell_flag}") == "0"


def test_a_transition_costs_the_hook_neither_subprocess_nor_pathlib(tmux: Tmux, tmp_path: Path) -> None:
    """The installed Notification hook, alerting: one tmux call and a spawn, no heavy stdlib imports."""
    from claude_shepherd.hooks.claude_settings import NOTIFICATION, hook_command

    a, _, _ = tmux.ids
    argv, out = recorder(tmp_path)
    configure(tmux, [*argv, "{label}", "{state}"])
    env = {**os.environ, **tmux.pane_env(a), "XDG_RUNTIME_DIR": str(tmp_path / "run")}
    installed = hook_command(NOTIFICATION).split()
    done = subprocess.run([installed[0], "-X", "importtime", *installed[1:]], input='{"notification_type": "x"}',
                          env=env, capture_output=True, text=True, timeout=30)  # fmt: skip
    assert done.returncode == 0, done.stderr
    modules = {
        line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")
    }
    assert "claude_shepherd.supervisor.session.programs" in modules, "the hook did call tmux"
    assert not {"subprocess", "pathlib"} & modules, sorted(modules)
    assert settle(out, 1) == [[a, "needs-you"]]
    assert (tmux.option(a, "@pane_notify"), tmux.option(a, "@window_notify")) == ("needs-you", "needs-you")


def test_the_message_cannot_run_tmux_formats() -> None:
    assert alerts.message("needs-you", "A#(touch x)") == "fleet: A##(touch x) needs you"
    assert alerts.message("error", "B") == "fleet: B: error"
    assert alerts.message("error", "B %H %n") == "fleet: B %%H %%n: error"  # no strftime
    assert alerts.message("done", "C\x1b]0;t\x07\u202e") == "fleet: C\ufffd]0;t\ufffd\ufffd is done"
    assert alerts.substitute(["{label}", "{nope}", "{{state}}"], {"label": "{state}", "state": "S"}) == [
        "{state}", "{nope}", "{S}",
    ]  # fmt: skip
    assert alerts.substitute(["{label}: {state}"], {"label": "\x1b]52;c;eA==\x07", "state": "done"}) == [
        "\ufffd]52;c;eA==\ufffd: done",
    ]  # fmt: skip
    assert alerts.substitute(["{label}", "{state}: {label}", "-t={label}"], {"label": "--exec=x"}) == [
        "\u2010-exec=x", ": --exec=x", "-t=--exec=x",
    ]  # fmt: skip
    assert alerts.decode("").command is None and alerts.decode("garbage").on == alerts.DEFAULT_ON
    assert alerts.decode(alerts.encode(["x"], ["done", "bogus"])).on == ("done",)


# --------------------------------------------------------------------------- through fleet start


def test_fleet_start_configures_alerts_and_an_agent_needing_you_runs_the_command(world: FleetWorld) -> None:
    argv, out = recorder(world.base)
    command = json.dumps([*argv, "{fleet}", "{label}", "{state}", "{session}"])
    panes = "        - A: claude-run\n        - B: claude-run\n"
    world.layout("duo", f"  - agents:\n      panes:\n{panes}", extra=f"notify: {command}\n")
    activate = "CLAUDE_CODE_SESSION_ID=conv-A session activate sessions/S_A implement"
    ask = '{"notification_type": "permission_prompt"}'
    world.plan("A", [{"run": ["sh", "-c", activate]}, {"run": ["claude-hook", "notification"], "stdin": ask},
                     {"mark": "ready"}, {"wait": None}])  # fmt: skip
    world.plan("B", [{"mark": "ready"}, {"wait": None}])
    started = world.fleet("start", "duo", "--no-attach")
    assert started.returncode == 0, started.stderr
    world.wait_event("A", "mark", name="ready")
    assert settle(out, 1) == [["duo", "A", "needs-you", "S_A"]]
    option = json.loads(world.tmux("show-options", "-t", "duo", "-v", "@fleet_notify"))
    assert option == {
        "command": json.loads(command),
        "on": ["needs-you", "error", "exited", "paused"],
        "tmux": True,
    }

    # Without notify: in the layout, $FLEET_NOTIFY_COMMAND (split like a shell, run by none).
    world.layout("duo", f"  - agents:\n      panes:\n{panes}", extra="notify_on: [done]\n")
    again = world.fleet(
        "start", "duo", "--no-attach", env={"FLEET_NOTIFY_COMMAND": "notify-send 'fleet {fleet}' {label}"}
    )
    assert again.returncode == 0, again.stderr
    option = json.loads(world.tmux("show-options", "-t", "duo", "-v", "@fleet_notify"))
    assert option == {"command": ["notify-send", "fleet {fleet}", "{label}"], "on": ["done"], "tmux": True}

    bad = world.fleet("start", "duo", "--no-attach", env={"FLEET_NOTIFY_COMMAND": "notify-send 'unclosed"})
    assert bad.returncode == 1
    assert (
        bad.stderr == "fleet: error: $FLEET_NOTIFY_COMMAND: No closing quotation; quote it as a shell would\n"
    )


@pytest.mark.slow  # over a second
def test_a_pane_flapping_into_the_same_state_pages_once_and_the_queue_counts_it(
    tmux: Tmux, tmp_path: Path
) -> None:
    """An overflowed agent alternating a denied tool (error) and `session` (working) pages once, not per
    call: the attention queue holds one entry with its count, and pages again only once it is old news."""
    from claude_shepherd.supervisor import attention

    a = tmux.ids[0]
    argv, out = recorder(tmp_path)
    configure(tmux, [*argv, "{state}"])
    hook(tmux, a, "error", tmp_path)
    for _ in range(3):
        hook(tmux, a, "working", tmp_path)
        hook(tmux, a, "error", tmp_path)
    hook(tmux, a, "needs-you", tmp_path)  # another kind of trouble pages at once
    assert settle(out, 2) == [["error"], ["needs-you"]]
    queue = attention.Queue()
    entries = {e.kind: e for e in queue.waiting()}
    assert (entries["error"].count, entries["needs-you"].count) == (4, 1), queue.read()
    assert entries["error"].socket == os.path.basename(tmux.path) and entries["error"].paged is not None

    hook(tmux, a, "working", tmp_path)
    hook(tmux, a, "error", tmp_path)
    assert settle(out, 2) == [["error"], ["needs-you"]], "its last change was moments ago: a flap still"
    record = Path(queue.folder) / attention.FILE
    data = json.loads(record.read_text())
    for entry in data["entries"]:
        entry["changed"] -= attention.REPEAT + 1
    record.write_text(json.dumps(data))
    hook(tmux, a, "working", tmp_path)
    hook(tmux, a, "error", tmp_path)
    assert settle(out, 3)[2] == ["error"], "a minute after its last change, the same trouble is news again"


@pytest.mark.slow  # over a second
def test_no_file_an_agent_writes_silences_another_agents_alert(tmux: Tmux, tmp_path: Path) -> None:
    """Agent A writes, in the hooks' own folder, every cooldown stamp B's alerts could have: B's need
    and B's death are still announced (the cooldown is B's own tmux option, no file)."""
    import zlib

    a, b, _ = tmux.ids
    argv, out = recorder(tmp_path)
    configure(tmux, [*argv, "{label}", "{state}"])
    hook(tmux, a, "working", tmp_path)  # the hooks' folder exists
    env = {**os.environ, "XDG_RUNTIME_DIR": str(tmp_path / "run")}
    code = "from claude_shepherd.supervisor.pane_notify import _stamp_dir; print(_stamp_dir())"
    folder = Path(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                 check=True).stdout.strip())  # fmt: skip
    assert folder.is_dir()
    for state in ("needs-you", "error", "exited", "done"):
        for name in (f"{zlib.crc32(tmux.path.encode()):08x}-{b.lstrip('%')}.alert-{state}",
                     f"{zlib.crc32(tmux.path.encode()):08x}-{b.lstrip('%')}.state"):  # fmt: skip
            (folder / name).write_text(state)  # as the Write tool would: 0644, fresh
    hook(tmux, b, "needs-you", tmp_path)
    assert settle(out, 1) == [[b, "needs-you"]]


@pytest.mark.slow  # over a second
def test_what_the_notify_command_leaves_in_the_background_ends_by_the_timeout(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    starter = (
        "import subprocess, sys; open(sys.argv[1], 'w').write(str(subprocess.Popen(['sleep', '600']).pid))"
    )
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    assert (
        alerts.run_command(
            [sys.executable, "-c", starter, str(pid_file)], 1.0, clock=lambda: now[0], sleep=sleep
        )
        == 0
    )
    background = psutil.Process(int(pid_file.read_text()))
    try:
        assert 1.0 <= now[0] < 1.2, f"the background had {now[0]:.1f}s, not the 1 s of the timeout"
        wait_until(lambda: not background.is_running() or background.status() == psutil.STATUS_ZOMBIE or None, 5,
                   "the background process to be killed with the command's group")  # fmt: skip
    finally:
        if background.is_running():
            background.kill()

    quick = "import subprocess, sys; subprocess.Popen(['sleep', '0.2'])"
    began = time.monotonic()
    assert alerts.run_command([sys.executable, "-c", quick], 600.0) == 0
    assert time.monotonic() - began < 60, "an empty group ends the wait before the timeout"


def test_the_bell_is_written_only_to_a_terminal_itself(tmp_path: Path) -> None:
    """Only a character device of ours, opened without following a link: never a file an agent planted."""
    master, slave = os.openpty()
    try:
        tty = os.ttyname(slave)
        (tmp_path / "link").symlink_to(tty)
        (tmp_path / "file").write_bytes(b"")
        assert not alerts.ring_bell(str(tmp_path / "link")) and not alerts.ring_bell(str(tmp_path / "file"))
        assert (tmp_path / "file").read_bytes() == b"" and not alerts.ring_bell(str(tmp_path / "none"))
        assert alerts.ring_bell(tty) and os.read(master, 16) == b"\a"
    finally:
        os.close(master)
        os.close(slave)


def test_a_session_name_never_reads_as_an_option_to_the_notify_command(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    root.mkdir()
    (root / "--urgency=critical").mkdir()
    (root / "--urgency=critical" / ".state.json").write_text(
        json.dumps({"fleetPaneId": "duo:agents:A", "lifecycle": "active", "skill": "x"})
    )
    assert alerts.session_of("duo", "agents", "A", {"CLAUDE_SESSIONS_DIR": str(root)}) == ""
