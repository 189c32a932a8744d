"""`fleet drain` before a planned reboot: each agent's turn ends (or the deadline passes, and the line says
so), the fleet stops, and the next `fleet start --all` brings it back, each agent in its own conversation."""

from __future__ import annotations

import subprocess
import time

from support.fleet import BIN, FleetWorld, agent, resume_of

STATE = 'tmux set-option -p -t "$TMUX_PANE" @pane_notify {}'
"""What the hooks do at a turn's start and end: the pane's state, which `fleet status` shows."""


def test_drain_waits_for_a_turn_to_end_stops_one_past_the_deadline_and_start_all_resumes_both(
    world: FleetWorld,
) -> None:
    world.layout("duo", "  - agents:\n      panes:\n        - A: claude-run\n        - B: claude-run\n")
    ends = world.dir / "A-turn-may-end"
    turn = [{"run": ["sh", "-c", STATE.format("working")]}, {"mark": "working"},
            {"wait_file": str(ends), "timeout": 60}, {"run": ["sh", "-c", STATE.format("done")]}]  # fmt: skip
    world.plan("A", agent(*turn, label="A"))
    world.plan("B", agent({"run": ["sh", "-c", STATE.format("working")]}, {"mark": "working"}, label="B"))
    assert world.fleet("start", "duo", "--no-attach").returncode == 0
    world.wait_event("A", "mark", name="working")
    world.wait_event("B", "mark", name="working")

    drain = subprocess.Popen(
        [str(BIN / "fleet"), "drain", "duo", "--deadline", "4", "--grace", "2", "--socket", world.socket],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=world.project, env=world.env,
    )  # fmt: skip
    time.sleep(1.5)
    assert drain.poll() is None, "A is still in its turn: the drain waits"
    assert len(world.starts("A")) == 1 and not world.events("A", "signal"), (
        "nothing stopped before the turn ends"
    )
    ends.touch()
    said, errors = drain.communicate(timeout=60)
    assert drain.returncode == 0, said + errors
    assert "agents:A  at a safe point (done)" in said, said
    assert "agents:B  NOT at a safe point by the deadline (still working): stopped anyway" in said, said
    assert "Kept to come back: duo" in said
    assert not world.server_alive()

    back = world.fleet("start", "--all", socket=False)
    assert back.returncode == 0, back.stdout + back.stderr
    assert "duo (socket" in back.stdout and "2 started again" in back.stdout, back.stdout
    for label in "AB":
        _, again = world.wait_starts(label, 2)
        assert resume_of(again) == f"conv-{label}"
