"""Tab completion for ``session`` (argcomplete) and ``fleet`` (typer), and an example in every --help.

Each command runs as the shell would run it: the installed console script, the
completion protocol's environment variables, a private HOME for installs.
"""

from __future__ import annotations

import os
import subprocess
import typing as t
from pathlib import Path

import pytest
from support.fixtures import script

from claude_shepherd.fleet.cli import app
from claude_shepherd.supervisor.session.cli import COMMAND_LINE


def run(argv: list[str], home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in ("CLAUDECODE", "_ARGCOMPLETE", "SHELL")}
    full.update(HOME=str(home), **env)
    return subprocess.run(
        argv, capture_output=True, text=True, env=full, timeout=30, stdin=subprocess.DEVNULL
    )


def session_candidates(line: str, home: Path) -> list[str]:
    """What bash would offer after *line* (argcomplete's protocol, its answer written to a file)."""
    out = home / "candidates"
    done = run([script("session")], home, _ARGCOMPLETE="1", COMP_LINE=line, COMP_POINT=str(len(line)),
               _ARGCOMPLETE_IFS="\n", _ARGCOMPLETE_STDOUT_FILENAME=str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    return [word.strip() for word in out.read_text().splitlines() if word.strip()]


def test_session_completes_commands_and_their_options(tmp_path: Path) -> None:
    assert session_candidates("session ac", tmp_path) == ["activate"]
    assert {"deactivate", "dehydrate"} <= set(session_candidates("session de", tmp_path))
    assert "--fleet-pane" in session_candidates("session activate --", tmp_path)


def test_session_shows_and_installs_its_completion_once(tmp_path: Path) -> None:
    shown = run([script("session"), "--show-completion", "bash"], tmp_path)
    assert shown.returncode == 0 and "complete " in shown.stdout and " session" in shown.stdout
    (tmp_path / ".bashrc").write_text("alias ll='ls -l'")  # the person's own lines stay
    for _ in range(2):
        done = run([script("session"), "--install-completion", "bash"], tmp_path)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"bash completion installed in {tmp_path}/.bash_completions/session.sh")
    assert (tmp_path / ".bashrc").read_text() == (
        f"alias ll='ls -l'\nsource '{tmp_path}/.bash_completions/session.sh'\n"
    )
    assert (tmp_path / ".bash_completions" / "session.sh").read_text() == shown.stdout
    from_shell = run([script("session"), "--show-completion"], tmp_path, SHELL="/usr/bin/zsh")
    assert from_shell.stdout.startswith("#compdef session")
    fish = run([script("session"), "--install-completion", "fish"], tmp_path)
    assert fish.returncode == 0 and (tmp_path / ".config/fish/completions/session.fish").is_file()


@pytest.mark.parametrize("prog", ["session", "fleet"])
def test_an_agent_cannot_install_completion(prog: str, tmp_path: Path) -> None:
    for option in (["--install-completion", "bash"], ["--install-completion=bash"], ["--install-completion"]):
        refused = run([script(prog), *option], tmp_path, CLAUDECODE="1", SHELL="/bin/bash")
        assert refused.returncode == 1 and refused.stdout == "", option
        assert refused.stderr == (f"{prog}: error: an agent does not change your shell's start-up files; "
                                  f"run `{prog} --install-completion` in your own terminal\n")  # fmt: skip
    assert not (tmp_path / ".bashrc").exists() and not (tmp_path / ".bash_completions").exists()


def test_a_bad_shell_is_one_line(tmp_path: Path) -> None:
    bad = run([script("session"), "--show-completion", "tcsh"], tmp_path)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "completion is for bash, zsh, fish" in bad.stderr


def test_fleet_completes_its_commands(tmp_path: Path) -> None:
    done = run(
        [script("fleet")], tmp_path, _FLEET_COMPLETE="complete_bash", COMP_WORDS="fleet st", COMP_CWORD="1"
    )
    assert done.returncode == 0, done.stderr
    assert set(done.stdout.split()) == {"start", "stop", "status"}
    helped = run([script("fleet"), "--help"], tmp_path)
    assert "--install-completion" in helped.stdout and "--show-completion" in helped.stdout


@pytest.mark.parametrize("command", [row[0] for row in COMMAND_LINE])
def test_every_session_command_has_an_example(command: str, tmp_path: Path) -> None:
    done = run([script("session"), command, "--help"], tmp_path)
    assert done.returncode == 0 and "example:\n  session " + command in done.stdout


def _fleet_commands() -> list[str]:
    names: list[str] = []
    for info in app.registered_commands:
        names.append(info.name or t.cast(t.Any, info.callback).__name__.replace("_", "-"))
    return names


@pytest.mark.slow  # the real fleet CLI, a second a command (typer and rich start up each time)
@pytest.mark.parametrize("command", _fleet_commands())
def test_every_fleet_command_has_an_example(command: str, tmp_path: Path) -> None:
    done = run([script("fleet"), command, "--help"], tmp_path)
    assert done.returncode == 0 and f"Example: fleet {command}" in " ".join(done.stdout.split())


@pytest.mark.parametrize(
    ("argv", "example"),
    [
        (["fleet", "--help"], "Example: fleet start "),
        (["claude-hook", "--help"], "example:\n  claude-hook install "),
        (["claude-hook", "install", "--help"], "example:\n  claude-hook install "),
        (["claude-hook", "uninstall", "--help"], "example:\n  claude-hook uninstall "),
        (["claude-run", "--help"], "examples:\n  claude-run "),
        (["session", "--help"], "example:\n  session activate "),
    ],
)
def test_every_command_has_an_example(argv: list[str], example: str, tmp_path: Path) -> None:
    done = run([script(argv[0]), *argv[1:]], tmp_path)
    assert done.returncode == 0 and example in done.stdout, done.stdout
