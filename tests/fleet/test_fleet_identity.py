"""An identity two panes carry is nobody's: an agent that takes another's label gains nothing under it.

An agent can set its own pane's ``@pane_label``. If it takes another pane's
label, neither pane may bind a session, record a conversation or be resumed
under that identity until the person relabels one, and ``fleet doctor --fix``
renames neither pane on a guess.
"""

from __future__ import annotations

import json

from support.fleet import FleetWorld

RELABEL = 'tmux set-option -p -t "$TMUX_PANE" @pane_label A'
ACTIVATE = "CLAUDE_CODE_SESSION_ID=conv-B session activate sessions/S_B implement"


def test_a_label_taken_from_another_pane_is_nobodys_identity(world: FleetWorld) -> None:
    world.layout("duo", "  - agents:\n      panes:\n        - A: claude-run\n        - B: claude-run\n")
    go = world.base / "go"
    again = world.base / "again"
    world.plan("A", [{"wait_file": str(go), "timeout": 60}, {"run": ["fleet", "pane-id"]}, {"mark": "asked"},
                     {"wait_file": str(again), "timeout": 60}, {"run": ["fleet", "pane-id"]}, {"mark": "asked again"},
                     {"wait": None}])  # fmt: skip
    world.plan("B", [{"run": ["sh", "-c", RELABEL]}, {"run": ["fleet", "pane-id"]},
                     {"run": ["sh", "-c", ACTIVATE]}, {"mark": "done"}, {"wait": None}])  # fmt: skip
    assert world.fleet("start", "duo", "--no-attach").returncode == 0
    world.wait_event("B", "mark", name="done")
    relabel, pane_id, activate = world.events("B", "run")
    assert relabel["rc"] == 0
    assert (pane_id["rc"], pane_id["stdout"]) == (1, ""), "the impostor does not get the identity"
    state = json.loads((world.project / "sessions" / "S_B" / ".state.json").read_text())
    assert state.get("fleetPaneId") in (None, ""), state  # nothing bound under the contested label
    assert activate["rc"] == 0  # the session itself is the impostor's own to use
    go.touch()
    world.wait_event("A", "mark", name="asked")
    (mine,) = world.events("A", "run")
    assert mine["rc"] == 1, "while two panes carry it, not even the real pane speaks for it"

    records = world.project / "sessions" / ".shepherd" / "panes"
    assert not any("duo:agents:A" in p.read_text() for p in records.glob("*")) if records.is_dir() else True

    doctor = world.fleet("doctor", "duo", "--fix")
    assert "no session bound to it says which is meant" in doctor.stdout, doctor.stdout
    labels = world.tmux("list-panes", "-t", "duo:agents", "-F", "#{@pane_label}").split()
    assert labels == ["A", "A"], "nothing renamed on a guess"

    # The person relabels the impostor: the real pane has its identity again.
    second = world.tmux("list-panes", "-t", "duo:agents", "-F", "#{pane_id}").split()[1]
    world.tmux("set-option", "-p", "-t", second, "@pane_label", "B")
    again.touch()
    world.wait_event("A", "mark", name="asked again")
    _, answer = world.events("A", "run")
    assert (answer["rc"], answer["stdout"]) == (0, "duo:agents:A\n")
