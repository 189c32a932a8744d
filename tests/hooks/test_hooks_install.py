"""``claude-hook install`` / ``uninstall``: merge, idempotence, refusal, round trips, the skill."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from support.claude_run import FakeClaude
from support.fixtures import script
from support.hooks import hook_env

from claude_shepherd.hooks.claude_settings import hook_command, ours
from claude_shepherd.hooks.install import BACKUP_SUFFIX, main

USER_SETTINGS = {
    "model": "opus",
    "env": {"FOO": "bär"},
    "permissions": {"allow": ["Bash(git status)"]},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/guard.sh", "timeout": 5}]}
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    },
    "statusLine": {"type": "command", "command": "~/my-status.sh"},
}
STYLES = {
    "two-space": json.dumps(USER_SETTINGS, indent=2, ensure_ascii=False) + "\n",
    "four-space, no newline": json.dumps(USER_SETTINGS, indent=4),
    "tabs, ascii escapes": json.dumps(USER_SETTINGS, indent="\t") + "\n",
    "compact": json.dumps(USER_SETTINGS, separators=(",", ":")),
    "odd spacing": '{ "model" : "opus" ,\n  "hooks" : { } }\n',
    "empty object": "{}",
}


@pytest.fixture(autouse=True)
def claude_code(fake: FakeClaude, monkeypatch: pytest.MonkeyPatch) -> FakeClaude:
    """The Claude Code install asks for its version: the stand-in, as the newest (2.1.332) unless a test
    sets ``FAKE_CLAUDE_VERSION``, never whatever Claude Code this machine has."""
    monkeypatch.setenv("CLAUDE_BIN", str(fake.path))
    monkeypatch.setenv("FAKE_CLAUDE_LOG", str(fake.log))
    monkeypatch.delenv("FAKE_CLAUDE_VERSION", raising=False)
    return fake


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return home


def settings_of(home: Path) -> Path:
    return home / ".claude" / "settings.json"


def skill_of(base: Path) -> Path:
    return base / "skills" / "session" / "SKILL.md"


def commands_in(data: dict) -> list[str]:
    found = [
        h["command"] for groups in data.get("hooks", {}).values() for g in groups for h in g.get("hooks", [])
    ]
    if isinstance(data.get("statusLine"), dict):
        found.append(data["statusLine"]["command"])
    return found


@pytest.mark.parametrize("style", list(STYLES), ids=list(STYLES))
def test_round_trip_is_byte_identical(home: Path, style: str) -> None:
    path = settings_of(home)
    path.write_text(STYLES[style])
    assert main(["install", "--user"]) == 0
    installed = json.loads(path.read_text())
    theirs = "statusLine" in json.loads(STYLES[style])  # a user's own status line is kept
    assert sum(ours(c) is not None for c in commands_in(installed)) == (9 if theirs else 10)
    assert main(["install", "--user"]) == 0  # idempotent
    assert json.loads(path.read_text()) == installed
    assert main(["uninstall", "--user"]) == 0
    assert path.read_text() == STYLES[style]
    assert not (path.parent / ("settings.json" + BACKUP_SUFFIX)).exists()
    assert not (home / ".claude" / "skills").exists()


def test_install_merges_and_keeps_every_user_entry(home: Path) -> None:
    path = settings_of(home)
    path.write_text(STYLES["two-space"])
    assert main(["install"]) == 0  # --user is the default
    data = json.loads(path.read_text())
    for key in ("model", "env", "permissions"):
        assert data[key] == USER_SETTINGS[key]
    assert data["hooks"]["Stop"][0] == USER_SETTINGS["hooks"]["Stop"][0]
    assert data["hooks"]["Stop"][1] == {
        "hooks": [{"type": "command", "command": hook_command("stop"), "timeout": 10}]
    }
    pre = data["hooks"]["PreToolUse"]
    assert pre[0] == USER_SETTINGS["hooks"]["PreToolUse"][0]
    assert pre[1] == {
        "matcher": "*",
        "hooks": [{"type": "command", "command": hook_command("pre-tool-use"), "timeout": 10}],
    }
    assert data["hooks"]["UserPromptSubmit"] == [
        {"hooks": [{"type": "command", "command": hook_command("user-prompt-submit"), "timeout": 10}]}
    ]
    assert data["hooks"]["SessionStart"] == [
        {"hooks": [{"type": "command", "command": hook_command("session-start"), "timeout": 10}]}
    ]
    assert data["statusLine"] == USER_SETTINGS["statusLine"]


def test_commands_use_this_installation_by_absolute_path() -> None:
    for event in ("pre-tool-use", "user-prompt-submit", "session-start", "status-line"):
        words = shlex.split(hook_command(event))
        assert words[0] == sys.executable and os.path.isabs(words[0]) and words[0] != "python3"
        assert words[1:3] == ["-I", "-S"]
        assert os.path.isabs(words[3]) and words[3].endswith("hooks/__main__.py") and os.path.isfile(words[3])
        assert words[4] == event and ours(hook_command(event)) == event


def test_installed_command_runs_under_sh_like_claude_code(home: Path, project: Path) -> None:
    assert main(["install", "--user"]) == 0
    data = json.loads(settings_of(home).read_text())
    command = data["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    payload = {"tool_name": "Bash", "tool_input": {"command": "git status"}, "cwd": str(project)}
    done = subprocess.run(
        ["/bin/sh", "-c", command],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=hook_env(project, SESSION_REQUIRED="1"),
        timeout=30,
    )
    assert done.returncode == 0 and '"permissionDecision": "deny"' in done.stdout
    status = subprocess.run(
        ["/bin/sh", "-c", data["statusLine"]["command"]],
        input="{}",
        capture_output=True,
        text=True,
        env=hook_env(project),
        timeout=30,
    )
    assert status.stdout.startswith("No session · $—")


def test_new_settings_file_is_created_and_removed_again(home: Path) -> None:
    path = settings_of(home)
    assert main(["install", "--user"]) == 0
    data = json.loads(path.read_text())
    assert ours(data["statusLine"]["command"]) == "status-line" and data["statusLine"]["type"] == "command"
    assert skill_of(home / ".claude").is_file()
    assert main(["uninstall", "--user"]) == 0
    assert not path.exists() and not (home / ".claude" / "skills").exists()
    assert sorted(os.listdir(home / ".claude")) == []


@pytest.mark.parametrize(
    "text, why",
    [
        ("{not json", "not valid JSON"),
        ("", "not valid JSON"),
        ("[1, 2]", "JSON list"),
        ('{"hooks": []}', '"hooks" is not an object'),
        ('{"hooks": {"PreToolUse": {}}}', '"hooks.PreToolUse" is not a list'),
    ],
)
def test_bad_settings_are_refused_not_overwritten(
    home: Path, capsys: pytest.CaptureFixture[str], text: str, why: str
) -> None:
    path = settings_of(home)
    path.write_text(text)
    for command in ("install", "uninstall"):
        code = main([command, "--user"])
        err = capsys.readouterr().err
        if command == "uninstall" and "hooks" in text:
            assert code == 0  # nothing of ours to remove: nothing written
        else:
            assert code == 1 and why in err and "\n" not in err.strip()
        assert path.read_text() == text
    assert not (path.parent / ("settings.json" + BACKUP_SUFFIX)).exists()


def test_replace_status_line_and_restore_on_uninstall(home: Path) -> None:
    path = settings_of(home)
    path.write_text(STYLES["four-space, no newline"])
    assert main(["install", "--user", "--replace-status-line"]) == 0
    assert ours(json.loads(path.read_text())["statusLine"]["command"]) == "status-line"
    assert main(["uninstall", "--user"]) == 0
    assert path.read_text() == STYLES["four-space, no newline"]


def test_user_changes_between_install_and_uninstall_survive(home: Path) -> None:
    path = settings_of(home)
    path.write_text(STYLES["four-space, no newline"])
    assert main(["install", "--user"]) == 0
    data = json.loads(path.read_text())
    data["model"] = "sonnet"
    data["hooks"]["PreToolUse"][1]["hooks"].append({"type": "command", "command": "my-own-hook"})
    path.write_text(json.dumps(data, indent=4))
    assert main(["uninstall", "--user"]) == 0
    text = path.read_text()
    after = json.loads(text)
    assert after["model"] == "sonnet" and after["statusLine"] == USER_SETTINGS["statusLine"]
    assert after["hooks"]["PreToolUse"] == [
        USER_SETTINGS["hooks"]["PreToolUse"][0],
        {"matcher": "*", "hooks": [{"type": "command", "command": "my-own-hook"}]},
    ]
    assert not any(ours(c) for c in commands_in(after))
    assert text.startswith('{\n    "model"') and not text.endswith("\n")  # the file's own style


def test_older_install_is_updated_in_place_and_duplicates_collapse(home: Path) -> None:
    old = "/old/venv/bin/python -I -m hooks pre-tool-use"
    legacy = "/usr/local/bin/claude-hook pre-tool-use"
    settings = {
        "hooks": {
            "PreToolUse": [
                {"matcher": "*", "hooks": [{"type": "command", "command": old}]},
                {"matcher": "*", "hooks": [{"type": "command", "command": legacy}]},
            ]
        }
    }
    settings_of(home).write_text(json.dumps(settings))
    assert main(["install", "--user"]) == 0
    pre = json.loads(settings_of(home).read_text())["hooks"]["PreToolUse"]
    commands = [h["command"] for g in pre for h in g["hooks"]]
    assert commands == [hook_command("pre-tool-use")]
    assert pre[1]["hooks"] == []  # the user's group shape is left alone, only our entry went


def test_dry_run_writes_nothing(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = settings_of(home)
    path.write_text(STYLES["compact"])
    assert main(["install", "--user", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would become" in out and hook_command("pre-tool-use") in out and "would be installed" in out
    assert path.read_text() == STYLES["compact"]
    assert (
        not skill_of(home / ".claude").exists()
        and not (path.parent / ("settings.json" + BACKUP_SUFFIX)).exists()
    )
    assert main(["install", "--user"]) == 0
    assert main(["uninstall", "--user", "--dry-run"]) == 0
    assert ours(json.loads(path.read_text())["hooks"]["PreToolUse"][1]["hooks"][0]["command"])
    assert skill_of(home / ".claude").exists()


def test_project_scope(home: Path, project: Path) -> None:
    assert main(["install", "--project"]) == 0
    assert json.loads((project / ".claude" / "settings.json").read_text())["hooks"]["SessionStart"]
    assert skill_of(project / ".claude").is_file() and not skill_of(home / ".claude").exists()
    assert not settings_of(home).exists()
    assert main(["uninstall", "--project"]) == 0
    assert not (project / ".claude" / "settings.json").exists() and not skill_of(project / ".claude").exists()


def test_settings_file_scope_puts_the_skill_under_home(home: Path, tmp_path: Path) -> None:
    custom = tmp_path / "elsewhere" / "my-settings.json"
    custom.parent.mkdir()
    custom.write_text('{"theme": "dark"}\n')
    assert main(["install", "--settings-file", str(custom)]) == 0
    assert json.loads(custom.read_text())["theme"] == "dark" and skill_of(home / ".claude").is_file()
    assert main(["uninstall", "--settings-file", str(custom)]) == 0
    assert custom.read_text() == '{"theme": "dark"}\n' and not skill_of(home / ".claude").exists()


def test_claude_config_dir_is_the_user_scope(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "cfg"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    assert main(["install", "--user"]) == 0
    assert (config / "settings.json").is_file() and skill_of(config).is_file()


def test_symlinked_settings_and_permissions_are_kept(home: Path, tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "settings.json"
    real.parent.mkdir()
    real.write_text(STYLES["two-space"])
    real.chmod(0o600)
    settings_of(home).symlink_to(real)
    assert main(["install", "--user"]) == 0
    assert settings_of(home).is_symlink() and "pre-tool-use" in real.read_text()
    assert stat.S_IMODE(real.stat().st_mode) == 0o600
    assert main(["uninstall", "--user"]) == 0
    assert settings_of(home).is_symlink() and real.read_text() == STYLES["two-space"]


def test_skill_text_teaches_continue_and_dehydrate() -> None:
    text = (Path(__file__).parents[2] / "hooks" / "skill" / "SKILL.md").read_text()
    front = text.split("---")[1]
    assert "name: session" in front and "description:" in front
    assert "session continue DIR" in text and "Resume the work at the phase" in text
    assert "session dehydrate DIR <<'EOF'" in text and "## Required files" in text


def test_changed_or_foreign_skill_is_left_alone(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    skill = skill_of(home / ".claude")
    assert main(["install", "--user"]) == 0
    skill.write_text(skill.read_text() + "\nMy own note.\n")
    assert main(["uninstall", "--user"]) == 0
    assert "left in place" in capsys.readouterr().out and skill.read_text().endswith("My own note.\n")
    skill.write_text("---\nname: session\ndescription: someone else's\n---\n")
    assert main(["install", "--user"]) == 0
    assert "not ours; left alone" in capsys.readouterr().out
    assert "someone else's" in skill.read_text()


def test_real_console_script_round_trip(tmp_path: Path) -> None:
    home = tmp_path / "h"
    (home / ".claude").mkdir(parents=True)
    original = STYLES["tabs, ascii escapes"]
    settings_of(home).write_text(original)
    env = dict(os.environ, HOME=str(home))
    env.pop("CLAUDE_CONFIG_DIR", None)
    done = subprocess.run(
        [script("claude-hook"), "install", "--user"], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    interpreter = Path(script("claude-hook")).read_text().splitlines()[0].removeprefix("#!").split()[0]
    assert str(skill_of(home / ".claude")) in done.stdout
    assert hook_command("pre-tool-use", python=interpreter) in done.stdout
    done = subprocess.run(
        [script("claude-hook"), "uninstall"], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert settings_of(home).read_text() == original
    bad = subprocess.run(
        [script("claude-hook"), "install", "--user", "--project"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert bad.returncode == 2 and "not allowed with" in bad.stderr


def _claude_hook(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_CONFIG_DIR"}
    env["HOME"] = str(home)
    return subprocess.run(
        [script("claude-hook"), *args], capture_output=True, text=True, env=env, cwd=cwd or home, timeout=60
    )


def test_uninstalling_one_settings_file_keeps_the_skill_others_still_use(home: Path, tmp_path: Path) -> None:
    custom = tmp_path / "elsewhere" / "settings.json"
    custom.parent.mkdir()
    assert _claude_hook(home, "install", "--user").returncode == 0
    assert _claude_hook(home, "install", "--settings-file", str(custom)).returncode == 0
    done = _claude_hook(home, "uninstall", "--settings-file", str(custom))
    assert done.returncode == 0 and "still uses our hooks" in done.stdout
    assert skill_of(home / ".claude").exists(), "~/.claude/settings.json still needs /session continue"
    assert _claude_hook(home, "uninstall", "--user").returncode == 0
    assert not skill_of(home / ".claude").exists(), "the last one out removes it"


def test_install_refuses_a_settings_file_in_a_missing_folder(home: Path, tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "dir" / "s.json"
    done = _claude_hook(home, "install", "--settings-file", str(missing))
    assert done.returncode == 1 and not (tmp_path / "no").exists()
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "does not exist; create it first" in lines[0]


def test_install_without_a_settings_file_says_it_created_one_and_keeps_no_empty_backup(home: Path) -> None:
    path = settings_of(home)
    done = _claude_hook(home, "install", "--user")
    assert done.returncode == 0, done.stderr
    assert f"Settings: {path} (created: there was none; `claude-hook uninstall` removes it)" in done.stdout
    assert "kept as" not in done.stdout
    assert not (path.parent / ("settings.json" + BACKUP_SUFFIX)).exists()
    gone = _claude_hook(home, "uninstall", "--user")
    assert (
        gone.returncode == 0 and f"Settings: {path} was removed (only our entries were in it)" in gone.stdout
    )
    assert not path.exists()


def test_an_empty_backup_from_an_older_install_still_means_the_file_was_ours(home: Path) -> None:
    """An install that kept an empty backup for a file it created is still undone by removing the file."""
    path = settings_of(home)
    assert _claude_hook(home, "install", "--user").returncode == 0
    (path.parent / ("settings.json" + BACKUP_SUFFIX)).write_text("")
    assert _claude_hook(home, "uninstall", "--user").returncode == 0
    assert sorted(os.listdir(home / ".claude")) == []


# --------------------------------------------------------------------------- PreSkillShellCommand (2.1.332+)

SKILL_SHELL = "PreSkillShellCommand"


@pytest.mark.parametrize(
    "version, has_it",
    [("2.1.332", True), ("2.1.400", True), ("2.2.0", True), ("10.0.0", True), ("2.1.331", False),
     ("2.1.328", False), ("1.99.999", False)],
)  # fmt: skip
def test_the_skill_shell_event_is_installed_where_claude_code_has_it(
    home: Path, claude_code: FakeClaude, monkeypatch: pytest.MonkeyPatch, version: str, has_it: bool
) -> None:
    path = settings_of(home)
    path.write_text(STYLES["two-space"])
    monkeypatch.setenv("FAKE_CLAUDE_VERSION", version)
    done = _claude_hook(home, "install", "--user")
    assert done.returncode == 0, done.stderr
    hooks = json.loads(path.read_text())["hooks"]
    if has_it:
        assert hooks[SKILL_SHELL] == [
            {
                "hooks": [
                    {"type": "command", "command": hook_command("pre-skill-shell-command"), "timeout": 10}
                ]
            }
        ]
        assert f"  {SKILL_SHELL}: {hook_command('pre-skill-shell-command')}  [timeout 10s]\n" in done.stdout
    else:
        assert SKILL_SHELL not in hooks and "PreToolUse" in hooks
        assert (
            f"  {SKILL_SHELL}: left out: Claude Code {version} has no such event (it came in 2.1.332); "
            "run claude-hook install again after updating Claude Code\n"
        ) in done.stdout
    assert [e["argv"] for e in claude_code.events()] == [["--version"]], "asked, never started"
    assert claude_code.events("version") and not claude_code.starts()
    assert _claude_hook(home, "uninstall", "--user").returncode == 0
    assert path.read_text() == STYLES["two-space"]


@pytest.mark.parametrize("how", ["not found", "no version in its answer", "fails"])
def test_a_claude_code_whose_version_cannot_be_told_gets_the_skill_shell_event(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """Left out, a newer Claude Code would run every skill's inline commands ungated; put in, an older
    one (2.1.328) keeps the rest of the file and only warns at each interactive start."""
    if how == "not found":
        monkeypatch.setenv("CLAUDE_BIN", str(tmp_path / "no-such-claude"))
    elif how == "no version in its answer":
        monkeypatch.setenv("FAKE_CLAUDE_VERSION", "latest")
    else:
        failing = tmp_path / "failing-claude"
        failing.write_text('#!/bin/sh\necho "2.1.328 (Claude Code)"\nexit 1\n')
        failing.chmod(0o755)
        monkeypatch.setenv("CLAUDE_BIN", str(failing))
    done = _claude_hook(home, "install", "--user")
    assert done.returncode == 0, done.stderr
    assert SKILL_SHELL in json.loads(settings_of(home).read_text())["hooks"]
    line = next(line for line in done.stdout.splitlines() if line.startswith(f"  {SKILL_SHELL}: "))
    assert line.endswith(
        "(Claude Code's version is unknown: one before 2.1.332 warns of this entry at each start; "
        "run claude-hook install again once `claude --version` works here)"
    )


def test_an_older_claude_code_loses_our_skill_shell_entry_and_keeps_the_users(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Installed while the version was unknown (or before a downgrade): installing again for 2.1.328
    takes ours out, so its start-up dialog goes, and leaves the user's own entry of that event."""
    theirs = {"hooks": [{"type": "command", "command": "~/audit-skill-shell.sh"}]}
    original = json.dumps({"hooks": {SKILL_SHELL: [theirs]}}, indent=2) + "\n"
    path = settings_of(home)
    path.write_text(original)
    assert main(["install", "--user"]) == 0
    assert len(json.loads(path.read_text())["hooks"][SKILL_SHELL]) == 2
    monkeypatch.setenv("FAKE_CLAUDE_VERSION", "2.1.328")
    assert main(["install", "--user"]) == 0
    hooks = json.loads(path.read_text())["hooks"]
    assert hooks[SKILL_SHELL] == [theirs] and "PreToolUse" in hooks
    assert main(["install", "--user"]) == 0 and json.loads(path.read_text())["hooks"] == hooks  # idempotent
    assert main(["uninstall", "--user"]) == 0
    assert path.read_text() == original
