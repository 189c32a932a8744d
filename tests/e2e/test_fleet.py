"""End to end with a fleet: `fleet stop` + `fleet start` resume each pane's conversation (S3),
whether or not its agent activated a session, without the layout's prompt again, except
where it had overflowed (S9) — with the real Claude Code CLI in a real tmux fleet.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import tempfile
import typing as t
import uuid
from pathlib import Path

import psutil
import pytest
from support.waiting import wait_until

from .cli import MODEL, takes_keys
from .mock_api import MockAPI, Turn
from .test_headless import install_hooks, state

BIN = Path(sys.executable).parent
SESSION = "sessions/2026_11_22_FLEET"
PROMPT_READY = "❯"
LAYOUT_PROMPT = "remember the word MANGO"


class Fleet:
    """A one-pane fleet on a private socket (``fleet-pytest-*``) in its own socket directory."""

    def __init__(self, world: t.Any, env: dict[str, str], settings: Path, prompt: str = "") -> None:
        self.socket = f"fleet-pytest-{uuid.uuid4().hex[:8]}"
        self.tmpdir = Path(tempfile.mkdtemp(prefix="e2ef-", dir="/tmp"))
        self.env = dict(
            env, TMUX_TMPDIR=str(self.tmpdir), FLEET_START_WAIT="120"
        )  # start returns once it is up
        self.project = world.project
        self.layout = world.project / "fleet.yml"
        command = f"claude-run -- --dangerously-skip-permissions --model {MODEL} --settings {settings}"
        if prompt:
            command += f" {shlex.quote(prompt)}"
        self.layout.write_text(
            f"name: e2efleet\nroot: {world.project}\nsocket_name: {self.socket}\n"
            f"windows:\n  - agents:\n      panes:\n        - A: {command}\n"
        )

    def fleet(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(BIN / "fleet"), *args, str(self.layout)], env=self.env, cwd=self.project,
                              capture_output=True, text=True, timeout=300)  # fmt: skip

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], env=self.env, capture_output=True, text=True,
                              timeout=15).stdout  # fmt: skip

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "e2efleet:agents")

    def ready(self) -> None:
        wait_until(
            lambda: PROMPT_READY in self.screen(), timeout=60, what=f"Claude's prompt:\n{self.screen()}"
        )

    def type(self, text: str) -> None:
        """Type *text* once Claude reads keys (after a crash, claude-run leaves the terminal cooked
        until the next Claude takes it), and Enter once its prompt shows the text."""
        tty = self.tmux("display-message", "-p", "-t", "e2efleet:agents", "#{pane_tty}").strip()
        for attempt in range(3):  # a TUI still drawing its start (2.1.332's notices) may drop the keys
            wait_until(lambda: takes_keys(tty), timeout=60, what="Claude to read keys (raw mode)")
            self.tmux("send-keys", "-t", "e2efleet:agents", "-l", text)
            try:
                wait_until(lambda: text[:20] in self.screen(), timeout=10, what="the typed prompt")
                break
            except AssertionError:
                if attempt == 2:
                    raise
                self.tmux("send-keys", "-t", "e2efleet:agents", "C-u")
        self.tmux("send-keys", "-t", "e2efleet:agents", "Enter")

    def supervisor_pid(self) -> int:
        return int(self.tmux("display-message", "-p", "-t", "e2efleet:agents", "#{pane_pid}").strip())

    def close(self) -> None:
        self.tmux("kill-server")
        shutil.rmtree(self.tmpdir, ignore_errors=True)


@pytest.fixture
def fleet(world, env_for) -> t.Iterator[Fleet]:
    env = env_for()
    running = Fleet(world, env, install_hooks(world, env))
    yield running
    running.close()


@pytest.fixture
def fleet_with_prompt(world, env_for) -> t.Iterator[Fleet]:
    env = env_for()
    running = Fleet(world, env, install_hooks(world, env), prompt=LAYOUT_PROMPT)
    yield running
    running.close()


def start_and_converse(fleet: Fleet, api: MockAPI, world: t.Any) -> tuple[str, int]:
    api.script(Turn.bash(f"session activate {SESSION} implement"), Turn.say("noted the word"))
    started = fleet.fleet("start", "--no-attach")
    assert started.returncode == 0, started.stdout + started.stderr
    fleet.ready()
    fleet.type("remember the word PINEAPPLE")
    wait_until(lambda: api.pending() == 0, timeout=60, what="the scripted turns")
    first = wait_until(lambda: state(world, SESSION).get("sessionId"), what="a bound sessionId")
    assert state(world, SESSION)["fleetPaneId"] == "e2efleet:agents:A"
    return first, fleet.supervisor_pid()


def stop(fleet: Fleet, supervisor: int) -> None:
    stopped = fleet.fleet("stop")
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert not psutil.pid_exists(supervisor) or psutil.Process(supervisor).status() == psutil.STATUS_ZOMBIE


def restart_and_ask(fleet: Fleet, api: MockAPI, prompt: str) -> dict[str, t.Any]:
    """`fleet start` again, type *prompt*; the first agent request the mock then received."""
    before = len(api.requests)
    api.script(Turn.say("answered"))
    restarted = fleet.fleet("start", "--no-attach")
    assert restarted.returncode == 0, restarted.stdout + restarted.stderr
    fleet.ready()
    fleet.type(prompt)
    try:
        wait_until(lambda: api.pending() == 0, timeout=60, what="the reply after the restart")
    except AssertionError as failed:
        raise AssertionError(f"{failed}; the pane:\n{fleet.screen()}") from None
    return next(r for r in api.requests[before:] if r["body"].get("tools"))


def test_s3_fleet_restart_resumes_the_conversation(fleet: Fleet, mock_api: MockAPI, world) -> None:
    first_id, supervisor = start_and_converse(fleet, mock_api, world)
    stop(fleet, supervisor)
    request = restart_and_ask(fleet, mock_api, "what was the word?")
    assert request["headers"].get("X-Claude-Code-Session-Id") == first_id, "the same conversation was resumed"
    assert "remember the word PINEAPPLE" in MockAPI.all_text(request["body"]), (
        "the earlier turns were sent again"
    )
    argv = claude_argv(fleet)
    assert "--resume" in argv and first_id in argv


def test_s9_overflowed_pane_starts_fresh(fleet: Fleet, mock_api: MockAPI, world) -> None:
    overflow = Turn.bash("echo TOO_MUCH", input_tokens=2000, cache_read=158000)
    first_id, supervisor = start_and_converse(fleet, mock_api, world)
    # (S4 asserts that the very first call past the threshold is denied; here the
    # point is the restart, so a second call makes sure the session is overflowed.)
    mock_api.script(overflow, Turn.bash("echo STILL_TOO_MUCH", input_tokens=2000, cache_read=159000),
                    Turn.say("stopping here"))  # fmt: skip
    fleet.type("keep going")
    wait_until(lambda: state(world, SESSION).get("overflowed") is True, timeout=60, what="overflowed=true")
    wait_until(lambda: mock_api.pending() == 0, timeout=60, what="the turn to run to its end")
    stop(fleet, supervisor)
    assert json.loads((world.project / SESSION / ".state.json").read_text())["overflowed"] is True
    request = restart_and_ask(fleet, mock_api, "hello again")
    assert request["headers"].get("X-Claude-Code-Session-Id") != first_id, "a new conversation"
    assert "PINEAPPLE" not in MockAPI.all_text(request["body"]), "no earlier conversation was sent"


def claude_argv(fleet: Fleet) -> list[str]:
    """The argv of the Claude process the pane's supervisor runs (its watchdog shares claude-run's)."""
    binary = fleet.env["CLAUDE_BIN"]
    claude = [
        p.cmdline() for p in psutil.Process(fleet.supervisor_pid()).children() if p.cmdline()[:1] == [binary]
    ]
    assert len(claude) == 1, f"one Claude process under the supervisor, found {claude}"
    return claude[0]


def test_pane_without_a_session_resumes_its_own_conversation_without_its_prompt_again(
    fleet_with_prompt: Fleet, mock_api: MockAPI, world
) -> None:
    fleet = fleet_with_prompt
    mock_api.script(Turn.say("noted the word"))
    started = fleet.fleet("start", "--no-attach")
    assert started.returncode == 0, started.stdout + started.stderr
    wait_until(lambda: mock_api.pending() == 0, timeout=60, what="the reply to the layout's prompt")
    first = next(r for r in mock_api.requests if r["body"].get("tools"))
    first_id = first["headers"].get("X-Claude-Code-Session-Id")
    assert first_id and LAYOUT_PROMPT in MockAPI.all_text(first["body"])
    assert not [p for p in world.sessions.iterdir() if not p.name.startswith(".")], "no session was activated"
    records = world.sessions / ".shepherd" / "panes"
    wait_until(
        lambda: any(first_id in f.read_text() for f in records.glob("*.json")), what="the pane's record"
    )
    fleet.ready()
    stop(fleet, fleet.supervisor_pid())

    request = restart_and_ask(fleet, mock_api, "what was the word?")
    assert request["headers"].get("X-Claude-Code-Session-Id") == first_id, "the pane's own conversation"
    text = MockAPI.all_text(request["body"])
    assert text.count(LAYOUT_PROMPT) == 1, "the earlier turns were sent again, the layout's prompt only once"
    argv = claude_argv(fleet)
    assert argv[argv.index("--resume") + 1] == first_id
    assert LAYOUT_PROMPT not in argv, "a resumed conversation gets no initial prompt"


def test_a_killed_claude_that_never_activated_a_session_resumes_its_own_conversation(
    fleet_with_prompt: Fleet, mock_api: MockAPI, world
) -> None:
    """A crash (Claude SIGKILLed, its claude-run alive) resumes like a start: the pane's recorded
    conversation, history and all, though its agent never activated a session."""
    fleet = fleet_with_prompt
    mock_api.script(Turn.say("noted the word"))
    started = fleet.fleet("start", "--no-attach")
    assert started.returncode == 0, started.stdout + started.stderr
    wait_until(lambda: mock_api.pending() == 0, timeout=60, what="the reply to the layout's prompt")
    first_id = next(r for r in mock_api.requests if r["body"].get("tools"))["headers"].get(
        "X-Claude-Code-Session-Id"
    )
    records = world.sessions / ".shepherd" / "panes"
    wait_until(
        lambda: any(first_id in f.read_text() for f in records.glob("*.json")), what="the pane's record"
    )
    fleet.ready()
    supervisor = fleet.supervisor_pid()
    crashed = psutil.Process(supervisor)

    def claudes() -> list[psutil.Process]:
        found = []
        for child in crashed.children():
            try:
                if child.cmdline()[:1] == [fleet.env["CLAUDE_BIN"]]:
                    found.append(child)
            except psutil.Error:  # the killed one, a zombie until claude-run reaps it
                continue
        return found

    (claude,) = claudes()
    # What is resumed is what Claude wrote: 2.1.332 writes the reply to its transcript up to ~0.3 s after
    # drawing it, and one killed before that has nothing of it to resume (claude-run then starts afresh).
    transcripts = world.home / ".claude" / "projects"
    wait_until(
        lambda: any("noted the word" in f.read_text() for f in transcripts.rglob(f"{first_id}.jsonl")),
        30,
        "Claude to write the reply to its transcript",
    )
    claude.kill()

    before = len(mock_api.requests)
    mock_api.script(Turn.say("answered"))
    again = wait_until(
        lambda: [p for p in claudes() if p.pid != claude.pid],
        timeout=60,
        what="claude-run's next Claude",
    )
    assert fleet.supervisor_pid() == supervisor, "the same claude-run relaunched it"
    argv = again[0].cmdline()
    assert argv[argv.index("--resume") + 1] == first_id, argv
    fleet.ready()
    fleet.type("what was the word?")
    wait_until(lambda: mock_api.pending() == 0, timeout=60, what="the reply after the crash")
    request = next(r for r in mock_api.requests[before:] if r["body"].get("tools"))
    assert request["headers"].get("X-Claude-Code-Session-Id") == first_id, "the pane's own conversation"
    assert MockAPI.all_text(request["body"]).count(LAYOUT_PROMPT) == 1, "its history sent again, once"
    logs = subprocess.run([str(BIN / "fleet"), "logs", str(fleet.layout), "--pane", "A"], env=fleet.env,
                          cwd=fleet.project, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert "Starting fresh" not in logs.stdout and "Resuming conversation" in logs.stdout, logs.stdout


def test_drain_waits_for_the_real_claudes_turn_and_start_all_resumes_its_conversation(
    fleet: Fleet, mock_api: MockAPI, world
) -> None:
    """A planned reboot with the real CLI: ``fleet drain`` lets a turn in the middle of a tool call run to
    its end (the tool's work done, the reply after it sent), stops the fleet, and ``fleet start --all``
    brings the agent back in the same conversation."""
    mock_api.script(
        Turn.bash(f"session activate {SESSION} implement"),
        Turn.bash("sleep 6; echo DONE >> done.txt"),
        Turn.say("finished the work"),
    )
    started = fleet.fleet("start", "--no-attach")
    assert started.returncode == 0, started.stdout + started.stderr
    fleet.ready()
    fleet.type("do the work")
    wait_until(lambda: len(mock_api.main_requests()) >= 2 or None, 60, "the turn under way")
    first_id = next(r for r in mock_api.requests if r["body"].get("tools"))["headers"].get(
        "X-Claude-Code-Session-Id"
    )
    assert not (world.project / "done.txt").exists(), "the drain starts mid-turn"
    drained = fleet.fleet("drain", "--deadline", "90")
    said = drained.stdout + drained.stderr
    assert drained.returncode == 0, said
    assert (world.project / "done.txt").read_text() == "DONE\n", "the tool's work was let finish"
    assert mock_api.pending() == 0, f"the reply after it was sent: {said}"
    assert "agents:A  at a safe point" in said, said
    assert "Kept to come back: e2efleet" in said, said

    mock_api.script(Turn.say("back again"))
    back = subprocess.run([str(BIN / "fleet"), "start", "--all"], env=fleet.env, cwd=fleet.project,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert back.returncode == 0, back.stdout + back.stderr
    fleet.ready()
    fleet.type("what did you do?")
    wait_until(lambda: mock_api.pending() == 0 or None, 60, "the reply after the reboot")
    request = [r for r in mock_api.requests if r["body"].get("tools")][-1]
    assert request["headers"].get("X-Claude-Code-Session-Id") == first_id, "its own conversation"
    assert "do the work" in MockAPI.all_text(request["body"]), "its history came back with it"


def test_drain_with_dehydrate_has_the_real_claude_save_its_handover_and_come_back_from_it(
    fleet: Fleet, mock_api: MockAPI, world
) -> None:
    """``fleet drain --dehydrate`` types the handover prompt into the idle agent's pane; the real Claude
    runs ``session dehydrate --no-restart`` (its handover written to the session; no fresh Claude in the
    middle of the drain), the drain waits for that turn and stops the fleet, and ``fleet start --all``
    brings the agent back in the same conversation, the handover in it."""
    mock_api.script(Turn.bash(f"session activate {SESSION} implement"), Turn.say("ready"))
    started = fleet.fleet("start", "--no-attach")
    assert started.returncode == 0, started.stdout + started.stderr
    fleet.ready()
    fleet.type("get ready")
    wait_until(lambda: mock_api.pending() == 0 or None, 60, "the first turn")
    first_id = next(r for r in mock_api.requests if r["body"].get("tools"))["headers"].get(
        "X-Claude-Code-Session-Id"
    )
    handover = f"session dehydrate --no-restart {SESSION} <<'EOF'\nHANDOVER-MARK: step 3 of 5 is next\nEOF"
    mock_api.script(
        Turn.bash(handover, when=lambda body: "planned reboot" in MockAPI.all_text(body)),
        Turn.say("saved", times=-1),
    )
    drained = fleet.fleet("drain", "--dehydrate", "--deadline", "120")
    said = drained.stdout + drained.stderr
    assert drained.returncode == 0, said
    assert "agents:A  saved its handover" in said, said
    asked = next(r for r in mock_api.requests if "planned reboot" in MockAPI.all_text(r["body"]))
    assert "session dehydrate --no-restart" in MockAPI.all_text(asked["body"]), "it was asked for no restart"
    saved = (world.project / SESSION / "DEHYDRATED_CONTEXT.md").read_text()
    assert "HANDOVER-MARK: step 3 of 5 is next" in saved, saved
    assert not any("/session continue --session" in MockAPI.all_text(r["body"]) for r in mock_api.requests), (
        "no fresh Claude was started in the middle of the drain"
    )

    back = subprocess.run([str(BIN / "fleet"), "start", "--all"], env=fleet.env, cwd=fleet.project,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert back.returncode == 0, back.stdout + back.stderr
    fleet.ready()
    fleet.type("where were we?")
    wait_until(lambda: "where were we" in MockAPI.all_text(mock_api.requests[-1]["body"]) or None, 60,
               "the prompt after the reboot")  # fmt: skip
    request = mock_api.requests[-1]
    assert request["headers"].get("X-Claude-Code-Session-Id") == first_id, "its own conversation"
    assert "HANDOVER-MARK" in MockAPI.all_text(request["body"]), "the handover is in it"
