"""The fleet's modules import downwards only: the command layer imports the fleet, never the reverse,
and ``fleet --help`` imports no layout parser (each verb resolves its fleet when it runs)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import claude_shepherd.fleet

FLEET = Path(claude_shepherd.fleet.__file__).resolve().parent
COMMANDS = "claude_shepherd.fleet.commands"


def _imports(path: Path) -> set[str]:
    """Every module *path* imports, at its top or inside a function."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_nothing_below_the_command_layer_imports_it() -> None:
    below = [
        p for p in FLEET.rglob("*.py") if "commands" not in p.relative_to(FLEET).parts and p.name != "cli.py"
    ]
    assert below
    upward = {
        str(p.relative_to(FLEET)): sorted(
            n for n in _imports(p) if n == COMMANDS or n.startswith(f"{COMMANDS}.")
        )
        for p in below
    }
    assert {k: v for k, v in upward.items() if v} == {}


def test_no_verb_asks_where_its_agents_run() -> None:
    """A verb resolves one fleet handle (fleet/resolve.py): none picks this machine's or the hosts'
    implementation itself."""
    implementations = {
        "claude_shepherd.fleet.local",
        "claude_shepherd.fleet.hosts.span_fleet",
        "claude_shepherd.fleet.hosts.span_status",
        "claude_shepherd.fleet.hosts.span_doctor",
    }
    for path in (FLEET / "commands").glob("*.py"):
        chosen = {n for n in _imports(path) if n in implementations or n.endswith(".spanning")}
        assert not chosen, f"{path.name} imports {sorted(chosen)}"


def test_fleet_help_reads_no_layout() -> None:
    probe = (
        "import sys\n"
        "from claude_shepherd.fleet.cli import run\n"
        "status = run(['--help'])\n"
        "loaded = [m for m in ('claude_shepherd.fleet.layout', 'pydantic', 'yaml') if m in sys.modules]\n"
        "print('LOADED', loaded, status, file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert "LOADED [] 0" in done.stderr, done.stderr


def test_fleet_status_runs_without_typer_rich_or_thread_pools(tmp_path: Path) -> None:
    """`fleet status` is run in loops: its path loads neither typer (nor the pydantic typer coerces
    options with) nor rich nor concurrent.futures; `fleet status --help` still goes to typer."""
    probe = (
        "import sys\n"
        "from claude_shepherd.fleet.cli import run\n"
        "status = run(sys.argv[1:])\n"
        "heavy = ('typer', 'rich', 'concurrent.futures', 'claude_shepherd.fleet.reports')\n"
        "print('LOADED', [m for m in heavy if m in sys.modules], status, file=sys.stderr)\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TMUX_TMPDIR": str(tmp_path)}
    for words, loaded in (
        (["status", "--socket", "fleet-none", "--json"], "LOADED [] 3"),
        (["status", "-L", "fleet-none"], "LOADED [] 3"),
        (["status", "--help"], "LOADED ['typer'"),
    ):
        done = subprocess.run(
            [sys.executable, "-c", probe, *words],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env=env,
        )
        assert loaded in done.stderr, (words, done.stderr)


def test_fleet_status_of_a_layout_checked_before_loads_no_yaml_nor_pydantic(tmp_path: Path) -> None:
    """The first `fleet status LAYOUT` parses the file (PyYAML, pydantic); the next ones read the checked
    layout kept for that text and say the same, until the file changes. A fleet of this machine alone
    loads nothing of fleets across hosts, nor psutil."""
    probe = (
        "import sys\n"
        "from claude_shepherd.fleet.cli import run\n"
        "status = run(sys.argv[1:])\n"
        "heavy = ('yaml', 'pydantic', 'claude_shepherd.fleet.layout.file', 'claude_shepherd.fleet.hosts.span',\n"
        "         'claude_shepherd.fleet.hosts.transport', 'psutil')\n"
        "print('LOADED', [m for m in heavy if m in sys.modules], status, file=sys.stderr)\n"
    )
    layout = tmp_path / "cached.yml"
    layout.write_text(
        "name: cached\nsocket_name: fleet-none\nwindows:\n  - main:\n      panes:\n        - A: claude-run\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TMUX_TMPDIR": str(tmp_path)}

    def status() -> tuple[str, str]:
        done = subprocess.run(
            [sys.executable, "-c", probe, "status", str(layout), "--json"],
            capture_output=True, text=True, timeout=60, check=False, env=env, cwd=tmp_path,
        )  # fmt: skip
        return done.stdout, done.stderr.splitlines()[-1]

    first, parsed = status()
    again, kept = status()
    assert parsed.startswith("LOADED ['yaml', 'pydantic', 'claude_shepherd.fleet.layout.file']"), parsed
    assert kept.startswith("LOADED []") and again == first and "'cached'" in first, (kept, again, first)
    layout.write_text(layout.read_text().replace("name: cached", "name: renamed"))
    changed, parsed = status()
    assert parsed.startswith("LOADED ['yaml'") and "fleet 'renamed' is not running" in changed, (
        parsed,
        changed,
    )
