"""``session --show-completion`` / ``--install-completion``: tab completion for bash, zsh and fish.

The completing is argcomplete's: the shell runs ``session`` with
``_ARGCOMPLETE`` set and reads the candidates back. Only then is argcomplete
imported — agents run ``session`` at every step, so its start-up pays for
nothing else. ``--install-completion`` writes the script where ``fleet
--install-completion`` (typer) writes its own, so both commands complete the
same way, and adds the one line that loads it to the shell's start-up file
once; running it again changes nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from claude_shepherd.supervisor.errors import ShepherdError, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds; session runs at every agent step
    import typing as t

SHELLS = ("bash", "zsh", "fish")
AGENT_ENV = "CLAUDECODE"
"""Set by Claude Code in its tools' environment: an agent does not edit the person's shell start-up files."""


def requested(env: t.Mapping[str, str] | None = None) -> bool:
    """Is the shell asking for completions (argcomplete's protocol)?"""
    return "_ARGCOMPLETE" in (os.environ if env is None else env)


def complete(parser: argparse.ArgumentParser) -> None:
    """Answer the shell and exit (argcomplete writes the candidates to the descriptor the script opened)."""
    import argcomplete

    argcomplete.autocomplete(parser)


def shell_of(name: str | None, env: t.Mapping[str, str] | None = None) -> str:
    """*name*, else the login shell from ``$SHELL``; one of :data:`SHELLS`."""
    env = os.environ if env is None else env
    shell = name or Path(env.get("SHELL", "")).name
    if shell not in SHELLS:
        got = f"shell {shell!r}" if shell else "no $SHELL"
        raise UsageError(
            f"{got}: completion is for {', '.join(SHELLS)}; name one, e.g. --show-completion bash"
        )
    return shell


def script(prog: str, shell: str) -> str:
    from argcomplete.shell_integration import shellcode

    return str(shellcode([prog], shell=shell))


def install(prog: str, shell: str, home: Path) -> tuple[Path, Path | None]:
    """Write the completion script and load it from the shell's start-up file; (script, start-up file)."""
    rc: Path | None
    line: str | None
    from claude_shepherd.supervisor.session.completion_files import script_path

    path = Path(script_path(prog, shell, str(home)))
    if shell == "bash":
        rc, line = home / ".bashrc", f"source '{path}'"
    elif shell == "zsh":
        rc, line = home / ".zshrc", "fpath+=~/.zfunc; autoload -Uz compinit; compinit"
    else:
        rc, line = None, None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(script(prog, shell) + "\n", encoding="utf-8")
    if rc is not None and line is not None:
        text = rc.read_text(encoding="utf-8") if rc.is_file() else ""
        if line not in text.splitlines():
            rc.write_text(
                f"{text}{'' if not text or text.endswith(chr(10)) else chr(10)}{line}\n", encoding="utf-8"
            )
    return path, rc


def refuse_agent(prog: str, env: t.Mapping[str, str] | None = None) -> None:
    """Installing completion edits the person's shell start-up files: never from an agent's tools."""
    if (os.environ if env is None else env).get(AGENT_ENV):
        raise ShepherdError("an agent does not change your shell's start-up files; run "
                            f"`{prog} --install-completion` in your own terminal")  # fmt: skip


class ShowCompletion(argparse.Action):
    """``--show-completion [SHELL]``: print the script, like ``--version`` prints the version."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: t.Any, values: t.Any, option: str | None = None
    ) -> None:
        sys.stdout.write(script(parser.prog, shell_of(values)) + "\n")
        parser.exit()


class InstallCompletion(argparse.Action):
    """``--install-completion [SHELL]``: install it for the person (refused inside an agent's tools)."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: t.Any, values: t.Any, option: str | None = None
    ) -> None:
        refuse_agent(parser.prog)
        shell = shell_of(values)
        path, rc = install(parser.prog, shell, Path.home())
        loaded = f", loaded from {rc}" if rc else ""
        sys.stdout.write(f"{shell} completion installed in {path}{loaded}; open a new shell to use it\n")
        parser.exit()


def add_options(parser: argparse.ArgumentParser) -> None:
    """The two options, as typer names them for ``fleet``."""
    parser.add_argument("--install-completion", nargs="?", metavar="SHELL", action=InstallCompletion, default=argparse.SUPPRESS,
                        help=f"install tab completion for SHELL ({', '.join(SHELLS)}; default: $SHELL)")  # fmt: skip
    parser.add_argument("--show-completion", nargs="?", metavar="SHELL", action=ShowCompletion, default=argparse.SUPPRESS,
                        help="print the completion script, to install it yourself")  # fmt: skip
