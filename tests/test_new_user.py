"""A new user, README.md word for word: a scratch HOME, a copy of the checkout, the venv never activated.

The install line is run exactly as README.md writes it (its ``claude-run`` at the
end meets a stand-in Claude that says goodbye), then README's fleet command, as
written, from a shell whose PATH has none of our scripts. Every pane must run
its agent, ``fleet status`` must agree, and ``fleet stop`` must leave nothing.
Only what a test must isolate is set around the commands: the tmux socket
(``FLEET_SOCKET``, a private ``TMUX_TMPDIR``), the stand-in Claude
(``CLAUDE_BIN``), pip's cache and how long start may wait for agents on a loaded machine.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from support.claude_run import FAKE_CLAUDE, TAG_ENV, reap, tagged
from support.waiting import wait_until

ROOT = Path(__file__).resolve().parent.parent


def readme_commands() -> tuple[str, str]:
    """README.md's install-and-run line and its fleet command."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Install and run") :]
    install = re.search(r"```sh\n(.+?)\n```", section, re.S)
    fleet = re.search(r"`(\.venv/bin/fleet start [^`]+)`", section)
    assert install and fleet, "README.md's Install and run section lost its commands"
    return install.group(1).strip(), fleet.group(1)


def copy_checkout(dest: Path) -> Path:
    """The files git knows (a clone would fetch nothing more), without a venv of ours."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=False)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    for name in listed.stdout.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest


def test_readme_install_then_fleet_start_status_stop_as_a_new_user(tmp_path: Path) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    install, fleet_start = readme_commands()
    checkout = copy_checkout(tmp_path / "claude-shepherd")
    home = tmp_path / "home"
    home.mkdir()
    fake = tmp_path / "fake-bin" / "claude"
    fake.parent.mkdir()
    fake.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_CLAUDE}" "$@"\n')
    fake.chmod(0o755)
    plan = tmp_path / "plan.json"
    tag = uuid.uuid4().hex
    tmux_tmpdir = Path(f"/tmp/nu-{tag[:8]}")
    socket = f"fleet-newuser-{tag[:12]}"
    python_dir = str(Path(sys._base_executable).parent)  # the machine's python3, not this venv's
    env = {
        **{k: v for k, v in os.environ.items() if k.startswith("PIP_") or k in ("LANG", "LC_ALL", "TERM")},
        "HOME": str(home),
        "PATH": f"{python_dir}:/usr/local/bin:/usr/bin:/bin",
        "PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip")),
        "CLAUDE_BIN": str(fake),
        "FAKE_CLAUDE_SCRIPT": str(plan),
        "FAKE_CLAUDE_LOG": str(tmp_path / "claude.log"),
        "TMUX_TMPDIR": str(tmux_tmpdir),
        "FLEET_SOCKET": socket,
        "FLEET_START_WAIT": "120",  # start returns once its agents are up: a loaded machine only waits longer
        TAG_ENV: tag,
    }

    def sh(line: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["sh", "-c", line], cwd=checkout, env=env, capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)  # fmt: skip

    tmux_tmpdir.mkdir(mode=0o700)
    try:
        # 1. Install and run: the supervised Claude starts, and (the stand-in) quits at once.
        plan.write_text(
            json.dumps({"invocations": [[{"print": "hello from claude"}]], "default": [{"wait": None}]})
        )
        done = sh(install, timeout=600)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        assert "Goodbye." in done.stdout + done.stderr
        settings = json.loads((home / ".claude" / "settings.json").read_text())
        assert "PreToolUse" in settings["hooks"] and "statusLine" in settings

        # 2. The fleet, as README writes it, from a shell without the venv on PATH.
        plan.write_text(json.dumps({"invocations": [], "default": [{"wait": None}]}))
        started = sh(fleet_start, timeout=300)
        assert started.returncode == 0, started.stdout + started.stderr
        running = [line for line in started.stdout.splitlines() if ", running (claude-run " in line]
        assert len(running) == 4, started.stdout
        status = sh(".venv/bin/fleet status")
        assert status.returncode == 0, status.stdout + status.stderr
        assert "exited" not in status.stdout

        # 3. Stop: nothing of the fleet is left.
        stopped = sh(".venv/bin/fleet stop")
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        assert stopped.stdout.splitlines()[-1].endswith("no process of the fleet is left.")
        wait_until(lambda: not [p for p in tagged(tag) if p.status() != "zombie"], 10, "every process to end")
        again = sh(".venv/bin/fleet status")
        assert again.returncode == 3, again.stderr
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], env=env, capture_output=True, timeout=10)
        reap(tag)
        shutil.rmtree(tmux_tmpdir, ignore_errors=True)
