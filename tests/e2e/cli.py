"""Install and run the real Claude Code CLI, offline, against the mock API.

The pinned native CLI (``CLI_VERSION``, or the version a test asks for) is
installed from the npm registry once into a cache directory, a folder per
version; each test gets a scratch ``HOME`` whose ``~/.claude.json`` has
onboarding done, the API key approved and the project trusted, so the CLI
starts straight into work in ``-p`` mode and interactively (in tmux).
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import termios
import uuid
from pathlib import Path

from support.waiting import wait_until

from claude_shepherd.supervisor.session.store import file_lock

PINNED = "2.1.328"
"""The release the suite is pinned to."""
VERSION_ENV = "CLAUDE_SHEPHERD_E2E_VERSION"
CLI_VERSION = os.environ.get(VERSION_ENV, "").strip() or PINNED
"""The version the suite runs: the pinned one, or ``$CLAUDE_SHEPHERD_E2E_VERSION`` (CI's run against the
newest release); a test may ask for another (``@pytest.mark.claude_version(V)``, conftest.py)."""
API_KEY = "sk-ant-api03-" + "e2e" * 30
OAUTH_TOKEN = "sk-ant-oat01-" + "e2e" * 30
"""Any string does offline: the CLI sends it as ``Authorization: Bearer`` and acts as a subscription login."""
MODEL = "claude-sonnet-4-5"  # 200k window: easy to push past the overflow threshold
CACHE_ENV = "CLAUDE_SHEPHERD_E2E_CACHE"


class Unavailable(Exception):
    """The CLI cannot be installed here (no npm, registry unreachable)."""


def _package() -> str:
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower()
    )
    system = platform.system().lower()
    if arch is None or system not in {"linux", "darwin"}:
        raise Unavailable(f"no native Claude Code package for {system}/{platform.machine()}")
    return f"@anthropic-ai/claude-code-{system}-{arch}"


def cache_dir(version: str = CLI_VERSION) -> Path:
    base = os.environ.get(CACHE_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "claude-shepherd"
    )
    return Path(base) / f"claude-code-{version}"


def install_cli(version: str = CLI_VERSION) -> Path:
    """The path of the ``claude`` binary of *version* (the pinned one by default), installing it on first use."""
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise ValueError(f"{version!r} is not a Claude Code version (MAJOR.MINOR.PATCH)")
    package = _package()
    prefix = cache_dir(version)
    binary = prefix / "node_modules" / package / "claude"
    prefix.mkdir(parents=True, exist_ok=True)
    with file_lock(prefix / ".install.lock", timeout=600):
        if not _works(binary, version):
            npm = shutil.which("npm")
            if npm is None:
                raise Unavailable("npm is not installed, so the Claude Code CLI cannot be fetched")
            done = subprocess.run(
                [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--ignore-scripts",
                 "--no-save", f"{package}@{version}"],
                capture_output=True, text=True, timeout=600,
            )  # fmt: skip
            if done.returncode != 0 or not _works(binary, version):
                tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
                raise Unavailable(f"npm could not install {package}@{version}: {tail[0]}")
    return binary


def _works(binary: Path, version: str) -> bool:
    if not binary.is_file():
        return False
    try:
        out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.stdout.split(" ", 1)[0] == version  # "2.1.328 (Claude Code)"


def prepare_home(home: Path, project: Path) -> None:
    """A scratch HOME in which the CLI asks no questions."""
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    trusted = {
        str(project): {"hasTrustDialogAccepted": True},
        os.path.realpath(project): {"hasTrustDialogAccepted": True},
    }
    config = {
        "hasCompletedOnboarding": True,
        "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
        "bypassPermissionsModeAccepted": True,
        "projects": trusted,
    }
    (home / ".claude.json").write_text(json.dumps(config))


_DROP_PREFIXES = ("CLAUDE", "ANTHROPIC", "TMUX", "WATCHDOG", "SESSION_REQUIRED", "FAKE_CLAUDE")


def clean_env(home: Path, api_url: str, oauth: bool = False, **extra: str) -> dict[str, str]:
    """The environment for a CLI run: nothing of an outer agent leaks in. *oauth*: log in as a
    subscription (``CLAUDE_CODE_OAUTH_TOKEN``, no API key), whose usage windows the CLI reports."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROP_PREFIXES)}
    env.update(
        HOME=str(home),
        ANTHROPIC_BASE_URL=api_url,
        **({"CLAUDE_CODE_OAUTH_TOKEN": OAUTH_TOKEN} if oauth else {"ANTHROPIC_API_KEY": API_KEY}),
        DISABLE_TELEMETRY="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        IS_SANDBOX="1",
        TERM="xterm-256color",
    )
    env.update(extra)
    return env


