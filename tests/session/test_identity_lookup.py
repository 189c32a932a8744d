"""Identity (PID + start token, fleet pane id) and the indexed lookup."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from support.fixtures import script
from support.pane import FleetPane

from claude_shepherd.supervisor.session import index
from claude_shepherd.supervisor.session.identity import (
    current_pane_id,
    fleet_socket,
    owner_alive,
    same_owner,
    start_token,
    supervisor_pid,
)
from claude_shepherd.supervisor.session.lookup import find_session


def test_start_token_names_one_process() -> None:
    me = start_token(os.getpid())
    assert me and me == start_token(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        assert start_token(child.pid) not in (None, me)
    finally:
        child.kill()
        child.wait()
    assert start_token(child.pid) is None


@pytest.mark.parametrize("pid", [0, -1, None, "12", True, 2**22 + 999])
def test_nonsense_or_missing_pids_are_dead(pid: object) -> None:
    assert owner_alive(pid) is False


def test_a_zombie_is_not_alive() -> None:
    """Exited but not yet reaped (e.g. a supervisor just stopped) is dead, not a live owner."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            stat = Path(f"/proc/{child.pid}/stat").read_text()
            if stat[stat.rfind(")") + 2] == "Z":
                break
        else:
            pytest.fail("the child never became a zombie")
        assert not owner_alive(child.pid)
    finally:
        child.wait()


def test_owner_alive_checks_the_start_token() -> None:
    me = os.getpid()
    assert owner_alive(me, start_token(me))
    assert not owner_alive(me, "another-boot:123"), "same pid, other start time: a reused pid"


def test_an_owner_without_a_token_must_look_like_an_agent() -> None:
    """A bash-era state has no start token: any process holding the number is not enough.

    PID 1 is always alive; a state naming it must not hold its session forever.
    """
    assert not owner_alive(1)
    assert not owner_alive(os.getpid()), "pytest holds the number but is no supervisor"
    agent = subprocess.Popen(
        [sys.executable, "-c", "import time; print(flush=True); time.sleep(30)", "claude-run"],
        stdout=subprocess.PIPE,
    )
    try:
        assert agent.stdout is not None and agent.stdout.readline() == b"\n"  # exec'd: its own command line
        assert owner_alive(agent.pid)
    finally:
        agent.kill()
        agent.wait()
    assert not owner_alive(agent.pid)


@pytest.mark.parametrize("pid", [2**31, 2**63, -1, 0, True, 4_194_305, "12", 1.5, None])
def test_out_of_range_pids_are_nobody(pid: object) -> None:
    assert not owner_alive(pid) and not owner_alive(pid, "boot:1")
    assert not same_owner(pid, None, os.getpid(), None)


@pytest.mark.parametrize("raw", ["", "abc", "-5", "0", "1", "2147483648", "4242"])
def test_supervisor_pid_env_is_believed_only_for_an_ancestor(raw: str) -> None:
    me, parent = os.getpid(), os.getppid()
    assert supervisor_pid({"CLAUDE_SUPERVISOR_PID": str(me)}) == me
    assert supervisor_pid({"CLAUDE_SUPERVISOR_PID": str(parent)}) == parent
    # Garbage, or a process that is not above us (PID 1 is, but "1" is also what a spoof would pick:
    # it is an ancestor of everything, so it is believed and owns nothing).
    expected = 1 if raw == "1" else parent
    assert supervisor_pid({"CLAUDE_SUPERVISOR_PID": raw}) == expected
    # Without claude-run, Claude's own pid (given to hooks and Bash tools alike) identifies the owner.
    assert supervisor_pid({"CLAUDE_SUPERVISOR_PID": raw, "CLAUDE_PID": str(me)}) == (1 if raw == "1" else me)
    assert supervisor_pid({"CLAUDE_SUPERVISOR_PID": raw, "CLAUDE_PID": "777"}) == expected


@pytest.mark.parametrize(
    ("tmux", "is_fleet"),
    [
        ("/tmp/tmux-0/fleet,1,0", True),
        ("/tmp/tmux-0/fleet-work,1,0", True),
        ("/tmp/tmux-0/default,1,0", False),
        ("/tmp/tmux-0/fleetish,1,0", False),
        ("/tmp/tmux-0/fleet-,1,0", False),
        ("", False),
    ],
)
def test_fleet_socket_names(tmux: str, is_fleet: bool) -> None:
    assert (fleet_socket({"TMUX": tmux, "TMUX_PANE": "%1"}) is not None) is is_fleet


