"""Every deny and warning the gates print tells the agent to do only what the gates then let through.

Each scenario brings a session into the state where a message is printed, takes the advice out of the
message — the commands it shows (on their own line, after ``:  ``, or in backticks), the Skill call, the
file to Read, AskUserQuestion, the standards it says may be read — and runs each piece through the same
hooks in the same state. Advice the gates refuse would leave the agent going round in circles.
"""

from __future__ import annotations

import re
import typing as t
from pathlib import Path

import pytest
from support.hooks import Answer, activate, bash, call, hook_env, set_fields, tool

from claude_shepherd.supervisor.session.fields import Lifecycle

TEMPLATE = "~/.claude/skills/implement/assets/TEMPLATE_IMPLEMENTATION_LOG.md"
SKILL_CALL = re.compile(r'Skill\(skill: "([\w-]+)", args: "([^"]*)"\)')
READ_FIRST = re.compile(r"Read the log template first \(reading it is allowed\): (\S+)")
STANDARDS_LIST = re.compile(r"standards of ~/\.claude/ — ([^—]+) —")
BACKTICKED = re.compile(r"`(session [a-z][^`]*)`")


def commands(message: str) -> list[str]:
    """The ``session`` commands *message* shows, here-documents included, exactly as written."""
    found = [m for m in BACKTICKED.findall(message) if m.split()[1] not in ("restart", "dehydrate")]
    lines = message.split("\n")
    for i, line in enumerate(lines):
        start = line.find(":  session ")
        text = line[start + 3 :] if start >= 0 else line if line.lstrip().startswith("session ") else None
        if text is None:
            continue
        text = re.split(r"\s{3,}", text.strip())[0] if "<<" not in text else text
        if text.rstrip().endswith("<<'EOF'"):
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "EOF")
            text = "\n".join([text, *lines[i + 1 : end + 1]])
        found.append(text)
    return found


def advice(message: str, project: Path, env: dict[str, str]) -> list[tuple[str, dict[str, t.Any]]]:
    """(what, the tool call) for each thing *message* tells the agent to do."""
    home = Path(env["HOME"])
    calls = [(f"Bash {c!r}", bash(project, c)) for c in commands(message)]
    calls += [
        (f"Skill {s} {a!r}", tool(project, "Skill", skill=s, args=a)) for s, a in SKILL_CALL.findall(message)
    ]
    calls += [(f"Read {p}", tool(project, "Read", file_path=p)) for p in READ_FIRST.findall(message)]
    if "AskUserQuestion" in message:
        calls.append(("AskUserQuestion", tool(project, "AskUserQuestion", questions=[])))
    listed = STANDARDS_LIST.search(message)
    if (
        listed is not None
    ):  # "reading standards (CLAUDE.md and the other standards of ~/.claude/ — a/, b/ — …)"
        for folder in listed.group(1).replace(",", " ").split():
            calls.append(
                (f"Read ~/.claude/{folder}", tool(project, "Read", file_path=f"~/.claude/{folder}x.md"))
            )
        for path in (project / ".claude" / "x.md", project / "MEMORY.md", project / "sessions" / "x.md"):
            calls.append((f"Read {path}", tool(project, "Read", file_path=str(path))))
    if "Load the standards you need" in message:
        for path in (home / ".claude" / "CLAUDE.md", project / "CLAUDE.md", project / ".claude" / "x.md"):
            calls.append((f"Read {path}", tool(project, "Read", file_path=str(path))))
    return calls


def walk(message: str, project: Path, env: dict[str, str], *, some: bool = True) -> None:
    """Every piece of advice in *message* passes the hooks (each judged in the state the message was given);
    *some*: the message does advise something."""
    found = advice(message, project, env)
    assert found or not some, f"no advice found in: {message}"
    refused = []
    for what, payload in found:
        answer = call("pre-tool-use", payload, env)
        if answer.denied:
            refused.append(f"{what}: {answer.reason.splitlines()[0]}")
    assert not refused, f"the message\n{message}\nadvises what the gates refuse:\n" + "\n".join(refused)


