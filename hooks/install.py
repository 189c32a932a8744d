"""``claude-hook install`` / ``uninstall``: put our hooks into a Claude Code settings.json, or take them out.

Install merges our entries (:mod:`.claude_settings`: each event the Claude Code that ``claude-run``
would start has) into the user's settings, the project's or a named file. A settings file that is not
valid JSON is refused, never overwritten.

It also installs the ``session`` skill: the restart prompt ``/session continue …``
is a slash command, and Claude Code answers an unknown one locally without ever
calling the model (docs/CLAUDE_CODE.md §6.10) — without the skill every restart stalls.

Uninstall removes only what is ours. The user's original bytes are kept beside
the settings file while we are installed, so an install/uninstall round trip
gives back the file byte for byte (formatting included) unless the user changed
something in between — then the result is re-serialised in the file's style.

Not on the hook path: argparse, shlex and friends are fine here.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import typing as t
from pathlib import Path

from claude_shepherd.hooks.claude_settings import (
    PRE_TOOL_USE,
    REGISTRATIONS,
    STATUS_LINE,
    SettingsError,
    claude_version,
    dump,
    hook_command,
    merge,
    package_root,
    parse_settings,
    pruned,
    registrations,
    shown_version,
    strip,
)
from claude_shepherd.hooks.protocol import HOOK_EVENTS
from claude_shepherd.supervisor.env import CONFIG_DIR_ENV
from claude_shepherd.supervisor.errors import ShepherdError, run_main
from claude_shepherd.supervisor.session.paths import project_root
from claude_shepherd.supervisor.session.programs import HOOK_TIMEOUT
from claude_shepherd.supervisor.session.store import write_atomic

BACKUP_SUFFIX = ".before-claude-hook"
SKILL_NAME = "session"
SKILL_SOURCE = Path(__file__).with_name("skill") / "SKILL.md"


def check_installation(python: str, root: Path) -> None:
    """Refuse to write commands that would not run (fail-open in Claude Code)."""
    if not os.path.isabs(python) or not os.access(python, os.X_OK):
        raise SettingsError(f"the interpreter {python} is not an absolute, executable path")
    for package in ("hooks", "supervisor"):
        if not (root / package / "__init__.py").is_file():
            raise SettingsError(f"{root} does not hold the {package} package; reinstall claude-shepherd")
    probe = json.dumps(
        {"hook_event_name": "PreToolUse", "tool_name": "AskUserQuestion", "tool_input": {}, "cwd": "/"}
    )
    env = {k: v for k, v in os.environ.items() if k != "SESSION_REQUIRED"}
    env["CLAUDE_SESSIONS_DIR"] = str(Path(tempfile.gettempdir()) / "claude-hook-install-probe-none")
    try:
        done = subprocess.run(
            shlex.split(hook_command(PRE_TOOL_USE, python, root)),
            input=probe,
            capture_output=True,
            text=True,
            timeout=30,
            env=env,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SettingsError(f"the hook command does not run: {exc}") from None
    if done.returncode != 0 or done.stdout.strip():
        raise SettingsError(
            f"the hook command answered unexpectedly (exit {done.returncode}): "
            f"{(done.stdout + done.stderr).strip()[:200]}"
        )


# --------------------------------------------------------------------------- files


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise SettingsError(f"{path} is not UTF-8 text; it was not changed") from None


def write_file(path: Path, text: str) -> None:
    """Atomic replace of the real file behind *path*, keeping its permissions."""
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(target, text, keep_mode=True)


def backup_path(settings_path: Path) -> Path:
    return settings_path.with_name(settings_path.name + BACKUP_SUFFIX)


# --------------------------------------------------------------------------- the skill


def skill_text() -> str:
    return SKILL_SOURCE.read_text(encoding="utf-8")


def skill_is_ours(text: str) -> bool:
    return text == skill_text()


# --------------------------------------------------------------------------- scopes


class Target(t.NamedTuple):
    settings: Path
    skill: Path  # .../skills/session/SKILL.md
    named: bool = False  # given with --settings-file: its folder must exist already


def user_config_dir() -> Path:
    configured = os.environ.get(CONFIG_DIR_ENV, "").strip()
    return Path(configured).expanduser() if configured else Path.home() / ".claude"


def target_for(args: argparse.Namespace) -> Target:
    if args.project:
        base = project_root(Path.cwd()) / ".claude"
        return Target(base / "settings.json", base / "skills" / SKILL_NAME / "SKILL.md")
    skill = user_config_dir() / "skills" / SKILL_NAME / "SKILL.md"
    if args.settings_file:
        return Target(Path(os.path.abspath(os.path.expanduser(args.settings_file))), skill, named=True)
    return Target(user_config_dir() / "settings.json", skill)


# --------------------------------------------------------------------------- install / uninstall


def install(
    target: Target, *, dry_run: bool, replace_status_line: bool, say: t.Callable[[str], None]
) -> None:
    commands = {event: hook_command(event) for event in HOOK_EVENTS}
    check_installation(sys.executable, package_root())
    version = claude_version()
    wanted = registrations(version)
    if target.named and not Path(os.path.realpath(target.settings)).parent.is_dir():
        raise SettingsError(
            f"the folder of {target.settings} does not exist; create it first or name a settings file in an "
            "existing folder"
        )
    text = read_text(target.settings)
    settings = parse_settings(text, target.settings) if text is not None else {}
    merged = merge(settings, commands, replace_status_line=replace_status_line, wanted=wanted)
    if merged == settings:
        say(f"Settings: {target.settings} (already up to date)")
    else:
        new_text = dump(merged, text)
        if dry_run:
            say(f"Settings: {target.settings} would become:\n{new_text.rstrip()}")
        else:
            backup = backup_path(target.settings)
            if text is None:  # nothing to keep: uninstall removes the file once only our entries are left
                write_file(target.settings, new_text)
                say(
                    f"Settings: {target.settings} (created: there was none; `claude-hook uninstall` removes it)"
                )
            else:
                if not backup.exists():
                    write_file(backup, text)
                write_file(target.settings, new_text)
                say(f"Settings: {target.settings} (updated; your previous file is kept as {backup.name})")
    for registration in REGISTRATIONS:
        event, argument, matcher, since = registration
        if registration not in wanted and version is not None and since is not None:  # known to be older
            say(
                f"  {event}: left out: Claude Code {shown_version(version)} has no such event (it came in "
                f"{shown_version(since)}); run claude-hook install again after updating Claude Code"
            )
            continue
        where = f" (matcher {matcher})" if matcher else ""
        unsure = ""
        if since is not None and version is None:
            unsure = (
                f" (Claude Code's version is unknown: one before {shown_version(since)} warns of this entry at "
                "each start; run claude-hook install again once `claude --version` works here)"
            )
        say(f"  {event}{where}: {commands[argument]}  [timeout {HOOK_TIMEOUT}s]{unsure}")
    status = merged.get("statusLine")
    if isinstance(status, dict) and status.get("command") == commands[STATUS_LINE]:
        say(f"  statusLine: {commands[STATUS_LINE]}")
    else:
        shown = status.get("command") if isinstance(status, dict) else status
        say(
            f"  statusLine: kept your own ({shown}); sessions still bind through SessionStart and read "
            "context usage from transcripts. Pass --replace-status-line to use ours."
        )
    install_skill(target.skill, dry_run=dry_run, say=say)


def install_skill(path: Path, *, dry_run: bool, say: t.Callable[[str], None]) -> None:
    wanted = skill_text()
    try:
        existing: str | None = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        existing = None
    except (OSError, UnicodeDecodeError):
        existing = "\0unreadable"
    if existing == wanted:
        say(f"Skill: {path} (already up to date)")
    elif existing is None or skill_is_ours(existing):
        if not dry_run:
            write_file(path, wanted)
        say(
            f"Skill: {path} ({'would be installed' if dry_run else 'installed'}: /session continue, /session dehydrate, …)"
        )
    else:
        say(
            f"Skill: {path} exists and is not ours; left alone. Without our session skill, "
            "/session continue after a restart depends on what that one says."
        )


def uninstall(target: Target, *, dry_run: bool, say: t.Callable[[str], None]) -> None:
    text = read_text(target.settings)
    backup = backup_path(target.settings)
    original_text = read_text(backup) if backup.exists() else None
    original = parse_settings(original_text, backup) if original_text else None
    if text is None:
        say(f"Settings: {target.settings} does not exist; nothing to remove")
    else:
        settings = parse_settings(text, target.settings)
        restore = original.get("statusLine") if original is not None else None
        stripped = strip(settings, restore_status_line=restore)
        if stripped == settings:
            say(f"Settings: {target.settings} has none of our hooks")
        elif (original_text is None or original_text == "") and pruned(stripped) == {}:
            if not dry_run:
                os.unlink(os.path.realpath(target.settings))
            say(
                f"Settings: {target.settings} {'would be' if dry_run else 'was'} removed (only our entries were in it)"
            )
        else:
            if original is not None and pruned(stripped) == pruned(original):
                new_text = original_text  # untouched since install: give back the exact bytes
            else:
                new_text = dump(stripped, text)
            if dry_run:
                say(f"Settings: {target.settings} would become:\n{t.cast(str, new_text).rstrip()}")
            else:
                write_file(target.settings, t.cast(str, new_text))
                say(f"Settings: {target.settings} (our hooks and status line removed)")
    if original_text is not None and not dry_run:
        backup.unlink()
    still = [p for p in known_settings() if p != target.settings and _has_our_hooks(p)]
    if still:
        say(f"Skill: {target.skill} kept: {', '.join(str(p) for p in still)} still uses our hooks")
        return
    uninstall_skill(target.skill, dry_run=dry_run, say=say)


def known_settings() -> list[Path]:
    """The settings files Claude Code reads here: the user's and this project's (the shared skill serves them all)."""
    project = project_root(Path.cwd()) / ".claude"
    return [
        base / name
        for base in (user_config_dir(), project)
        for name in ("settings.json", "settings.local.json")
    ]


def _has_our_hooks(path: Path) -> bool:
    text = read_text(path)
    if not text:
        return False
    try:
        settings = parse_settings(text, path)
    except ShepherdError:
        return False
    return strip(settings) != settings


def uninstall_skill(path: Path, *, dry_run: bool, say: t.Callable[[str], None]) -> None:
    try:
        existing = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return
    except (OSError, UnicodeDecodeError):
        existing = None
    if existing is None or not skill_is_ours(existing):
        say(f"Skill: {path} was changed or is not ours; left in place")
        return
    if not dry_run:
        path.unlink()
        for directory in (path.parent, path.parent.parent):  # skills/session/, then skills/
            try:
                directory.rmdir()  # only when empty
            except OSError:
                break
    say(f"Skill: {path} {'would be' if dry_run else 'was'} removed")


# --------------------------------------------------------------------------- command line


def parser(command: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"claude-hook {command}",
        description=(
            "Add our hooks, status line and session skill to a Claude Code settings file."
            if command == "install"
            else "Remove our hooks, status line and session skill (nothing else)."
        ),
        epilog=f"example:\n  claude-hook {command} --project --dry-run",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("--user", action="store_true", help="~/.claude/settings.json (the default)")
    scope.add_argument("--project", action="store_true", help="the project's .claude/settings.json")
    scope.add_argument("--settings-file", metavar="PATH", help="this settings file (skill under ~/.claude)")
    p.add_argument("--dry-run", action="store_true", help="show what would change, write nothing")
    if command == "install":
        p.add_argument(
            "--replace-status-line",
            action="store_true",
            help="use our status line even if the settings have another one (restored on uninstall)",
        )
    return p


def main(argv: list[str]) -> int:
    command, rest = argv[0], argv[1:]
    args = parser(command).parse_args(rest)

    def body() -> None:
        target = target_for(args)
        if command == "install":
            install(target, dry_run=args.dry_run, replace_status_line=args.replace_status_line, say=print)
        else:
            uninstall(target, dry_run=args.dry_run, say=print)

    return run_main(f"claude-hook {command}", body)
