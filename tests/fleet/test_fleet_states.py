"""What a pane says happened: an agent's death alerts (tmux's pane-died hook), a stop says stopped,
restarts count every relaunch in the pane, and the cost goes on across the pane's Claudes.

Real ``fleet`` verbs on a private tmux server, the real ``claude-run`` in each pane with the
stand-in Claude; the notify command is a recorder that appends its argv, as JSON, to a file.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
import typing as t
from pathlib import Path

from support.alerts import recorder, settle
from support.fleet import FleetWorld
from support.tmux_panes import Tmux
from support.waiting import wait_until

from claude_shepherd.fleet.style import PANE_DIED_HOOK, pane_died_hook
from claude_shepherd.hooks import pane_died
from claude_shepherd.supervisor.claude_run.fleet_pane import restart_count
from claude_shepherd.supervisor.tmux_names import REAP_NUDGE

WAIT = [{"mark": "ready"}, {"wait": None}]


def two_windows(world: FleetWorld, extra: str = "") -> None:
    """Agent A in window ``agents``, agent B in window ``other``; the notify command records."""
    world.layout("duo", "  - agents:\n      panes:\n        - A: claude-run\n"
                        "  - other:\n      panes:\n        - B: claude-run\n", extra=extra)  # fmt: skip


def start(world: FleetWorld, *labels: str, starts: int = 1) -> None:
    started = world.fleet("start", "duo", "--no-attach")
    assert started.returncode == 0, started.stdout + started.stderr
    for label in labels:
        wait_until(
            lambda label=label: len(world.events(label, "mark")) >= starts or None, 15, f"{label} ready"
        )


def status(world: FleetWorld) -> dict[str, dict[str, t.Any]]:
    done = world.fleet("status", "--json")
    return {row["label"]: row for row in json.loads(done.stdout)}


def option(world: FleetWorld, label: str, name: str) -> str:
    return world.tmux("display-message", "-p", "-t", world.panes()[label]["pane_id"], f"#{{{name}}}")


def kill_agent(world: FleetWorld, label: str) -> None:
    """``kill -9`` the pane's claude-run (the pane's own process), and wait for tmux to see it."""
    os.kill(int(world.panes()[label]["pane_pid"]), signal.SIGKILL)
    wait_until(lambda: world.panes()[label]["pane_dead"] == "1" or None, 10, f"pane {label} dead")


class Client:
    """A person's terminal attached to the fleet: ``tmux attach`` on a pty, everything it shows kept."""

    def __init__(self, world: FleetWorld) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: becomes the client
            os.execve("/bin/sh", ["sh", "-c", f"stty cols 120 rows 40; exec tmux -L {world.socket} attach -t duo"],
                      {**world.env, "TERM": "xterm-256color"})  # fmt: skip
        self.shown = b""
        wait_until(lambda: world.tmux("list-clients", check=False) or self.read(), 10, "the client attached")

    def read(self) -> None:
        while select.select([self.fd], [], [], 0)[0]:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.shown += chunk

    def bells(self) -> int:
        """BEL characters that ring (not the ones ending an OSC sequence)."""
        self.read()
        return re.sub(rb"\x1b\][^\x07\x1b]*(\x07|\x1b\\)", b"", self.shown).count(b"\x07")

    def close(self) -> None:
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        os.close(self.fd)


def test_an_agent_killed_with_sigkill_alerts_once_rings_the_bell_and_shows_exited(world: FleetWorld) -> None:
    argv, out = recorder(world.base)
    two_windows(world, extra=f"notify: {json.dumps([*argv, '{fleet}', '{label}', '{state}'])}\n")
    world.plan("A", WAIT, default=WAIT)
    world.plan("B", WAIT)
    start(world, "A", "B")
    client = Client(world)
    try:
        time.sleep(0.5)  # the client's first screen, whatever it holds
        before = client.bells()
        kill_agent(world, "A")
        assert settle(out, 1) == [["duo", "A", "exited"]]
        wait_until(lambda: client.bells() > before or None, 10, "the bell on the person's terminal")
        wait_until(lambda: client.read() or b"fleet: A exited" in client.shown or None, 10, "the message")
    finally:
        client.close()
    assert option(world, "A", "@pane_notify") == "exited"
    assert status(world)["A"]["state"].startswith("exited")
    border = world.tmux(
        "display-message", "-p", "-t", world.panes()["A"]["pane_id"], "#{E:pane-border-format}"
    )
    assert "● exited" in border

    # Brought back and killed again within the cooldown: one page per pane and state, not one per death.
    start(world, "A", starts=2)
    assert option(world, "A", "@pane_notify") == ""
    kill_agent(world, "A")
    kill_agent(world, "B")
    assert settle(out, 2) == [["duo", "A", "exited"], ["duo", "B", "exited"]]