@pytest.fixture
def env(project: Path) -> dict[str, str]:
    env = hook_env(project, SESSION_REQUIRED="1")
    template = Path(env["HOME"]) / TEMPLATE.removeprefix("~/")
    template.parent.mkdir(parents=True)
    template.write_text("# Implementation log\n")
    return env


def grep(project: Path) -> dict[str, t.Any]:
    return tool(project, "Grep", pattern="x")


def denied(answer: Answer) -> str:
    assert answer.denied, answer.stdout
    return answer.reason


# --------------------------------------------------------------------------- the session gate


def test_no_session(project: Path, env: dict[str, str]) -> None:
    walk(denied(call("pre-tool-use", grep(project), env)), project, env)
    walk(call("user-prompt-submit", {"cwd": str(project), "prompt": "hi"}, env).context, project, env)


@pytest.mark.parametrize("lifecycle", [Lifecycle.COMPLETED, Lifecycle.RESTARTING])
def test_a_session_that_is_not_live(project: Path, env: dict[str, str], lifecycle: str) -> None:
    """Its heartbeat (blocked, here) must not refuse what the session gate tells the agent to use."""
    session_dir = activate(project, logTemplate=TEMPLATE)
    set_fields(session_dir, loading=None, toolCallsByTranscript={"main.jsonl": 10}, lifecycle=lifecycle)
    walk(denied(call("pre-tool-use", grep(project), env)), project, env)
    walk(call("user-prompt-submit", {"cwd": str(project), "prompt": "hi"}, env).context, project, env)


# --------------------------------------------------------------------------- the heartbeat


def test_loading_too_long(project: Path, env: dict[str, str]) -> None:
    session_dir = activate(project, logTemplate=TEMPLATE)
    set_fields(session_dir, loading=True, toolCallsByTranscript={"main.jsonl": 59})
    walk(denied(call("pre-tool-use", grep(project), env)), project, env)


@pytest.mark.parametrize("template", [TEMPLATE, "docs/TEMPLATE_MISSING_LOG.md"])
def test_heartbeat_warning_and_block(project: Path, env: dict[str, str], template: str) -> None:
    session_dir = activate(project, logTemplate=template)
    set_fields(session_dir, loading=None, toolCallsByTranscript={"main.jsonl": 2})
    warned = call("pre-tool-use", grep(project), env)
    assert not warned.denied and "Log soon" in warned.context
    walk(warned.context, project, env)
    set_fields(session_dir, toolCallsByTranscript={"main.jsonl": 9})
    walk(denied(call("pre-tool-use", grep(project), env)), project, env)


# --------------------------------------------------------------------------- the overflow gate


def test_overflow(project: Path, env: dict[str, str]) -> None:
    activate(project, contextUsage=0.9, logTemplate=TEMPLATE)
    walk(denied(call("pre-tool-use", grep(project), env)), project, env)


def test_dehydrate_budget_spent(project: Path, env: dict[str, str]) -> None:
    activate(project, overflowed=True, lifecycle=Lifecycle.DEHYDRATING, dehydrateToolCalls=25)
    walk(denied(call("pre-tool-use", grep(project), env)), project, env)


def test_restart_pending_and_a_restart_in_the_background(project: Path, env: dict[str, str]) -> None:
    session_dir = activate(project)
    reason = denied(
        call("pre-tool-use", bash(project, "session restart sessions/2026_11_22_TOPIC", timeout=5), env)
    )
    assert call("pre-tool-use", bash(project, "session restart sessions/2026_11_22_TOPIC"), env).allowed, (
        reason
    )
    set_fields(session_dir, killRequested=True)
    walk(denied(call("pre-tool-use", grep(project), env)), project, env, some=False)  # it says: stop


# --------------------------------------------------------------------------- the rest


def test_protected_file_and_a_broken_hook_input(project: Path, env: dict[str, str]) -> None:
    activate(project)
    walk(
        denied(
            call(
                "pre-tool-use", tool(project, "Write", file_path="sessions/2026_11_22_TOPIC/.state.json"), env
            )
        ),
        project,
        env,
        some=False,  # it names the session commands, it advises none
    )
    walk(denied(call("pre-tool-use", b"{not json", env)), project, env)
