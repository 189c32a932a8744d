"""End to end with Claude Code 2.1.332: its usage-limit text and its start-up refusals, read right.

2.1.332 prints ``You've hit your limit · resets 10:49pm (UTC)`` when a subscription's overage is refused
with no reason given (``anthropic-ratelimit-unified-overage-status: rejected``, no
``overage-disabled-reason``): our parser wanted a word before ``limit``, so such agents showed ``error``.
It refuses to start, exit 1 and one line on standard error, when managed settings set
``disableSideloadFlags`` and the launch names ``--plugin-dir``: claude-run relaunched it until its
crash limit. The tests ask for 2.1.332 (``claude_version``); where it cannot be had they are skipped.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.waiting import wait_until

from supervisor.tmux_names import REAP_NUDGE

from .cli import MODEL, Tmux
from .mock_api import UNIFIED, MockAPI, Turn
from .test_headless import install_hooks

pytestmark = [pytest.mark.slow, pytest.mark.claude_version("2.1.332")]

BIN = Path(sys.executable).parent


def plain_limit(reset_in: int) -> Turn:
    """The 429 of a subscription whose overage is refused with no reason: 2.1.332's plain form."""
    turn = Turn.usage_limit(reset_in=reset_in, times=-1)
    assert turn.error is not None
    del turn.error.headers[f"{UNIFIED}overage-disabled-reason"]
    return turn


def test_the_plain_limit_of_2_1_332_parks_the_agent_and_is_no_crash(
    world, mock_api: MockAPI, env_for, claude_bin: Path
) -> None:
    mock_api.script(plain_limit(3600))
    env = env_for(oauth=True, CLAUDE_RUN_CRASH_LIMIT="1")  # one crash would give up
    shown = subprocess.run([str(claude_bin), "-p", "--dangerously-skip-permissions", "--model", MODEL, "go on"],
                           env=env, cwd=world.project, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert shown.returncode == 1 and shown.stdout.startswith("You've hit your limit · resets "), shown.stdout

    settings = install_hooks(world, env)
    argv = [str(BIN / "claude-run"), "--", "-p", "--dangerously-skip-permissions", "--model", MODEL,
            "--settings", str(settings), "work on"]  # fmt: skip
    run = subprocess.Popen(argv, env=env, cwd=world.project, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True)  # fmt: skip
    try:
        agents = world.sessions / ".shepherd" / "usage" / "agents"

        def parked() -> dict | None:
            for path in agents.glob("*.json") if agents.is_dir() else []:
                record = json.loads(path.read_text())
                if "limited" in record:
                    return record["limited"]
            return None

        mark = wait_until(parked, 120, "the StopFailure hook to park the agent")
        assert mark["source"] == "message" and mark["until"] > time.time() + 1800, mark
        time.sleep(2)  # claude-run reads the mark and says what it waits for
    finally:
        run.send_signal(signal.SIGTERM)
        out, _ = run.communicate(timeout=60)
    assert "usage limit (the reset Claude printed); waiting until it reopens at" in out, out
    assert "not a crash" in out and "giving up" not in out and "(crash " not in out, out


def test_a_start_up_refusal_of_2_1_332_ends_claude_run_once_with_its_reason(
    world, mock_api: MockAPI, env_for, tmux: Tmux
) -> None:
    """In ``-p`` (Claude's standard error a pipe) and full-screen in a pane (a terminal): one launch,
    one line naming ``sideload_flags_disabled``, exit 78; never a crash loop."""
    plugin = world.home / "plugin"
    plugin.mkdir()
    env = env_for(CLAUDE_RUN_CRASH_LIMIT="3")
    # --managed-settings=JSON in one word: claude-run takes an option it does not know for a flag alone
    refused = [
        "--managed-settings=" + json.dumps({"disableSideloadFlags": True}),
        "--plugin-dir",
        str(plugin),
    ]
    done = subprocess.run([str(BIN / "claude-run"), "--", "-p", *refused, "hello"], env=env, cwd=world.project,
                          capture_output=True, text=True, timeout=180)  # fmt: skip
    assert done.returncode == 78, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("claude-run: error:")]
    assert (
        len(errors) == 1
        and "Claude refused to start (sideload_flags_disabled: --plugin-dir is disabled" in errors[0]
    )
    assert done.stderr.count("Starting...") == 1 and "(crash " not in done.stderr, done.stderr
    assert mock_api.requests == []

    pane = tmux.start([str(BIN / "claude-run"), "--", *refused], env, world.project)
    # tmux marks a pane dead when its terminal closes, and knows the exit status only once it has
    # reaped the process: wait for the status itself (what was seen, and what still ran, if it never comes).
    # tmux 3.3 at times misses the SIGCHLD of a pane's process and reaps it only when another child of
    # its own ends (a fleet pane's claude-run nudges it so; this pane is not a fleet's): nudge it here.
    seen: list[str] = []

    def look() -> str:
        seen.append(tmux("display-message", "-p", "-t", pane, "#{pane_dead}:#{pane_dead_status}").strip())
        if seen[-1] == "1:":
            tmux(*REAP_NUDGE)
        return seen[-1].partition(":")[2]

    try:
        status = wait_until(look, 120, "claude-run to end in the pane and tmux to know its exit status")
    except AssertionError as failed:
        left = subprocess.run(["ps", "-eo", "pid,ppid,stat,args"], capture_output=True, text=True).stdout
        mine = [line for line in left.splitlines() if "claude" in line or "hook" in line]
        raise AssertionError(f"{failed}; tmux said {sorted(set(seen))}; the pane:\n{tmux.screen(pane)}\n"
                             + "\n".join(mine)) from None  # fmt: skip
    assert status == "78", tmux.screen(pane)
    screen = tmux.screen(pane)
    assert "claude-run: error: Claude refused to start (sideload_flags_disabled" in screen, screen
    assert "disabled by your organization's managed settings" in screen, "Claude's own line reached the pane"
