"""Hooks, the status line and ``session`` writing one state file at once lose nothing.

The bash hooks read the state before taking their lock, so the heartbeat could
wipe the ``overflowed`` the overflow hook had just set (original-system §5.2).
Here every writer holds the state lock for its whole read-modify-write.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from support.fixtures import script
from support.hooks import activate, hook_env, set_fields, state, tool

from claude_shepherd.supervisor.session.fields import F


def launch(argv: list[str], payload: str, env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=cwd,
    )
    assert proc.stdin is not None
    proc.stdin.write(payload)
    proc.stdin.close()
    return proc


def finish(procs: list[subprocess.Popen[str]]) -> list[str]:
    outputs = []
    for proc in procs:
        assert proc.stdout is not None and proc.stderr is not None
        out, err = proc.stdout.read(), proc.stderr.read()
        assert proc.wait(timeout=60) == 0, err
        assert "Traceback" not in err
        outputs.append(out)
    return outputs


def test_counters_and_session_updates_all_land(project: Path) -> None:
    session_dir = activate(
        project,
        logTemplate="/x/TEMPLATE_X_LOG.md",
        toolUseWithoutLogsWarnAfter=50,
        toolUseWithoutLogsBlockAfter=50,
    )
    set_fields(session_dir, loading=None)
    env = hook_env(project)
    hook, session = script("claude-hook"), script("session")
    main = json.dumps(tool(project, "Grep", transcript="/t/main.jsonl", pattern="x"))
    agent = json.dumps(tool(project, "Grep", transcript="/t/agent-1.jsonl", pattern="x"))
    status = json.dumps(
        {"session_id": "sid-1", "cwd": str(project), "context_window": {"used_percentage": 30}}
    )
    procs = []
    for n in range(12):
        procs.append(launch([hook, "pre-tool-use"], main if n % 3 else agent, env, project))
        if n % 3 == 0:
            procs.append(
                launch([session, "update", "sessions/2026_11_22_TOPIC", f"note{n}", str(n)], "", env, project)
            )
        if n % 4 == 0:
            procs.append(launch([hook, "status-line"], status, env, project))
    outputs = finish(procs)
    after = state(session_dir)
    assert after[F.TOOL_CALLS_BY_TRANSCRIPT] == {"main.jsonl": 8, "agent-1.jsonl": 4}
    assert {k: after[k] for k in after if k.startswith("note")} == {f"note{n}": n for n in (0, 3, 6, 9)}
    assert after[F.SESSION_ID] == "sid-1" and after[F.CONTEXT_USAGE] == 0.3
    assert all(out == "" or "Updated note" in out or " · " in out for out in outputs)


def test_overflowed_survives_concurrent_writers(project: Path) -> None:
    session_dir = activate(project, contextUsage=0.9, logTemplate="/x/TEMPLATE_X_LOG.md")
    set_fields(session_dir, loading=None)
    env = hook_env(project)
    hook, session = script("claude-hook"), script("session")
    status = json.dumps(
        {"session_id": "sid-2", "cwd": str(project), "context_window": {"used_percentage": 91}}
    )
    grep = json.dumps(tool(project, "Grep", pattern="x"))
    procs = []
    for n in range(6):
        procs.append(launch([hook, "status-line"], status, env, project))
        procs.append(launch([hook, "pre-tool-use"], grep, env, project))
        if n % 2 == 0:
            procs.append(
                launch([session, "target", "sessions/2026_11_22_TOPIC", f"file{n}.md"], "", env, project)
            )
    outputs = finish(procs)
    after = state(session_dir)
    assert after[F.OVERFLOWED] is True
    assert after[F.TARGET_FILE] in {"file0.md", "file2.md", "file4.md"}
    assert after[F.CONTEXT_USAGE] == 0.91
    assert sum("Context overflow" in out for out in outputs) == 6
    assert after.get(F.TOOL_CALLS_BY_TRANSCRIPT) in (None, {})  # denied calls are not counted
