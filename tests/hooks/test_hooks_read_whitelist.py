"""What the session gate lets an agent read before its session is active: the standards where the bash
era keeps them (seed 002's ``~/.claude/docs/``, seed 004's ``~/.claude/engine/.directives/`` and a
project's ``.directives/`` folders), never secrets or conversation data. Through the real ``claude-hook``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.hooks import hook_env, run, tool

GATE = "§CMD_REQUIRE_ACTIVE_SESSION"


def _home(project: Path) -> Path:
    return project.parent / "home"


def _verdict(project: Path, path: str, env: dict[str, str] | None = None) -> str:
    """``allowed`` or ``denied``, as the real hook answers a Read of *path* with no session."""
    env = env or hook_env(project, SESSION_REQUIRED="1")
    out = run("pre-tool-use", tool(project, "Read", file_path=path), env, cwd=project).stdout
    if out == "":
        return "allowed"
    assert GATE in out, out
    return "denied"


@pytest.fixture
def bash_era(project: Path) -> Path:
    """A home laid out as the bash era installs it: its engine checkout in ~/.claude/engine, the
    directives linked from ~/.claude/.directives, its docs in ~/.claude/docs, Claude's own data beside."""
    claude = _home(project) / ".claude"
    files = [
        "docs/FLEET.md",
        "docs/CONTEXT_GUARDIAN.md",
        "docs/DIRECTIVES_SYSTEM.md",
        "engine/.directives/COMMANDS.md",
        "engine/.directives/commands/CMD_REPORT_INTENT.md",
        "engine/docs/SESSION_LIFECYCLE.md",
        "engine/skills/implement/SKILL.md",
        "engine/README.md",
        "engine/.git/config",
        "engine/.directives/.git/config",
        "engine/config.sh",
        "engine/scripts/lib.sh",
        "engine/hooks/pre-tool-use-heartbeat.sh",
        "docs/.credentials.json",
        ".credentials.json",
        "settings.json",
        "history.jsonl",
        "projects/p/main.jsonl",
        "projects/p/notes.md",
    ]
    for name in files:
        (claude / name).parent.mkdir(parents=True, exist_ok=True)
        (claude / name).write_text("x\n")
    (claude / ".directives").symlink_to(claude / "engine" / ".directives")
    (claude / "docs" / "chats").symlink_to(claude / "projects")
    for name in (
        ".directives/INVARIANTS.md",
        "packages/estimate/.directives/PITFALLS.md",
        ".directives/.env",
    ):
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text("x\n")
    return claude


STANDARDS = [
    "~/.claude/docs/FLEET.md",
    "~/.claude/docs/CONTEXT_GUARDIAN.md",
    "~/.claude/docs/DIRECTIVES_SYSTEM.md",
    "~/.claude/engine/.directives/COMMANDS.md",
    "~/.claude/engine/.directives/commands/CMD_REPORT_INTENT.md",
    "~/.claude/.directives/COMMANDS.md",  # a link into engine/.directives, as the bash era installs it
    "~/.claude/engine/docs/SESSION_LIFECYCLE.md",
    "~/.claude/engine/skills/implement/SKILL.md",
    "~/.claude/engine/README.md",
    ".directives/INVARIANTS.md",
    "packages/estimate/.directives/PITFALLS.md",
]
SECRETS = [
    "~/.claude/engine/.git/config",
    "~/.claude/engine/.directives/.git/config",
    "~/.claude/.directives/.git/config",
    "~/.claude/engine/config.sh",
    "~/.claude/engine/scripts/lib.sh",
    "~/.claude/engine/hooks/pre-tool-use-heartbeat.sh",
    "~/.claude/docs/.credentials.json",
    "~/.claude/docs/../settings.json",
    "~/.claude/docs/chats/p/main.jsonl",
    "~/.claude/docs/chats/p/notes.md",
    "~/.claude/engine",
    "~/.claude/.credentials.json",
    "~/.claude/history.jsonl",
    "~/.claude/projects/p/notes.md",
    ".directives/.env",
    "packages/.directives-not/x.md",
    "src/.directives",
]


@pytest.mark.parametrize("path", STANDARDS)
def test_the_bash_eras_standards_may_be_read_before_activation(
    project: Path, bash_era: Path, path: str
) -> None:
    assert _verdict(project, path) == "allowed", path


@pytest.mark.parametrize("path", SECRETS)
def test_secrets_and_code_beside_them_may_not_be_read_before_activation(
    project: Path, bash_era: Path, path: str
) -> None:
    assert _verdict(project, path) == "denied", path


