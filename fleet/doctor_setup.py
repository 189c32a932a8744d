"""``fleet doctor``'s look at what an agent needs to start here: our hooks in the settings Claude reads,
and Claude Code where ``claude-run`` looks for it. The hooks are installed by ``--fix``; Claude Code is
the person's to install.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import typing as t
from pathlib import Path

from claude_shepherd.fleet.doctor_finding import Finding
from claude_shepherd.hooks import claude_settings
from claude_shepherd.supervisor.claude_run.claude_bin import ClaudeNotFoundError, find_claude
from claude_shepherd.supervisor.env import CLAUDE_BIN_ENV
from claude_shepherd.supervisor.errors import ShepherdError


def settings_files(project: Path, claude_config: Path) -> list[Path]:
    """The settings files Claude Code reads for a Claude started in *project*."""
    return [
        claude_config / "settings.json",
        project / ".claude" / "settings.json",
        project / ".claude" / "settings.local.json",
    ]


def _our_events(path: Path) -> set[str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    events: set[str] = set()
    hooks = data.get("hooks") if isinstance(data, dict) else None
    if isinstance(hooks, dict):
        for event, groups in hooks.items():
            for group in groups if isinstance(groups, list) else []:
                for hook in group.get("hooks", []) if isinstance(group, dict) else []:
                    if isinstance(hook, dict) and claude_settings.ours(hook.get("command")):
                        events.add(event)
    return events


def required_events() -> list[str]:
    """The events ``claude-hook install`` installs for the Claude Code here (so one that came in a newer
    Claude Code, PreSkillShellCommand, is missing once Claude Code was updated after the install)."""
    return [
        registration.event for registration in claude_settings.registrations(claude_settings.claude_version())
    ]


def _install_hooks(claude_config: Path) -> t.Callable[[], str]:
    def fix() -> str:
        env = dict(os.environ, CLAUDE_CONFIG_DIR=str(claude_config))
        done = subprocess.run(
            [sys.executable, "-m", "claude_shepherd.hooks", "install"],
            capture_output=True, text=True, env=env, timeout=60, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        if done.returncode != 0:
            raise ShepherdError(f"claude-hook install failed: {(done.stderr or done.stdout).strip()[:200]}")
        return f"installed the hooks into {claude_config / 'settings.json'}"

    return fix


def find_missing_hooks(projects: t.Iterable[Path], claude_config: Path) -> list[Finding]:
    required = required_events()
    findings: list[Finding] = []
    for project in sorted(set(projects)):
        found: set[str] = set()
        for path in settings_files(project, claude_config):
            found |= _our_events(path)
        missing = [event for event in required if event not in found]
        if missing:
            findings.append(
                Finding(
                    "hooks",
                    f"hooks {', '.join(missing)} are not installed in the settings Claude reads for {project} "
                    f"({claude_config / 'settings.json'}, .claude/settings*.json)",
                    _install_hooks(claude_config),
                )
            )
            break  # one install (user scope) covers every project
    return findings


def find_missing_claude(env: t.Mapping[str, str]) -> list[Finding]:
    """Claude Code where ``claude-run`` looks for it in *env* (the environment ``fleet start`` gives its
    agents), or a finding saying where it was looked for: without it every agent dies at start."""
    try:
        find_claude(env)
    except ClaudeNotFoundError as exc:
        path = "" if env.get(CLAUDE_BIN_ENV, "").strip() else f" (PATH here is {env.get('PATH', '')})"
        return [Finding("claude", f"every agent started here would die at once: {exc}{path}")]
    return []