def test_fleet_stop_of_one_pane_says_stopped_and_pages_nobody(world: FleetWorld) -> None:
    argv, out = recorder(world.base)
    two_windows(world, extra=f"notify: {json.dumps([*argv, '{label}', '{state}'])}\n")
    world.plan("A", WAIT)
    world.plan("B", WAIT)
    start(world, "A", "B")

    stopped = world.fleet("stop", "duo", "--pane", "A", "--grace", "5")
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert status(world)["A"]["state"] == "stopped"
    assert option(world, "A", "@pane_notify") == "stopped"
    border = world.tmux(
        "display-message", "-p", "-t", world.panes()["A"]["pane_id"], "#{E:pane-border-format}"
    )
    assert "● stopped" in border and "exited" not in border
    table = world.fleet("status")
    assert "stopped" in table.stdout and "exited" not in table.stdout

    kill_agent(world, "B")  # its alert comes after A's pane-died hook ran: A's stop paged nobody
    assert settle(out, 1) == [["B", "exited"]]
    assert status(world)["A"]["state"] == "stopped"


def test_restarts_count_every_relaunch_in_the_pane_and_garbage_is_no_count(world: FleetWorld) -> None:
    world.layout("duo", "  - agents:\n      panes:\n        - A: claude-run\n")
    world.plan("A", [{"exit": 3}], default=WAIT)  # a crash first: claude-run relaunches Claude
    start(world, "A")
    assert status(world)["A"]["restarts"] == 1

    restarted = world.fleet("restart", "duo", "--pane", "A", "--grace", "5")
    assert restarted.returncode == 0, restarted.stdout + restarted.stderr
    wait_until(lambda: len(world.events("A", "mark")) >= 2 or None, 15, "A ready again")
    assert status(world)["A"]["restarts"] == 2, "a requested restart is a relaunch"

    kill_agent(world, "A")
    start(world, "A", starts=3)  # brings the dead agent back
    assert status(world)["A"]["restarts"] == 3

    pane = world.panes()["A"]["pane_id"]
    world.tmux(
        "set-option", "-p", "-t", pane, "@pane_restarts", "²"
    )  # an agent can set its own pane's options
    assert status(world)["A"]["restarts"] is None
    kill_agent(world, "A")
    start(world, "A", starts=4)
    assert status(world)["A"]["restarts"] == 1, "garbage counts as 0, and the respawn is one more"


def test_restart_count_takes_only_a_bounded_run_of_ascii_digits() -> None:
    assert [restart_count(raw) for raw in ("0", "12", " 7\n", "999999999")] == [0, 12, 7, 999999999]
    for garbage in ("", "²", "-5", "+3", "1.5", "٣", str(10**100), "0x10", "1e3"):
        assert restart_count(garbage) is None, garbage


def test_cost_goes_on_across_the_panes_claudes_and_a_resumed_conversation_counts_once(
    world: FleetWorld,
) -> None:
    """Claude's figure is the conversation's: a relaunched Claude resuming it starts from its total
    (as the real CLI's status line does), and only the growth is spent."""
    world.layout("duo", "  - agents:\n      panes:\n        - A: claude-run\n")

    def status_line(cost: float, claude_pid: int, conversation: str = "conv-1") -> dict[str, t.Any]:
        line = {
            "session_id": conversation,
            "cwd": str(world.project),
            "cost": {"total_cost_usd": cost},
        }
        return {
            "run": ["claude-hook", "status-line"],
            "stdin": json.dumps(line),
            "env": {"CLAUDE_PID": claude_pid},
        }

    activate = "CLAUDE_CODE_SESSION_ID=conv-1 session activate sessions/S_A implement"
    world.plan(
        "A",
        [{"run": ["sh", "-c", activate]}, status_line(0.5, 1), status_line(1.0, 1), {"exit": 3}],  # a crash
        [status_line(1.0, 2), status_line(1.25, 2), *WAIT],  # the relaunch resumes conv-1 from its $1.00
        [status_line(1.25, 3), status_line(0.1, 3, "conv-2"), *WAIT],  # after fleet restart: a new one too
    )
    start(world, "A")
    ran = world.events("A", "run")
    assert ran[-1]["rc"] == 0 and "$1.25" in ran[-1]["stdout"], ran[-1]
    row = status(world)["A"]
    assert (row["cost_usd"], row["spend_source"]) == (1.25, "measured")

    restarted = world.fleet("restart", "duo", "--pane", "A", "--grace", "5")
    assert restarted.returncode == 0, restarted.stdout + restarted.stderr
    wait_until(lambda: len(world.events("A", "mark")) >= 2 or None, 15, "A ready again")
    assert status(world)["A"]["cost_usd"] == 1.35


# --------------------------------------------------------------------------- the hook itself


