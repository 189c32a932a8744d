"""Another local user cannot lend the fleet a folder: every private folder of ours is ours and 0700, or
the fleet refuses in one line (as tmux refuses a foreign ``/tmp/tmux-UID``).

The other user is a real account (:func:`support.sshd.other_account`) making the folder first, where
it can: in the shared temporary folder tmux's sockets live in. ``fleet`` is the real console script.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from support.fleet import FleetWorld
from support.sshd import SshHost, as_user

from claude_shepherd.supervisor.session.private_dir import NotPrivateError, private_dir


def _shared_tmp(world: FleetWorld) -> Path:
    """The fleet's ``$TMUX_TMPDIR``, open to everyone like ``/tmp`` (sticky)."""
    os.chmod(world.tmux_tmpdir, 0o1777)
    return world.tmux_tmpdir


@pytest.mark.parametrize("mode", ["0700", "0777"])
def test_fleet_status_across_hosts_refuses_another_users_tmux_folder(
    world: FleetWorld, other_account: SshHost, mode: str
) -> None:
    """The shared SSH connection's socket would be in their folder: their listener would get our calls."""
    tmux_dir = _shared_tmp(world) / f"tmux-{os.getuid()}"
    as_user(other_account, "mkdir", "-m", mode, str(tmux_dir))
    as_user(other_account, "mkdir", "-m", "0777", str(tmux_dir / "ssh"))
    world.layout("far", "  - agents:\n      host: far.invalid\n      panes:\n        - A: claude-run\n")

    done = world.fleet("status", "far", env={"FLEET_SSH_COMMAND": "ssh -F /dev/null"}, socket=False)

    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr == (
        f"fleet: error: {tmux_dir} is not a private folder of yours: it belongs to user id "
        f"{other_account.uid}, not you; remove it; or set TMUX_TMPDIR to a folder of your own\n"
    )
    assert os.listdir(tmux_dir / "ssh") == [], "nothing of ours was put in their folder"


def test_fleet_start_refuses_another_users_tmux_folder(world: FleetWorld, other_account: SshHost) -> None:
    """The fleet's lock (and tmux's sockets) would be theirs: they could hold it or read who holds it."""
    tmux_dir = _shared_tmp(world) / f"tmux-{os.getuid()}"
    as_user(other_account, "mkdir", "-m", "0777", str(tmux_dir))
    world.layout("duo", "  - agents:\n      panes:\n        - A: claude-run\n")

    done = world.fleet("start", "duo", "--no-attach")

    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        f"fleet: error: {tmux_dir} is not a private folder of yours: it belongs to user id "
        f"{other_account.uid}, not you; remove it; or set TMUX_TMPDIR to a folder of your own"
    ]
    assert os.listdir(tmux_dir) == []


def test_a_folder_of_ours_is_private_or_refused(tmp_path: Path) -> None:
    """Made 0700; a folder of ours others could only read is tightened; writable by others, a link, a
    file or a listening socket in its place is refused."""
    made = tmp_path / "state" / "claude-shepherd" / "spans"
    private_dir(made, within=tmp_path / "state" / "claude-shepherd")
    for folder in (made, made.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700

    readable = tmp_path / "readable"
    readable.mkdir(mode=0o755)
    readable.chmod(0o755)
    private_dir(readable)
    assert stat.S_IMODE(readable.stat().st_mode) == 0o700

    writable = tmp_path / "writable"
    writable.mkdir()
    writable.chmod(0o777)
    with pytest.raises(NotPrivateError, match="others may write in it"):
        private_dir(writable)
    assert stat.S_IMODE(writable.stat().st_mode) == 0o777, "refused as it is, not repaired"

    (tmp_path / "link").symlink_to(made)
    (tmp_path / "file").write_text("")
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(tmp_path / "sock"))
        for name in ("link", "file", "sock"):
            with pytest.raises(NotPrivateError, match="not a folder"):
                private_dir(tmp_path / name)
    with pytest.raises(NotPrivateError, match="not a folder"):
        private_dir(tmp_path / "link" / "below", within=tmp_path / "link")


def test_the_hooks_keep_no_stamps_in_another_users_folder(other_account: SshHost) -> None:
    """The alert bookkeeping's folder, made first by someone else: the hooks go without it."""
    shared = Path(tempfile.mkdtemp(prefix="run-", dir="/tmp"))
    try:
        shared.chmod(0o1777)
        as_user(other_account, "mkdir", "-m", "0777", str(shared / "claude-shepherd"))
        code = "from claude_shepherd.supervisor import pane_notify; print(pane_notify._stamp_dir())"
        done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "XDG_RUNTIME_DIR": str(shared)},
                              capture_output=True, text=True, check=True)  # fmt: skip
        assert done.stdout == "None\n"
        assert os.listdir(shared / "claude-shepherd") == []
    finally:
        shutil.rmtree(shared)


def _stamp_dir(runtime: Path) -> str:
    code = "from claude_shepherd.supervisor import pane_notify; print(pane_notify._stamp_dir())"
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "XDG_RUNTIME_DIR": str(runtime)},
                          capture_output=True, text=True, check=True)  # fmt: skip
    return done.stdout.strip()


def test_the_hooks_make_their_folders_in_the_runtime_folder_never_the_runtime_folder(tmp_path: Path) -> None:
    """``$XDG_RUNTIME_DIR`` is the login's, made by the system: a hook whose one is missing goes without its
    stamps instead of making it (and every folder above it) with whatever mode the umask gives."""
    runtime = tmp_path / "run" / "user" / "1000"
    assert _stamp_dir(runtime) == "None"
    assert not (tmp_path / "run").exists()

    runtime.mkdir(parents=True, mode=0o700)
    assert _stamp_dir(runtime) == str(runtime / "claude-shepherd" / "pane-notify")
    for folder in (runtime / "claude-shepherd", runtime / "claude-shepherd" / "pane-notify"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
