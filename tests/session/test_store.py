"""The store: one lock per read-modify-write, atomic replace, corrupt files kept."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from support.fixtures import script

from claude_shepherd.supervisor.session.identity import start_token
from claude_shepherd.supervisor.session.store import (
    CorruptStateError,
    LockTimeoutError,
    NoStateError,
    file_lock,
    read_state,
    update_state,
)

ROOT = Path(__file__).resolve().parents[2]


def _session(project: Path, name: str = "2026_01_01_S", state: dict | None = None) -> Path:
    d = project / "sessions" / name
    d.mkdir(parents=True, exist_ok=True)
    if state is not None:
        (d / ".state.json").write_text(json.dumps(state, indent=2))
    return d


def test_update_creates_and_reads_back(project: Path) -> None:
    d = project / "sessions" / "2026_01_01_NEW"
    update_state(d, lambda s: s.update(skill="x"), create=True)
    assert read_state(d) == {"skill": "x"}
    text = (d / ".state.json").read_text()
    assert text.startswith('{\n  "skill": "x"'), "pretty-printed like jq, two-space indent"


def test_missing_state_is_an_error_without_create(project: Path) -> None:
    d = _session(project)
    with pytest.raises(NoStateError, match="session activate"):
        update_state(d, lambda s: s.update(a=1))
    assert not (d / ".state.json").exists()


def test_noop_update_does_not_rewrite(project: Path) -> None:
    d = _session(project, state={"a": 1})
    before = os.stat(d / ".state.json").st_ino
    update_state(d, lambda s: None)
    assert os.stat(d / ".state.json").st_ino == before, "an unchanged state is not rewritten"
    update_state(d, lambda s: s.update(a=2))
    assert os.stat(d / ".state.json").st_ino != before, "a change is written to a new inode"


def test_mutate_error_writes_nothing(project: Path) -> None:
    d = _session(project, state={"a": 1})
    raw = (d / ".state.json").read_bytes()

    def boom(state: dict) -> None:
        state["a"] = 99
        raise RuntimeError("refused")

    with pytest.raises(RuntimeError):
        update_state(d, boom)
    assert (d / ".state.json").read_bytes() == raw


@pytest.mark.parametrize("content", ["", "   \n", "{not json", "[1, 2]", '"text"', "\xff\xfe"])
def test_corrupt_state_is_refused_and_kept(project: Path, content: str) -> None:
    d = _session(project)
    (d / ".state.json").write_text(content, encoding="latin-1")
    raw = (d / ".state.json").read_bytes()
    with pytest.raises(CorruptStateError):
        update_state(d, lambda s: s.update(a=1))
    assert (d / ".state.json").read_bytes() == raw, "a corrupt file is never overwritten blindly"


def test_replace_corrupt_sets_the_old_file_aside(project: Path) -> None:
    d = _session(project)
    (d / ".state.json").write_text("{half a file")
    update_state(d, lambda s: s.update(a=1), replace_corrupt=True)
    assert read_state(d) == {"a": 1}
    kept = list(d.glob(".state.json.corrupt-*"))
    assert len(kept) == 1 and kept[0].read_text() == "{half a file"


def test_lock_timeout_leaves_state_untouched(project: Path) -> None:
    d = _session(project, state={"a": 1})
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys, time
                from pathlib import Path
                from claude_shepherd.supervisor.session.store import file_lock
                with file_lock(Path({str(d / ".state.json.lock")!r})):
                    print("locked", flush=True)
                    time.sleep(30)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        started = time.monotonic()
        with pytest.raises(LockTimeoutError, match="fuser"):
            update_state(d, lambda s: s.update(a=2), timeout=0.3)
        assert time.monotonic() - started < 5
        assert read_state(d) == {"a": 1}
    finally:
        holder.kill()
        holder.wait()
    # The kernel dropped the dead holder's lock: the next writer gets it at once.
    update_state(d, lambda s: s.update(a=3), timeout=2)
    assert read_state(d) == {"a": 3}


def test_lock_is_exclusive_within_one_process_too(tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    with file_lock(lock), pytest.raises(LockTimeoutError), file_lock(lock, timeout=0.1):
        pass


STDLIB_WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from claude_shepherd.supervisor.session.store import update_state
    d, key, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    for _ in range(n):
        update_state(d, lambda s: s.__setitem__(key, s.get(key, 0) + 1))
    """
)


@pytest.mark.slow  # over a second
def test_concurrent_writers_lose_nothing(project: Path) -> None:
    """N stdlib processes increment their own counters while the CLI (pydantic path) sets fields."""
    d = _session(project, state={"skill": "x", "pid": os.getpid(), "pidStart": start_token(os.getpid())})
    per_writer = 60
    stdlib = [
        subprocess.Popen(
            [sys.executable, "-c", STDLIB_WRITER, str(d), f"count{i}", str(per_writer)], cwd=ROOT
        )
        for i in range(4)
    ]
    cli_loop = textwrap.dedent(
        f"""
        for i in 1 2 3 4 5 6; do
          {script("session")} update {d} field$1 $i >/dev/null || exit 1
        done
        """
    )
    cli = [subprocess.Popen(["bash", "-c", cli_loop, "-", str(j)], cwd=project) for j in range(3)]
    for proc in stdlib + cli:
        assert proc.wait(timeout=120) == 0
    state = read_state(d)
    assert [state[f"count{i}"] for i in range(4)] == [per_writer] * 4, "no increment was lost"
    assert [state[f"field{j}"] for j in range(3)] == [6, 6, 6], "no CLI update was lost"
    assert state["skill"] == "x"


KILLED_WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from claude_shepherd.supervisor.session.store import update_state
    d = Path(sys.argv[1])
    i = 0
    print("ready", flush=True)
    while True:
        i += 1
        update_state(d, lambda s: s.update(n=i, blob="x" * (1000 + i % 5000)))
    """
)


@pytest.mark.slow  # over a second
def test_sigkilled_writer_never_leaves_a_broken_file(project: Path) -> None:
    d = _session(project, state={"n": 0})
    rng = random.Random(7)
    for _ in range(25):
        proc = subprocess.Popen(
            [sys.executable, "-c", KILLED_WRITER, str(d)], cwd=ROOT, stdout=subprocess.PIPE
        )
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        time.sleep(rng.uniform(0.0, 0.05))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        state = read_state(d)  # raises if truncated or invalid
        assert isinstance(state["n"], int)
    leftovers = [p for p in d.iterdir() if ".tmp-" in p.name]
    # A writer killed between creating and renaming its temp file leaves that temp
    # file behind, never a damaged state file.
    assert all(p.name.startswith(".") for p in leftovers)
