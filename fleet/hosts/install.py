"""``fleet host add``: make another machine able to run its part of a fleet.

It installs this very installation there — sent over the SSH connection as a
source archive (or, for an installed wheel, as that wheel), with the same
versions of its dependencies — into a venv of its own in the login's home,
then installs the hooks. Each step is one SSH call and one line for the person.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import io
import json
import re
import shlex
import tarfile
import typing as t
import zipfile
from dataclasses import dataclass
from pathlib import Path

import claude_shepherd.fleet as fleet_package
from claude_shepherd.fleet.hosts.transport import Reply, SshHost
from claude_shepherd.supervisor import __version__
from claude_shepherd.supervisor.errors import ShepherdError

DIST = "claude-shepherd"
INSTALL_TIMEOUT = 900.0
"""Seconds pip may take there (it fetches the dependencies from that host's package index)."""
PACKAGES = ("supervisor", "hooks", "fleet")
"""The folders of a source checkout that make the package (pyproject.toml maps them)."""
_SKIP = re.compile(r"(^|/)(__pycache__|\.mypy_cache|\.ruff_cache)(/|$)|\.py[co]$")


@dataclass(frozen=True)
class Payload:
    name: str
    data: bytes
    what: str
    digest: str
    """Of the files' paths and contents: the same code gives the same digest, whatever their dates."""


CLAUDE_PROBE = """
import os
from claude_shepherd.supervisor.claude_run.claude_bin import ClaudeNotFoundError, find_claude
try:
    print("claude:", find_claude())
except ClaudeNotFoundError as exc:
    print("missing:", exc, "" if os.environ.get("CLAUDE_BIN") else f"(PATH there is {os.environ.get('PATH', '')})")
"""
"""Run by the host's own Python: where ``claude-run`` there finds Claude Code, as its agents will."""

RECORD = "installed.json"
"""What ``fleet host add`` installed on a host (version and digest), in its install folder there."""


def _source_root() -> Path | None:
    """The source tree this installation runs from (an editable install), or None."""
    root = Path(fleet_package.__file__).resolve().parents[1]
    if (root / "pyproject.toml").is_file() and all((root / p).is_dir() for p in PACKAGES):
        return root
    return None


def payload() -> Payload:
    """This installation as something pip installs: the source tree it runs from, else its wheel."""
    root = _source_root()
    return _source(root) if root is not None else _wheel()


def _source_files(root: Path) -> list[Path]:
    files = [root / name for name in ("pyproject.toml", "README.md", "LICENSE") if (root / name).is_file()]
    for package in PACKAGES:
        files += [
            path
            for path in sorted((root / package).rglob("*"))
            if path.is_file() and not _SKIP.search(path.relative_to(root).as_posix())
        ]
    return files


def _source(root: Path) -> Payload:
    top = f"claude_shepherd-{__version__}"
    files = _source_files(root)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in files:
            tar.add(path, f"{top}/{path.relative_to(root).as_posix()}")
    digest = _digest((path.relative_to(root).as_posix(), path.read_bytes()) for path in files)
    return Payload(f"{top}.tar.gz", buffer.getvalue(), f"the source at {root}", digest)


def _wheel() -> Payload:
    """The installed distribution packed again as a wheel (its RECORD still matches every file)."""
    dist = importlib.metadata.distribution(DIST)
    buffer = io.BytesIO()
    contents: list[tuple[str, bytes]] = []
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as wheel:
        for file in dist.files or ():
            path = Path(str(dist.locate_file(file)))
            parts = file.parts
            if parts[0] == ".." or "__pycache__" in parts or not path.is_file():
                continue  # console scripts live outside site-packages: pip writes them anew
            wheel.write(path, file.as_posix())
            if file.suffix == ".py":
                contents.append((file.as_posix(), path.read_bytes()))
    name = f"claude_shepherd-{__version__}-py3-none-any.whl"
    return Payload(name, buffer.getvalue(), "the installed wheel", _digest(contents))


def _digest(files: t.Iterable[tuple[str, bytes]]) -> str:
    total = hashlib.sha256()
    for name, data in sorted(files):
        total.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return total.hexdigest()[:16]


def fingerprint() -> str:
    """This installation's digest (:attr:`Payload.digest`), as ``fleet host add`` records it on a host."""
    root = _source_root()
    if root is None:
        return payload().digest
    return _digest((path.relative_to(root).as_posix(), path.read_bytes()) for path in _source_files(root))


def pins() -> list[str]:
    """``name==version`` of each dependency as installed here, so the host runs what this machine runs."""
    out: list[str] = []
    for requirement in importlib.metadata.requires(DIST) or ():
        if "extra ==" in requirement:
            continue
        name = re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0]
        try:
            out.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def _check(reply: Reply, doing: str) -> str:
    if not reply.reached:
        raise ShepherdError(f"{reply.host} did not answer while {doing}: {reply.problem}")
    if reply.status != 0:
        said = (reply.stderr.strip() or reply.stdout.strip() or f"exit status {reply.status}").splitlines()
        raise ShepherdError(f"{reply.host}: {doing} failed: {' / '.join(said[-3:])}")
    return reply.stdout.strip()


