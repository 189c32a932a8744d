"""Where ``--install-completion`` writes each command's completion script, for every shell.

One source for the installer (:mod:`claude_shepherd.supervisor.session.completion`) and the
PreToolUse hook, which protects these files: the shell's start-up files load them, so a
``session()`` function planted there would shadow the command in Claude's shell snapshot.
``session`` writes them where typer writes ``fleet``'s. Standard library only, no imports
beyond :mod:`os`: the hook loads it for every file write.
"""

from __future__ import annotations

import os

COMPLETED_PROGRAMS = ("session", "fleet")
"""Our commands with an ``--install-completion`` (``fleet``'s is typer's, at the same places)."""


def script_path(prog: str, shell: str, home: str) -> str:
    """The completion script of *prog* for *shell* (bash, zsh, fish) under *home*."""
    if shell == "bash":
        return os.path.join(home, ".bash_completions", f"{prog}.sh")
    if shell == "zsh":
        return os.path.join(home, ".zfunc", f"_{prog}")
    return os.path.join(home, ".config", "fish", "completions", f"{prog}.fish")


def script_paths(home: str) -> list[str]:
    """Every completion script our commands install under *home*."""
    return [
        script_path(prog, shell, home) for prog in COMPLETED_PROGRAMS for shell in ("bash", "zsh", "fish")
    ]
