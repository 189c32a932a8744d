"""Helpers for the hook tests: hook inputs, running hooks, making sessions.

Hooks run two ways: in-process through :func:`claude_shepherd.hooks.cli.run_hook` (fast, for
the big tables and the fuzzing) and as real subprocesses of this venv's
``claude-hook`` (for the integration tests). Sessions are made with the real
transitions through the real locked store, or with the real ``session`` CLI.
"""

from __future__ import annotations

import json
import os
import subprocess
import typing as t
from pathlib import Path

from support.fixtures import script

from claude_shepherd.hooks.cli import run_hook
from claude_shepherd.supervisor.session import activate_transition
from claude_shepherd.supervisor.session.fields import STATE_FILE
from claude_shepherd.supervisor.session.identity import owner_alive, start_token
from claude_shepherd.supervisor.session.store import read_state, update_state

SKILL = "implement"


def hook_env(project: Path, **extra: str) -> dict[str, str]:
    """The environment Claude Code would give our hooks in *project*."""
    env = dict(os.environ)
    env.update(
        CLAUDE_SESSIONS_DIR=str(project / "sessions"),
        CLAUDE_SUPERVISOR_PID=str(os.getpid()),
        HOME=str(project.parent / "home"),
    )
    for name in (
        "TMUX",
        "TMUX_PANE",
        "SESSION_REQUIRED",
        "CLAUDE_CONFIG_DIR",
        "CLAUDE_PROJECT_DIR",
        "CLAUDE_OVERFLOW_THRESHOLD",
        "OVERFLOW_THRESHOLD",
        "CLAUDE_DEHYDRATE_CALL_BUDGET",
        "CLAUDE_HOOK_EXTRA_COMMANDS",
    ):
        env.pop(name, None)
    env.update(extra)
    return env


def tool(project: Path, name: str, transcript: str | None = None, **tool_input: t.Any) -> dict[str, t.Any]:
    """A PreToolUse input as Claude Code sends it (reference §1)."""
    return {
        "session_id": "c1f98c8c-c723-4d46-ad1d-62b28790d574",
        "transcript_path": transcript
        or str(project.parent / "home" / ".claude" / "projects" / "p" / "main.jsonl"),
        "cwd": str(project),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": name,
        "tool_input": tool_input,
        "tool_use_id": "toolu_01",
    }


def bash(project: Path, command: str, **kw: t.Any) -> dict[str, t.Any]:
    return tool(project, "Bash", command=command, description="run", **kw)


class Answer(t.NamedTuple):
    stdout: str

    @property
    def allowed(self) -> bool:
        return self.stdout == ""

    @property
    def data(self) -> dict[str, t.Any]:
        return json.loads(self.stdout) if self.stdout else {}

    @property
    def denied(self) -> bool:
        return self.data.get("hookSpecificOutput", {}).get("permissionDecision") == "deny"

    @property
    def reason(self) -> str:
        return self.data.get("hookSpecificOutput", {}).get("permissionDecisionReason", "")

    @property
    def context(self) -> str:
        return self.data.get("hookSpecificOutput", {}).get("additionalContext", "")


def call(event: str, payload: t.Any, env: dict[str, str]) -> Answer:
    """Run a hook in-process."""
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return Answer(run_hook(event, raw, env))


def run(
    event: str, payload: t.Any, env: dict[str, str], cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the installed console script ``claude-hook EVENT`` as Claude Code would."""
    raw = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run(
        [script("claude-hook"), event],
        input=raw,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=30,
    )


def activate(
    project: Path, name: str = "2026_11_22_TOPIC", skill: str = SKILL, pid: int | None = None, **fields: t.Any
) -> Path:
    """Activate a session through the real transition and store, then set *fields* on it."""
    session_dir = project / "sessions" / name
    pid = os.getpid() if pid is None else pid
    update_state(
        session_dir,
        lambda s: activate_transition.activate(
            s,
            skill=skill,
            pid=pid,
            token=start_token(pid),
            owner_running=owner_alive(s.get("pid"), s.get("pidStart")),
        ),
        create=True,
        replace_corrupt=True,
    )
    if fields:
        set_fields(session_dir, **fields)
    return session_dir


def set_fields(session_dir: Path, **fields: t.Any) -> None:
    def apply(state: dict[str, t.Any]) -> None:
        for key, value in fields.items():
            if value is None:
                state.pop(key, None)
            else:
                state[key] = value

    update_state(session_dir, apply)


def state(session_dir: Path) -> dict[str, t.Any]:
    return read_state(session_dir)


def raw_state(session_dir: Path) -> str:
    return (session_dir / STATE_FILE).read_text()


def assistant_line(
    tokens: int,
    *,
    model: str = "claude-sonnet-4-5",
    timestamp: str = "2026-11-22T10:00:00.000Z",
    sidechain: bool = False,
    tool_use_id: str = "toolu_01",
    **usage: t.Any,
) -> str:
    """One transcript line of an assistant response asking for a tool, with its usage (reference §9)."""
    counts = {
        "input_tokens": 100,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": tokens - 100,
        "output_tokens": 20,
    }
    counts.update(usage)
    return json.dumps(
        {
            "type": "assistant",
            "isSidechain": sidechain,
            "timestamp": timestamp,
            "message": {
                "model": model,
                "role": "assistant",
                "usage": counts,
                "content": [{"type": "tool_use", "id": tool_use_id, "name": "Bash", "input": {}}],
            },
        }
    )