def test_the_hook_command_passes_only_tmux_values_whatever_the_installation_path(
    tmux: Tmux, tmp_path: Path
) -> None:
    hostile = tmp_path / 'it\'s "a" $HOME #{pane_id} ##; \\x~ `id`'
    (hostile / "hooks").mkdir(parents=True)
    argv_file = tmp_path / "argv.json"
    python = hostile / "py"
    python.write_text(
        f"#!{sys.executable}\nimport json, sys\nopen({str(argv_file)!r}, 'w').write(json.dumps(sys.argv))\n"
    )
    python.chmod(0o755)
    tmux("set-option", "-g", "remain-on-exit", "on")
    tmux("set-option", "-g", PANE_DIED_HOOK, pane_died_hook(str(python), hostile))
    tmux("set-option", "-g", "@pane_label", "$(touch pwned) #{pane_id}")  # every new pane's label
    pane = tmux("split-window", "-t", "s:w", "-P", "-F", "#{pane_id}", "exit 3")

    def hook_ran() -> bool:
        if argv_file.exists() and argv_file.stat().st_size:
            return True
        tmux(*REAP_NUDGE)  # tmux may have missed the pane's exit, as the fleet's own verbs allow for
        return False

    wait_until(hook_ran, 10, "the pane-died hook")
    pid = tmux.option(pane, "pane_pid")
    assert json.loads(argv_file.read_text()) == [
        str(python), "-I", "-S", str(hostile / "hooks" / "__main__.py"), "pane-died", pane, pid, "3",
    ]  # fmt: skip
    assert not (tmp_path / "pwned").exists() and not Path("pwned").exists()


def test_the_handler_marks_only_the_dead_process_pane_and_refuses_what_tmux_would_not_pass(
    tmux: Tmux,
) -> None:
    tmux("set-option", "-g", "remain-on-exit", "on")
    live = tmux.ids[0]
    env = {**os.environ, **tmux.pane_env(live)}
    assert pane_died.record(tmux.path, live, tmux.option(live, "pane_pid"), env) is None, (
        "a live pane is not dead"
    )
    a, b = (tmux("split-window", "-t", "s:w", "-P", "-F", "#{pane_id}", "exit 0") for _ in range(2))
    wait_until(
        lambda: tmux.option(a, "pane_dead") == tmux.option(b, "pane_dead") == "1" or None, 10, "dead panes"
    )
    pid_a, pid_b = tmux.option(a, "pane_pid"), tmux.option(b, "pane_pid")
    tmux("set-option", "-p", "-t", b, "@pane_stopping", pid_b)
    assert pane_died.record(tmux.path, a, "1", env) is None, "another process's death"
    assert tmux.option(a, "@pane_notify") == ""
    assert pane_died.record(tmux.path, a, pid_a, env) == "exited"
    assert pane_died.record(tmux.path, b, pid_b, env) == "stopped"
    assert (tmux.option(a, "@pane_notify"), tmux.option(b, "@pane_notify"), tmux.option(a, "@window_notify")) == (
        "exited", "stopped", "exited",
    )  # fmt: skip
    for bad in (["a", pid_a], [a, "x1"], [a], [f"{a};kill-server", pid_a], [a, pid_a, "0", "more"]):
        done = subprocess.run([sys.executable, "-m", "claude_shepherd.hooks", "pane-died", *bad], env=env,
                              check=False, capture_output=True, text=True, timeout=30)  # fmt: skip
        assert done.returncode == 2 and done.stderr.startswith("usage: claude-hook pane-died"), (
            bad,
            done.stderr,
        )


def test_an_overflowed_agent_stays_error_until_it_dehydrates(tmux: Tmux, project: Path) -> None:
    """The deny marks the pane error; the turn's end, an idle notice or the next prompt must not turn it
    back to done or working — dehydrating does."""
    from support.hooks import activate, call, hook_env, tool

    a = tmux.ids[0]
    env = hook_env(project, **tmux.pane_env(a))
    activate(project, contextUsage=0.9)
    conversation = tool(project, "Grep")["session_id"]
    answer = call("pre-tool-use", tool(project, "Grep", pattern="x"), env)
    assert answer.denied and "Context overflow" in answer.reason
    assert tmux.option(a, "@pane_notify") == "error"

    def reaches_tmux(event: str, payload: dict[str, t.Any]) -> str:
        """Run the hook past the throttle (its stamps made old), so its state reaches tmux."""
        for stamp in (Path(os.environ["XDG_RUNTIME_DIR"]) / "claude-shepherd" / "pane-notify").glob(
            "*.state"
        ):
            os.utime(stamp, (time.time() - 100, time.time() - 100))
        call(event, {"session_id": conversation, "cwd": str(project), **payload}, env)
        return tmux.option(a, "@pane_notify")

    assert reaches_tmux("stop", {"hook_event_name": "Stop"}) == "error"
    assert reaches_tmux("notification", {"notification_type": "idle_prompt"}) == "error"
    assert reaches_tmux("user-prompt-submit", {"prompt": "go on"}) == "error"
    assert reaches_tmux("notification", {"notification_type": "permission_prompt"}) == "needs-you"

    dehydrate = tool(project, "Skill", skill="session", args="dehydrate")
    assert not call("pre-tool-use", dehydrate, env).denied
    assert tmux.option(a, "@pane_notify") == "working"
    assert reaches_tmux("stop", {"hook_event_name": "Stop"}) == "done"