@pytest.fixture
def tmux_server():
    """A private tmux server; yields a function to make one named socket. Always killed."""
    sockets: list[tuple[str, Path]] = []

    def make(prefix: str) -> tuple[str, str]:
        name = f"{prefix}-pytest-{uuid.uuid4().hex[:8]}"
        subprocess.run(
            [
                "tmux",
                "-L",
                name,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                "crew",
                "-n",
                "agents",
                "sleep 60",
            ],
            check=True,
        )
        path = subprocess.run(
            ["tmux", "-L", name, "display-message", "-p", "-t", "crew", "#{socket_path}"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        sockets.append((name, Path(path)))
        return name, path

    yield make
    for name, path in sockets:
        subprocess.run(["tmux", "-L", name, "kill-server"], capture_output=True)
        path.unlink(missing_ok=True)  # tmux does not always remove its socket


def _pane(name: str) -> str:
    return subprocess.run(
        ["tmux", "-L", name, "display-message", "-p", "-t", "crew", "#{pane_id}"],
        capture_output=True,
        text=True,
    ).stdout.strip()


def test_current_pane_id_on_a_fleet_socket(fleet_pane: FleetPane, tmp_path: Path) -> None:
    pane_id = [script("fleet"), "pane-id"]
    assert fleet_pane.run(pane_id, env=dict(os.environ), cwd=tmp_path).stdout == f"{fleet_pane.pane_id}\n"
    fleet_pane.tmux("set-option", "-p", "-t", fleet_pane.pane, "@pane_label", "SDK: main")
    assert fleet_pane.run(pane_id, env=dict(os.environ), cwd=tmp_path).stdout == "crew:agents:SDK: main\n"
    assert current_pane_id(fleet_pane.env()) is None, "outside the pane its variables are only a claim"
    fleet_pane.tmux("set-option", "-p", "-u", "-t", fleet_pane.pane, "@pane_label")
    r = fleet_pane.run(pane_id, env=dict(os.environ), cwd=tmp_path)
    assert (r.returncode, r.stdout) == (1, ""), "no @pane_label: not an agent pane"


def test_current_pane_id_ignores_other_servers(tmux_server) -> None:
    name, path = tmux_server("other")
    pane = _pane(name)
    subprocess.run(["tmux", "-L", name, "set-option", "-p", "-t", pane, "@pane_label", "SDK"], check=True)
    assert current_pane_id({"TMUX": f"{path},1,0", "TMUX_PANE": pane}) is None


def test_session_find_reads_the_pane_from_tmux(fleet_pane: FleetPane, project: Path) -> None:
    """Inside a fleet pane, `session find` matches by pane without being told the id."""
    d = project / "sessions" / "PANE_SESSION"
    d.mkdir()
    (d / ".state.json").write_text(json.dumps({"pid": 0, "skill": "x", "fleetPaneId": fleet_pane.pane_id}))
    out = fleet_pane.run([script("session"), "find"], env=dict(os.environ), cwd=project)
    assert out.stdout.strip() == str(d)
    spoofed = subprocess.run(
        [script("session"), "find"],
        capture_output=True,
        text=True,
        cwd=project,
        env=dict(os.environ, **fleet_pane.env()),
    )
    assert spoofed.returncode == 1, "the pane's variables outside the pane do not find its session"


# --------------------------------------------------------------------------- the index


def _write(root: Path, name: str, state: dict) -> Path:
    d = root / name
    d.mkdir(exist_ok=True)
    (d / ".state.json").write_text(json.dumps(state))
    return d


def test_index_is_rebuilt_when_missing_and_when_the_root_changes(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    root.mkdir()
    me = os.getpid()
    _write(root, "A", {"pid": me, "fleetPaneId": "s:w:A"})
    assert find_session(root, pane=None, pid=me, token=None).session_dir == root / "A"
    assert index.index_path(root).exists()
    _write(root, "B", {"pid": 0, "fleetPaneId": "s:w:B"})  # a new folder: the root's stamp changes
    assert find_session(root, pane="s:w:B", pid=me, token=None).session_dir == root / "B"


def test_a_stale_index_entry_is_never_trusted(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    root.mkdir()
    me = os.getpid()
    a = _write(root, "A", {"pid": me})
    _write(root, "B", {"pid": 1})
    index.rebuild(root)
    # Change ownership behind the index's back (a bash-era writer, a hand edit).
    (a / ".state.json").write_text(json.dumps({"pid": 1}))
    (root / "B" / ".state.json").write_text(json.dumps({"pid": me}))
    found = find_session(root, pane=None, pid=me, token=None)
    assert found is not None and found.session_dir == root / "B"


def test_index_keeps_a_small_entry_per_session_and_no_impossible_pids(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    root.mkdir()
    for i in range(300):
        _write(root, f"S{i:04d}", {"pid": 2**22 + 1 + i, "skill": "x", "fleetPaneId": f"f:w:{i}"})
    _write(root, "LIVE", {"pid": os.getpid()})
    idx = index.rebuild(root)
    assert idx.pids == {str(os.getpid()): ["LIVE"]}
    assert len(idx.panes) == 300
    assert index.index_path(root).stat().st_size < 300 * 80


def test_lookup_tolerates_garbage_state_files(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    root.mkdir()
    (root / "BROKEN").mkdir()
    (root / "BROKEN" / ".state.json").write_text("{oops")
    (root / "LIST").mkdir()
    (root / "LIST" / ".state.json").write_text("[1]")
    _write(root, "OK", {"pid": os.getpid()})
    assert find_session(root, pane=None, pid=os.getpid(), token=None).session_dir == root / "OK"


def test_lookup_on_a_missing_root(tmp_path: Path) -> None:
    assert find_session(tmp_path / "nope", pane="a:b:c", pid=os.getpid(), token=None) is None


def test_a_write_that_cannot_update_the_index_still_succeeds_and_is_found(tmp_path: Path) -> None:
    """A held index lock (say, a long rebuild) must neither fail the state write nor hide the session."""
    from claude_shepherd.supervisor.session.store import DEFAULT_LOCK_TIMEOUT, update_state

    root = tmp_path / "sessions"
    (root / "S").mkdir(parents=True)
    index.rebuild(root)  # the index knows S, without an owner
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom pathlib import Path\nfrom claude_shepherd.supervisor.session.store import file_lock\n"
         "with file_lock(Path(sys.argv[1])):\n    print('locked', flush=True)\n    time.sleep(float(sys.argv[2]))\n",
         str(root / index.INDEX_DIRNAME / "index.lock"), str(DEFAULT_LOCK_TIMEOUT + 2)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        update_state(root / "S", lambda s: s.update(pid=os.getpid()), create=True)  # waits out the index lock
    finally:
        holder.kill()
        holder.wait()
    assert json.loads((root / "S" / ".state.json").read_text())["pid"] == os.getpid()
    found = find_session(root, pane=None, pid=os.getpid(), token=None)
    assert found is not None and found.session_dir == root / "S"
