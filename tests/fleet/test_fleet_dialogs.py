"""A Claude waiting at one of Claude Code's startup dialogs is not running: ``fleet start`` and ``fleet
status`` say what it waits for, from the pane's screen, until its SessionStart hook shows it got past.

Through the real ``fleet``, ``claude-run`` and ``claude-hook``, with the stand-in Claude showing Claude
Code's trust dialog (its words as 2.1.328 shows them) in a folder its config does not trust.
"""

from __future__ import annotations

import json
import re

import pytest
from support.fleet import FleetWorld

from claude_shepherd.fleet import dialogs


def session_start(folder: str) -> dict[str, object]:
    """The stand-in Claude's step that runs our SessionStart hook as Claude Code does, once it starts."""
    data = {"session_id": "conv-1", "cwd": folder, "hook_event_name": "SessionStart", "source": "startup",
            "transcript_path": "/none.jsonl"}  # fmt: skip
    return {"run": ["claude-hook", "session-start"], "stdin": json.dumps(data)}


def test_an_agent_at_the_trust_dialog_is_not_running_and_says_what_it_waits_for(world: FleetWorld) -> None:
    trusted = world.project / "trusted"
    trusted.mkdir()
    world.config.mkdir(exist_ok=True)
    (world.config / ".claude.json").write_text(
        json.dumps({"projects": {str(trusted): {"hasTrustDialogAccepted": True}}})
    )
    windows = (
        "  - new:\n      panes:\n        - A: claude-run\n"
        f"  - known:\n      root: {trusted}\n      panes:\n        - B: claude-run\n"
    )
    world.layout("crew", windows)
    project = str(world.project)
    for label, folder in (("A", project), ("B", str(trusted))):
        world.plan(label, [session_start(folder), {"mark": "up"}, {"wait": None}])
    env = {"FAKE_CLAUDE_TRUST": "check"}

    started = world.fleet("start", "crew", "--no-attach", env=env)
    assert started.returncode == 1, started.stdout + started.stderr
    lines = started.stdout.splitlines()
    assert re.fullmatch(
        rf"  new:A +started, but NOT RUNNING: waiting: trust dialog for {re.escape(project)}", lines[1]
    )
    assert re.fullmatch(r"  known:B +started, running \(claude-run \d+, Claude \d+\)", lines[2]), lines
    assert started.stderr == (
        f"fleet: error: 1 agent(s) wait at a dialog of Claude Code's: new:A (trust dialog for {project}); answer "
        "it in the pane: `fleet attach crew --pane A` (trust only a folder you mean the agents to work in); "
        "`fleet status crew` shows when they run\n"
    )
    assert world.wait_event("A", "dialog")["folder"] == project
    world.wait_event("B", "mark", name="up")

    status = world.fleet("status", "crew", env=env)
    assert status.returncode == 0, status.stderr  # alive, waiting for the person: no agent is dead
    assert (
        f"  waiting at a dialog, not yet running: A (trust dialog for {project}); answer it in the pane: "
        "`fleet attach crew --pane A`"
    ) in status.stdout.splitlines(), status.stdout
    rows = {row["label"]: row for row in json.loads(world.fleet("status", "crew", "--json").stdout)}
    assert (rows["A"]["state"], rows["A"]["waiting"]) == ("dialog", f"trust dialog for {project}")
    assert (rows["B"]["state"], rows["B"]["waiting"]) == ("", None)

    pane = world.panes()["A"]["pane_id"]
    world.tmux("send-keys", "-t", pane, "Down")  # "Yes, I trust this folder"
    world.tmux("send-keys", "-t", pane, "Enter")
    world.wait_event("A", "mark", name="up")
    assert dialogs.TRUST_MARKS[0] in world.capture("A"), "the stand-in leaves the dialog on the screen"
    answered = {row["label"]: row for row in json.loads(world.fleet("status", "crew", "--json").stdout)}
    assert (answered["A"]["state"], answered["A"]["waiting"]) == ("", None), "its SessionStart hook ran"
    assert world.fleet("stop", "crew").returncode == 0


@pytest.mark.parametrize(
    ("screen", "said"),
    [
        (["", " Accessing workspace:", "", " /srv/project", "", " Quick safety check: Is this a project you created"
          " or one you trust?", " ❯ No, exit", "   Yes, I trust this folder", " Enter to confirm · Esc to cancel"],
         "trust dialog for /srv/project"),
        ([" Do you trust the files in this folder?", "", " ~/work/x"], "trust dialog for ~/work/x"),
        (["  Detected a custom API key in your environment", "  ANTHROPIC_API_KEY: sk-ant-...2ee2e",
          "  Do you want to use this API key?", "  Enter to confirm · Esc to cancel"], "API key dialog"),
        (["  WARNING: Claude Code running in Bypass Permissions mode", "  ❯ No, exit", "    Yes, I accept"],
         "Bypass Permissions dialog"),
        ([" Let's get started.", " Choose the text style that looks best with your terminal"],
         "first-run setup (theme)"),
        (["  New MCP server found in this project: x", "  Enter to confirm · Esc to cancel"], "MCP server dialog"),
        (["  Something new", "  Enter to confirm · Esc to cancel"], "a dialog of Claude Code's"),
        (["[claude-run] Starting...", "", "❯ ", "  ⏵⏵ auto mode on (shift+tab to cycle)"], None),
    ],
)  # fmt: skip
def test_each_startup_dialog_is_told_by_its_words_on_the_screen(screen: list[str], said: str | None) -> None:
    """The words are Claude Code 2.1.328's (seen in a scratch HOME that had answered none of them)."""
    assert dialogs.on_screen(screen) == said
