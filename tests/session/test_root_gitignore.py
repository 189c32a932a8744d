"""The sessions root's .gitignore: git (and so Claude Code's files-changed view) sees a session's
state, logs and handover, never the store's locks, index or temp files."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from support.hooks import activate, set_fields

from claude_shepherd.supervisor.session import index, pane_records, root_gitignore
from claude_shepherd.supervisor.session.store import update_state


def git(project: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=project, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


def untracked(project: Path) -> list[str]:
    """What git would offer to commit (the same listing Claude Code's Bash diff starts from)."""
    return sorted(
        line[3:] for line in git(project, "status", "--porcelain", "--untracked-files=all").splitlines()
    )


def test_git_sees_the_sessions_record_and_none_of_the_stores_machinery(project: Path) -> None:
    git(project, "init", "-q")
    session_dir = activate(project)  # the real transition through the real locked store
    set_fields(session_dir, currentPhase="2: Build")
    (session_dir / "IMPLEMENT_LOG.md").write_text("entry\n")
    index.rebuild(project / "sessions")
    pane_records.note(project / "sessions", "%7", "c1f98c8c-c723-4d46-ad1d-62b28790d574")
    # A writer killed mid-write leaves its temp file behind until the next write sweeps it.
    (session_dir / ".state.json.tmp-123-456").write_text("{")
    root = project / "sessions"
    assert (session_dir / ".state.json.lock").exists() and (root / ".shepherd" / "index.json").exists()
    assert untracked(project) == [
        "sessions/2026_11_22_TOPIC/.state.json",
        "sessions/2026_11_22_TOPIC/IMPLEMENT_LOG.md",
    ]


def test_the_index_alone_writes_it_too(project: Path) -> None:
    """A root whose sessions all date from the bash era gets it with its first index."""
    git(project, "init", "-q")
    legacy = project / "sessions" / "2026_01_01_OLD"
    legacy.mkdir()
    (legacy / ".state.json").write_text('{"pid": 0, "skill": "implement"}')
    index.refresh(project / "sessions")
    assert untracked(project) == ["sessions/2026_01_01_OLD/.state.json"]
    assert (legacy / ".state.json").read_text() == '{"pid": 0, "skill": "implement"}'  # loaded as it was


def test_a_gitignore_already_there_is_left_alone(project: Path) -> None:
    mine = project / "sessions" / ".gitignore"
    mine.write_text("*\n")
    activate(project)
    index.rebuild(project / "sessions")
    assert mine.read_text() == "*\n"


def test_a_planted_link_is_not_followed(project: Path) -> None:
    victim = project / "victim.txt"
    victim.write_text("keep\n")
    os.symlink(victim, project / "sessions" / ".gitignore")
    update_state(project / "sessions" / "2026_11_22_X", lambda s: s.update(skill="x"), create=True)
    index.rebuild(project / "sessions")
    assert victim.read_text() == "keep\n" and (project / "sessions" / ".gitignore").is_symlink()


def test_the_text_names_what_to_commit() -> None:
    assert "Commit the rest" in root_gitignore.TEXT and "/.gitignore" in root_gitignore.TEXT.splitlines()