def add(name: str, python: str, tell: t.Callable[[str], None]) -> None:
    """Install this claude-shepherd on host *name* and its hooks; each step said as it is done."""
    host = SshHost(name)
    home = shlex.quote(host.home)
    probe = (
        f"command -v tmux >/dev/null && tmux -V || echo 'tmux: missing'; "
        f"{shlex.quote(python)} -c 'import sys, venv, ensurepip; print(\"python\", *sys.version_info[:3])' "
        "2>/dev/null || echo 'python: missing'"
    )
    found = _check(host.run(["sh", "-c", probe]), "checking tmux and Python").splitlines()
    tmux = next((line for line in found if line.startswith("tmux")), "tmux: missing")
    py = next((line for line in found if line.startswith("python")), "python: missing")
    if "missing" in tmux:
        raise ShepherdError(
            f"{name} has no tmux; install it there (e.g. apt install tmux), then add it again"
        )
    numbers = [int(n) for n in py.split()[1:] if n.isascii() and n.isdigit()]
    if "missing" in py or numbers[:2] < [3, 11]:
        raise ShepherdError(
            f"{name} has no {python} 3.11+ with venv ({py}); install one there, or say which with --python"
        )
    tell(f"{name}: {tmux}, Python {'.'.join(map(str, numbers))}")
    package = payload()
    tell(f"{name}: sending claude-shepherd {__version__} ({package.what}, {len(package.data) // 1024} KiB)")
    upload = f"mkdir -p {home}/dist && cat > {home}/dist/{package.name}"
    _check(host.run(["sh", "-c", upload], stdin=package.data), "sending the package")
    deps = pins()
    tell(f"{name}: installing into ~/{host.home}/venv ({', '.join(deps)})")
    pip = " ".join([f"{home}/dist/{shlex.quote(package.name)}", *map(shlex.quote, deps)])
    install = (
        f"cd && {{ test -x {home}/venv/bin/python || {shlex.quote(python)} -m venv {home}/venv; }} && "
        f"{home}/venv/bin/python -m pip install --quiet --disable-pip-version-check {pip} && "
        # the same version number may be other code (a checkout): this package is always replaced
        f"{home}/venv/bin/python -m pip install --quiet --disable-pip-version-check --force-reinstall "
        f"--no-deps {home}/dist/{package.name}"
    )
    _check(host.run(["sh", "-c", install], timeout=INSTALL_TIMEOUT), "installing claude-shepherd")
    hooks = _check(
        host.run([f"{host.home}/venv/bin/claude-hook", "install", "--user"]), "installing the hooks"
    )
    for line in hooks.splitlines():
        if not line.startswith(" "):  # the settings file and the skill; not each hook's command line
            tell(f"{name}: hooks: {line}")
    version = _check(host.run(host.fleet_argv(["--version"])), "checking the version")
    if version.split()[-1:] != [__version__]:
        raise ShepherdError(f"{name}: installed, but it says {version!r}, not fleet {__version__}")
    record = json.dumps({"version": __version__, "digest": package.digest})
    _check(host.run(["sh", "-c", f"cat > {home}/{RECORD}"], stdin=record.encode()), "recording the install")
    claude = _check(host.run([f"{host.home}/venv/bin/python", "-c", CLAUDE_PROBE]), "looking for Claude Code")
    if not claude.startswith("claude: "):
        raise ShepherdError(
            f"{name}: claude-shepherd is installed, but its agents would die at start: "
            f"{claude.removeprefix('missing: ')}; then `fleet doctor` checks again"
        )
    tell(f"{name}: Claude Code at {claude.removeprefix('claude: ')}")
    tell(f"{name} is ready ({version}); give a layout's window `host: {name}` to run it there")