def test_an_engine_checkout_kept_elsewhere_lends_its_standards_not_its_code(
    project: Path, tmp_path: Path
) -> None:
    """~/.claude/engine linked to a checkout: its directives and docs pass where they are, its .git and
    scripts do not; a project's .directives linked out of the project is not a standard."""
    checkout = tmp_path / "src" / "engine"
    for name in (".directives/COMMANDS.md", "docs/FLEET.md", ".git/config", "scripts/session.sh"):
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        (checkout / name).write_text("x\n")
    (_home(project) / ".claude").mkdir(parents=True)
    (_home(project) / ".claude" / "engine").symlink_to(checkout)
    ssh = _home(project) / ".ssh"
    ssh.mkdir()
    (ssh / "id_ed25519").write_text("s3cret\n")
    (project / "lib").mkdir()
    (project / "lib" / ".directives").symlink_to(ssh)
    assert _verdict(project, "~/.claude/engine/.directives/COMMANDS.md") == "allowed"
    assert _verdict(project, str(checkout / "docs" / "FLEET.md")) == "allowed"
    for path in (
        "~/.claude/engine/.git/config",
        "~/.claude/engine/scripts/session.sh",
        "lib/.directives/id_ed25519",
    ):
        assert _verdict(project, path) == "denied", path


def test_a_hard_link_lends_no_allowed_name_to_a_secret(project: Path, bash_era: Path) -> None:
    """A file with a standard's name that is another name of the credentials (a hard link no path check
    sees) is refused; the standard itself still reads."""
    claude = _home(project) / ".claude"
    (claude / "docs" / "LINKED.md").hardlink_to(claude / ".credentials.json")
    (project / ".directives").mkdir(exist_ok=True)
    (project / ".directives" / "LINKED.md").hardlink_to(claude / ".credentials.json")
    assert _verdict(project, "~/.claude/docs/LINKED.md") == "denied"
    assert _verdict(project, ".directives/LINKED.md") == "denied"
    assert _verdict(project, "~/.claude/docs/FLEET.md") == "allowed"


def test_a_sessions_folder_linked_into_the_claude_config_reads_only_its_standards(
    project: Path, bash_era: Path
) -> None:
    """The sessions root is read freely, but not where it is a link into ~/.claude: there the config
    dir's own rule decides (settings and history stay refused)."""
    claude = _home(project) / ".claude"
    (claude / "settings.json").write_text("{}\n")
    (project / "sessions").rmdir()
    (project / "sessions").symlink_to(claude)
    assert _verdict(project, str(claude / "settings.json")) == "denied"
    assert _verdict(project, "sessions/settings.json") == "denied"
    assert _verdict(project, "~/.claude/docs/FLEET.md") == "allowed"


def test_credentials_are_refused_by_their_folder_and_name_and_a_sessions_root_at_home_lends_nothing(
    project: Path,
) -> None:
    """``sessions`` linked to the home directory made every dotfile session material: ``~/.ssh``'s
    private key, ``~/.aws/credentials`` and ``~/.netrc`` read before any session. Now a credential is
    known by its folder and name wherever it is, and a sessions root that holds the home lends nothing;
    a real sessions folder still reads."""
    home = _home(project)
    secrets = {".ssh/id_ed25519": "k", ".ssh/config": "c", ".aws/credentials": "a", ".netrc": "n"}
    for name, text in secrets.items():
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(text)
    (home / "notes.txt").write_text("x\n")
    (project / "sessions" / "2026_11_25_X").mkdir()
    (project / "sessions" / "2026_11_25_X" / "LOG.md").write_text("x\n")
    assert _verdict(project, "sessions/2026_11_25_X/LOG.md") == "allowed"
    for name in (".aws/credentials", "id_rsa", ".netrc"):  # a credential copied into session material
        (project / "sessions" / "2026_11_25_X" / name).parent.mkdir(exist_ok=True)
        (project / "sessions" / "2026_11_25_X" / name).write_text("s3cret\n")
        assert _verdict(project, f"sessions/2026_11_25_X/{name}") == "denied", name

    moved = project / "sessions-real"
    (project / "sessions").rename(moved)
    (project / "sessions").symlink_to(home)
    for path in [*(f"sessions/{name}" for name in secrets), "sessions/notes.txt", "~/.ssh/id_ed25519"]:
        assert _verdict(project, path) == "denied", path
