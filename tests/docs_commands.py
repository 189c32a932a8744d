"""docs/COMMANDS.md and docs/commands/*.md: every command's real ``--help``, written out.

Rewrite them from the repository root after a help text changed::

    .venv/bin/python tests/docs_commands.py --write

``tests/test_docs_reference.py`` regenerates them in memory and fails when a file differs.
The help is asked of the scripts beside this interpreter, with ``COLUMNS=100``, ``TERM=dumb``
and ``NO_COLOR=1``, so the text does not depend on the terminal it is run from.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
WRITE_COMMAND = ".venv/bin/python tests/docs_commands.py --write"
PROGRAMS = ("claude-run", "session", "fleet", "claude-hook")
ABOUT = {
    "claude-run": "starts Claude Code under the supervisor",
    "session": "what agents run to record their work",
    "fleet": "tmux fleets of supervised agents",
    "claude-hook": "the hooks and status line Claude Code runs",
}
HEADER = "<!-- Generated from the commands' --help by `{command}`; do not edit. -->\n\n"


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLEET_", "CLAUDE_", "_TYPER"))}
    env.update(
        COLUMNS="100", LINES="40", TERM="dumb", NO_COLOR="1", LC_ALL="C.UTF-8", PYTHONIOENCODING="utf-8"
    )
    env.pop("FORCE_COLOR", None)
    return env


def help_text(argv: list[str]) -> str:
    """One command's ``--help``, as a person at a 100-column terminal reads it."""
    return _help(tuple(argv))


@cache
def _help(argv: tuple[str, ...]) -> str:
    program = Path(sys.executable).parent / argv[0]
    done = subprocess.run(
        [str(program), *argv[1:], "--help"],
        capture_output=True,
        text=True,
        env=_environment(),
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} --help exited {done.returncode}: {done.stderr.strip()}")
    return "\n".join(line.rstrip() for line in done.stdout.strip("\n").splitlines())


def subcommands(text: str) -> list[str]:
    """The subcommands a help text lists: typer's ``Commands:`` section, argparse's COMMAND choices."""
    names: list[str] = []
    section = False
    for line in text.splitlines():
        if line.startswith("Commands:"):
            section = True
            continue
        if section:
            match = re.match(r"  ([a-z][a-z0-9-]*)\s", line + " ")
            if match:
                names.append(match.group(1))
            elif not line.startswith(" "):  # a blank line or the next section ends the list
                section = False
            continue
        match = re.match(r"    ([a-z][a-z0-9-]*)\s{2,}\S", line)
        if match:
            names.append(match.group(1))
    return names


def commands(program: str) -> list[list[str]]:
    """The program and every subcommand under it, nested ones too, in the order their help lists them."""
    found: list[list[str]] = []
    queue = [[program]]
    while queue:
        argv = queue.pop(0)
        found.append(argv)
        if program == "claude-hook":
            continue
        below = [[*argv, name] for name in subcommands(help_text(argv))]
        with ThreadPoolExecutor(max_workers=4) as pool:  # ask the help of a level at once
            list(pool.map(help_text, below))
        queue[0:0] = below
    return found


def _slug(argv: list[str]) -> str:
    return "-".join(argv)


def page(program: str) -> str:
    """docs/commands/PROGRAM.md: a heading and a code block per command."""
    every = commands(program)
    lines = [HEADER.format(command=WRITE_COMMAND), f"# `{program}`: every command's help\n\n"]
    if len(every) > 1:
        lines.append("".join(f"- [`{' '.join(argv)}`](#{_slug(argv)})\n" for argv in every) + "\n")
    for argv in every:
        lines.append(
            f'<a id="{_slug(argv)}"></a>\n\n## `{" ".join(argv)}`\n\n```text\n{help_text(argv)}\n```\n\n'
        )
    return "".join(lines).rstrip("\n") + "\n"


def index() -> str:
    """docs/COMMANDS.md: where each program's reference is."""
    rows = "".join(f"- [`{p}`](commands/{p}.md): {ABOUT[p]}.\n" for p in PROGRAMS)
    return (
        HEADER.format(command=WRITE_COMMAND)
        + "# Command reference\n\n"
        + "Every command's `--help`, as the installed scripts print it. One page per program:\n\n"
        + rows
        + f"\nAfter changing a help text, rewrite these pages from the repository root:\n`{WRITE_COMMAND}`.\n"
    )


def pages() -> dict[Path, str]:
    """Every generated file and its text."""
    out = {DOCS / "COMMANDS.md": index()}
    for program in PROGRAMS:
        out[DOCS / "commands" / f"{program}.md"] = page(program)
    return out


def main(argv: list[str]) -> int:
    if argv != ["--write"]:
        print(f"usage: {WRITE_COMMAND}", file=sys.stderr)
        return 2
    for path, text in pages().items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)} ({len(text.encode())} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
