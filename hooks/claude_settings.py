"""Our entries in a Claude Code settings file: the hook commands, the events a Claude Code has, and the
merge that puts them in or takes them out.

The commands name this installation's interpreter and files by absolute path and skip ``site``
(``python -I -S …/hooks/__main__.py EVENT``): a ``python3`` shim costs ~80 ms and site processing more
than the hook itself. The merge keeps every entry of the user's and updates ours in place, so it is
idempotent; :func:`strip` takes out only what is ours. A file that is not valid JSON is refused.
Not on the hook path (:mod:`.install` and ``fleet doctor`` import it): shlex and subprocess are fine here.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shlex
import subprocess
import sys
import typing as t
from pathlib import Path

from claude_shepherd.hooks.protocol import HOOK_EVENTS
from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.session.programs import HOOK_TIMEOUT
from claude_shepherd.supervisor.session.store import json_object

(
    PRE_TOOL_USE,
    USER_PROMPT_SUBMIT,
    SESSION_START,
    STATUS_LINE,
    STOP,
    NOTIFICATION,
    STOP_FAILURE,
    PRE_SKILL_SHELL_COMMAND,
    POST_TOOL_BATCH,
    PRE_COMPACT,
) = HOOK_EVENTS
Version = tuple[int, int, int]
VERSION_TIMEOUT = 30  # seconds for `claude --version` (it answers in milliseconds)


class Registration(t.NamedTuple):
    event: str  # Claude Code's name, a key of the settings' "hooks"
    argument: str  # ours: claude-hook ARGUMENT
    matcher: str | None
    since: Version | None = None  # the first Claude Code with the event; None: every version we run


REGISTRATIONS: tuple[Registration, ...] = (
    Registration("PreToolUse", PRE_TOOL_USE, "*"),
    Registration("UserPromptSubmit", USER_PROMPT_SUBMIT, None),
    Registration("SessionStart", SESSION_START, None),
    Registration("Stop", STOP, None),  # fleet pane status: done
    Registration("Notification", NOTIFICATION, None),  # fleet pane status: needs-you
    Registration("StopFailure", STOP_FAILURE, None),  # a usage limit: limited until the reset, not a crash
    # a skill's inline shell command, gated like Bash (hooks/skill_shell.py)
    Registration("PreSkillShellCommand", PRE_SKILL_SHELL_COMMAND, None, (2, 1, 332)),
    # a budget's last word before the next request (hooks/tool_batch.py)
    Registration("PostToolBatch", POST_TOOL_BATCH, None),
    # no compaction (a request with the whole conversation) for an agent paused at a budget
    Registration("PreCompact", PRE_COMPACT, None),
)
DETACHED = frozenset({STOP_FAILURE})
"""Events whose hook runs in a process of its own (``setsid -f``): ``claude -p`` kills the StopFailure
hook as it exits, and only a process in another session outlives that."""
Settings = dict[str, t.Any]


class SettingsError(ShepherdError):
    """A settings file we must not touch."""


# --------------------------------------------------------------------------- the commands


def package_root() -> Path:
    """The directory holding our ``hooks`` and ``supervisor`` packages."""
    return Path(os.path.realpath(__file__)).parent.parent


def hook_command(event: str, python: str | None = None, root: Path | None = None) -> str:
    python = python or sys.executable
    root = root or package_root()
    command = f"{shlex.quote(python)} -I -S {shlex.quote(str(root / 'hooks' / '__main__.py'))} {event}"
    if event in DETACHED:
        import shutil

        setsid = shutil.which("setsid")
        if setsid:
            command = f"{shlex.quote(setsid)} -f {command}"
    return command


def ours(command: object) -> str | None:
    """The event of a command written by any install of ours (any path), else None."""
    if not isinstance(command, str):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    for index, word in enumerate(words[:-1]):
        program = (
            os.path.basename(word) == "claude-hook"
            or word.endswith("/hooks/__main__.py")
            or (word == "hooks" and index > 0 and words[index - 1] == "-m")
        )
        if program and words[index + 1] in HOOK_EVENTS:
            return words[index + 1]
    return None


# --------------------------------------------------------------------------- which events


def claude_version(env: t.Mapping[str, str] | None = None) -> Version | None:
    """The version of the Claude Code that ``claude-run`` would start here (``$CLAUDE_BIN``, ``claude``
    on PATH, the installers' folders), as its ``--version`` says; None when there is none or it does not say."""
    from claude_shepherd.supervisor.claude_run.claude_bin import ClaudeNotFoundError, find_claude

    env = os.environ if env is None else env
    try:
        binary = find_claude(env)
    except ClaudeNotFoundError:
        return None
    try:
        done = subprocess.run(
            [str(binary), "--version"],
            capture_output=True,
            encoding="utf-8",
            errors="replace",
            env=dict(env),
            stdin=subprocess.DEVNULL,
            timeout=VERSION_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.match(r"(\d+)\.(\d+)\.(\d+) \(Claude Code\)", done.stdout)  # "2.1.332 (Claude Code)"
    if done.returncode != 0 or found is None:
        return None
    return int(found[1]), int(found[2]), int(found[3])


def registrations(version: Version | None) -> tuple[Registration, ...]:
    """The events to install for Claude Code *version*: those it has; all of them when it cannot be told.

    Observed with Claude Code 2.1.328, which lacks PreSkillShellCommand: a settings file holding it (given
    with --settings or as ~/.claude/settings.json) is not refused. The rest of the file stays in force (our
    PreToolUse hook still ran and denied) and ``claude -p`` says nothing, but every interactive start opens a
    "Settings Warning" dialog ("Unknown hook event ... was ignored") that waits for Enter. So a Claude Code
    known to be older does not get the event. One that cannot be told does: without it a newer one runs
    every skill's inline commands ungated and silently, while the dialog only shows; and a Claude Code
    installed after us is the newest anyway.
    """
    return tuple(r for r in REGISTRATIONS if r.since is None or version is None or version >= r.since)


def shown_version(version: Version) -> str:
    return ".".join(map(str, version))


# --------------------------------------------------------------------------- settings merge


def _groups(hooks: dict[str, t.Any], event: str) -> list[t.Any]:
    groups = hooks.setdefault(event, [])
    if not isinstance(groups, list):
        raise SettingsError(f'"hooks.{event}" is not a list; fix the settings file first')
    return groups


def merge(
    settings: Settings,
    commands: dict[str, str],
    *,
    replace_status_line: bool = False,
    wanted: tuple[Registration, ...] = REGISTRATIONS,
) -> Settings:
    """*settings* with our hooks of the *wanted* events and our status line in (existing ones of ours
    updated in place), and without ours of any other event (one this Claude Code lacks)."""
    merged = copy.deepcopy(settings)
    hooks = merged.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise SettingsError('"hooks" is not an object; fix the settings file first')
    for event, argument, matcher, _since in wanted:
        entry = {"type": "command", "command": commands[argument], "timeout": HOOK_TIMEOUT}
        placed = False
        for group in _groups(hooks, event):
            entries = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(entries, list):
                continue
            kept = []
            for item in entries:
                if isinstance(item, dict) and ours(item.get("command")) == argument:
                    if placed:
                        continue  # a duplicate of ours
                    item = entry
                    placed = True
                kept.append(item)
            entries[:] = kept
        if not placed:
            group = {"matcher": matcher, "hooks": [entry]} if matcher else {"hooks": [entry]}
            hooks[event].append(group)
    for unwanted in REGISTRATIONS:
        if unwanted not in wanted and unwanted.event in hooks:
            _drop_ours(hooks, unwanted.event, unwanted.argument)
    current = merged.get("statusLine")
    mine = {"type": "command", "command": commands[STATUS_LINE], "padding": 0}
    if current is None or (isinstance(current, dict) and ours(current.get("command"))) or replace_status_line:
        merged["statusLine"] = mine
    return merged


def _mine(entry: object, argument: str | None) -> bool:
    """Whether a hook entry is ours (for the event *argument*, else for any)."""
    event = ours(entry.get("command")) if isinstance(entry, dict) else None
    return event is not None and argument in (None, event)


def _drop_ours(hooks: dict[str, t.Any], event: str, argument: str | None = None) -> bool:
    """Remove our entries (those of *argument*, else all) from ``hooks[event]``, with the groups and the
    event that this removal emptied; whether anything was removed."""
    groups = hooks[event]
    if not isinstance(groups, list):
        return False
    kept_groups = []
    removed = False
    for group in groups:
        entries = group.get("hooks") if isinstance(group, dict) else None
        if isinstance(entries, list):
            kept = [e for e in entries if not _mine(e, argument)]
            if len(kept) != len(entries):
                removed = True
                if not kept:
                    continue
                group["hooks"] = kept
        kept_groups.append(group)
    if removed:
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    return removed


def strip(settings: Settings, *, restore_status_line: object = None) -> Settings:
    """*settings* without anything of ours; containers emptied by that removal go too."""
    stripped = copy.deepcopy(settings)
    hooks = stripped.get("hooks")
    if isinstance(hooks, dict):
        removed_any = False
        for event in list(hooks):
            removed_any = _drop_ours(hooks, event) or removed_any
        if removed_any and not hooks:
            del stripped["hooks"]
    status = stripped.get("statusLine")
    if isinstance(status, dict) and ours(status.get("command")):
        if restore_status_line is not None:
            stripped["statusLine"] = restore_status_line
        else:
            del stripped["statusLine"]
    return stripped


def pruned(settings: Settings) -> Settings:
    """Equality modulo empty hook containers (``"hooks": {}`` and ``"Event": []``)."""
    out = copy.deepcopy(settings)
    hooks = out.get("hooks")
    if isinstance(hooks, dict):
        for event in [e for e, groups in hooks.items() if groups == []]:
            del hooks[event]
        if not hooks:
            del out["hooks"]
    return out


# --------------------------------------------------------------------------- text


def parse_settings(text: str, path: Path) -> Settings:
    return json_object(text, path, SettingsError, hint="; fix it first — it was not changed")


def dump(settings: Settings, like: str | None) -> str:
    """Serialise in the style of the text it replaces (indent, final newline)."""
    indent: str | int = 2
    if like:
        for line in like.splitlines()[1:]:
            stripped = line.lstrip(" \t")
            if stripped and len(stripped) < len(line):
                indent = line[: len(line) - len(stripped)]
                break
    text = json.dumps(settings, indent=indent, ensure_ascii=False)
    return text + "\n" if like is None or like.endswith("\n") else text