def takes_keys(tty: str) -> bool:
    """Whether a program has put the terminal *tty* in raw mode: the TUI reads keys itself.

    Until then (a pane just started, or claude-run restored cooked mode after a crash) the
    terminal's line discipline echoes what is typed, so it shows on the screen, and Claude,
    starting, may throw it away, Enter included.
    """
    try:
        fd = os.open(tty, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        return not termios.tcgetattr(fd)[3] & termios.ICANON
    except termios.error:
        return False
    finally:
        os.close(fd)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def make_git_repo(project: Path) -> Path:
    """*project* (a world's, whose ``.git`` is a bare marker folder) as a real repository with one commit."""
    shutil.rmtree(project / ".git")
    git(project, "init", "-q", "-b", "main")
    git(project, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "init")
    return project


def transcript_path(home: Path, project: Path, session_id: str) -> Path:
    """Where the CLI keeps a conversation: its project folder names the path with every character
    but letters and digits written ``-``."""
    slug = re.sub(r"[^A-Za-z0-9]", "-", os.path.realpath(project))
    return home / ".claude" / "projects" / slug / f"{session_id}.jsonl"


class Tmux:
    """A private tmux server (never the user's), to run the CLI interactively."""

    def __init__(self, prefix: str = "e2e") -> None:
        self.socket = f"{prefix}-pytest-{uuid.uuid4().hex[:8]}"
        self.path: Path | None = None

    def __call__(self, *args: str, check: bool = True) -> str:
        done = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=15)
        if check and done.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

    def start(self, command: list[str], env: dict[str, str], cwd: Path, name: str = "e2e") -> str:
        """Start *command* as the process of a new pane; returns the pane id."""
        exports = [arg for key, value in env.items() for arg in ("-e", f"{key}={value}")]
        self("-f", "/dev/null", "new-session", "-d", "-s", name, "-x", "200", "-y", "50", "-c", str(cwd),
             *exports, _shell_join(command))  # fmt: skip
        self("set-option", "-t", name, "remain-on-exit", "on")
        self.path = Path(self("display-message", "-p", "-t", name, "#{socket_path}").strip())
        return self("display-message", "-p", "-t", name, "#{pane_id}").strip()

    def screen(self, target: str) -> str:
        return self("capture-pane", "-p", "-t", target, check=False)

    def type(self, target: str, text: str) -> None:
        """Type *text* once the TUI reads keys, and Enter once the prompt shows it."""
        tty = self("display-message", "-p", "-t", target, "#{pane_tty}").strip()
        wait_until(lambda: takes_keys(tty), 60, "the TUI to read keys (raw mode)")
        self("send-keys", "-t", target, "-l", text)
        self.wait_for(target, text[:20])
        self("send-keys", "-t", target, "Enter")

    def wait_for(self, target: str, needle: str, timeout: float = 30) -> str:
        def shown() -> str | None:
            screen = self.screen(target)
            return screen if needle in screen else None

        try:
            return wait_until(shown, timeout, f"{needle!r} on the screen")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; screen:\n{self.screen(target)}") from None

    def kill(self) -> None:
        self("kill-server", check=False)
        if self.path is not None:
            self.path.unlink(missing_ok=True)


def _shell_join(argv: list[str]) -> str:
    import shlex

    return " ".join(shlex.quote(a) for a in argv)
