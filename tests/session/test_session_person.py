"""``session`` run by a person at a shell: writing commands say plainly who they are for; list and show work.

The person's shell is a pane of a tmux server of its own (not a fleet socket):
tmux daemonizes, so nothing of the test — nor whatever runs the test — is
above the shell, exactly as for a person at a terminal.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import typing as t
import uuid
from pathlib import Path

import pytest
from support.claude_run import DEAD_PID, TAG_ENV, reap
from support.fixtures import BIN
from support.waiting import wait_until

from claude_shepherd.supervisor.session.identity import start_token

REFUSAL = (
    "session: error: `session {command}` is for agents running under claude-run (no claude-run, Claude or "
    "fleet pane runs this command); to look at sessions use `session list` or `session show DIR`"
)


class Shell:
    """A person's shell: commands run in a pane of a private, non-fleet tmux server, without our variables."""

    def __init__(self, project: Path, tag: str) -> None:
        self.project = project
        self.tmpdir = Path(tempfile.mkdtemp(prefix="psn-", dir="/tmp"))
        self.socket = f"person-{uuid.uuid4().hex[:12]}"
        self.env = {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(project.parent), "LANG": "C.UTF-8",
                    "TMUX_TMPDIR": str(self.tmpdir), TAG_ENV: tag}  # fmt: skip
        self.runs = 0

    def run(self, line: str) -> tuple[int, str]:
        """Run *line* in the pane (sh, in the project); its status and combined output."""
        self.runs += 1
        out, rc = self.tmpdir / f"{self.runs}.out", self.tmpdir / f"{self.runs}.rc"
        command = f"cd {self.project} && {line} > {out} 2>&1; echo $? > {rc}.tmp && mv {rc}.tmp {rc}"
        if self.runs == 1:  # the server lives on in a window of its own, so no command races its exit
            subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", "new-session", "-d", "-s", "keep",
                            "sleep 600"], env=self.env, check=True, timeout=10)  # fmt: skip
        subprocess.run(["tmux", "-L", self.socket, "new-window", "-d", "-t", "keep", "sh", "-c", command],
                       env=self.env, check=True, timeout=10)  # fmt: skip
        wait_until(rc.is_file, 20, f"`{line}` in the person's shell")
        return int(rc.read_text()), out.read_text()

    def close(self) -> None:
        subprocess.run(
            ["tmux", "-L", self.socket, "kill-server"],
            env=self.env,
            capture_output=True,
            timeout=10,
            check=False,
        )
        shutil.rmtree(self.tmpdir, ignore_errors=True)


@pytest.fixture
def shell(tmp_path: Path) -> t.Iterator[Shell]:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    project = tmp_path / "proj"
    (project / "sessions").mkdir(parents=True)
    tag = uuid.uuid4().hex
    person = Shell(project, tag)
    try:
        yield person
    finally:
        person.close()
        reap(tag)


def test_a_person_is_told_what_session_is_for_and_nothing_is_written(shell: Shell) -> None:
    rc, out = shell.run("session activate sessions/2026_11_24_MINE implement")
    assert (rc, out) == (1, REFUSAL.format(command="activate") + "\n")
    assert not (shell.project / "sessions" / "2026_11_24_MINE").exists()
    rc, out = shell.run("echo note | session log sessions/2026_11_24_MINE")
    assert (rc, out) == (1, REFUSAL.format(command="log") + "\n")
    for claim in (
        "²",
        "9" * 5000,
        "1",
    ):  # what a variable says is no agent: not a digit, too long, not above us
        rc, out = shell.run(
            f"CLAUDE_SUPERVISOR_PID={claim} CLAUDE_PID={claim} session phase sessions/X '2: Build'"
        )
        assert (rc, out) == (1, REFUSAL.format(command="phase") + "\n")


def test_the_commands_the_refusal_names_work_for_a_person(shell: Shell) -> None:
    root = shell.project / "sessions"
    (root / "2026_11_24_AUTH").mkdir()
    state = {"pid": DEAD_PID, "skill": "implement", "lifecycle": "active", "currentPhase": "Phase 2: \x1b[2JBuild",
             "sessionId": "conv-1"}  # fmt: skip
    (root / "2026_11_24_AUTH" / ".state.json").write_text(json.dumps(state))
    (root / "2026_11_24_LIVE").mkdir()
    live = {
        "pid": os.getpid(),
        "pidStart": start_token(os.getpid()),
        "skill": "review",
        "lifecycle": "completed",
    }
    (root / "2026_11_24_LIVE" / ".state.json").write_text(json.dumps(live))
    (root / "BROKEN").mkdir()
    (root / "BROKEN" / ".state.json").write_text("{not json")

    rc, out = shell.run("session list")
    assert rc == 0, out
    lines = [line.split() for line in out.splitlines()]
    assert out.splitlines()[0] == f"Sessions in {root}:"
    assert lines[1] == ["SESSION", "LIFECYCLE", "SKILL", "PHASE", "OWNER"]
    assert lines[2] == [
        "2026_11_24_AUTH",
        "active",
        "implement",
        "Phase",
        "2:",
        "\ufffd[2JBuild",
        str(DEAD_PID),
        "(gone)",
    ]
    assert lines[3][:4] == ["2026_11_24_LIVE", "completed", "review", "—"] and lines[3][-1] == "(running)"
    assert lines[4][:2] == ["BROKEN", "unreadable"]
    assert "\x1b" not in out

    rc, out = shell.run("session show sessions/2026_11_24_AUTH")
    assert rc == 0, out
    assert out.splitlines()[:2] == [f"Session {root / '2026_11_24_AUTH'}", f"  owner: {DEAD_PID} (gone)"]
    assert (
        "  currentPhase: Phase 2: \ufffd[2JBuild" in out.splitlines()
        and "  skill: implement" in out.splitlines()
    )
    assert "\x1b" not in out

    rc, out = shell.run("session show sessions/NOPE")
    assert rc == 1 and out.startswith("session: error: ") and out.count("\n") == 1


def test_an_agent_without_claude_run_is_still_an_agent(shell: Shell) -> None:
    """Claude Code alone gives its Bash tool CLAUDE_PID: that ancestor makes the caller an agent."""
    rc, out = shell.run("CLAUDE_PID=$$ session activate sessions/2026_11_24_SOLO implement")
    assert rc == 0, out
    assert out.startswith(f"Session activated: {shell.project / 'sessions' / '2026_11_24_SOLO'}")
