"""The text ``claude-run`` appends to Claude's system prompt (``--append-system-prompt``).

As the original built it: ``Agent Description: ...`` and ``Focus Areas: ...``
lines (followed by a blank line), then the agent definition
``<config dir>/agents/NAME.md`` for ``--agent NAME``. The agent is *not* passed
to Claude's own ``--agent`` flag; write ``claude-run -- --agent NAME`` for that.
A missing agent file is a warning, not an error, so a fleet pane still comes up.
"""

from __future__ import annotations

from pathlib import Path

from claude_shepherd.supervisor.claude_run.transcripts import config_dir
from claude_shepherd.supervisor.errors import UsageError
from claude_shepherd.supervisor.session.records import Record

TYPE_CHECKING = False
if TYPE_CHECKING:  # claude-run runs beside every agent: no typing at run time (docs/HOT_CORE.md)
    import typing as t

AGENTS_DIRNAME = "agents"


class AgentNameError(UsageError):
    """``--agent`` names something other than a file in the agents folder."""


class Additions(Record):  # filled in step by step
    __slots__ = ("text", "notes")
    text: str
    notes: list[str]
    """Status lines to print (what was loaded, or why not)."""

    def __init__(self, text: str = "", notes: list[str] | None = None) -> None:
        self.text = text
        self.notes = [] if notes is None else notes


def agent_file(name: str, env: t.Mapping[str, str] | None = None) -> Path:
    if not name or "/" in name or "\\" in name or name.startswith(".") or "\0" in name:
        raise AgentNameError(f"--agent {name!r} is not an agent name; use the NAME of agents/NAME.md")
    return config_dir(env) / AGENTS_DIRNAME / f"{name}.md"


def build(
    *,
    agent: str | None,
    description: str | None,
    focus: str | None,
    env: t.Mapping[str, str] | None = None,
) -> Additions:
    """Assemble the additions; empty text means no ``--append-system-prompt`` at all."""
    out = Additions()
    parts: list[str] = []
    context = []
    if description:
        context.append(f"Agent Description: {description}")
    if focus:
        context.append(f"Focus Areas: {focus}")
    if context:
        parts.append("\n".join(context) + "\n")
        out.notes.append("Added agent context (description/focus) to system prompt")
    if agent:
        path = agent_file(agent, env)
        try:
            parts.append(path.read_text(encoding="utf-8", errors="replace").rstrip("\n"))
        except FileNotFoundError:
            out.notes.append(f"WARNING: agent file not found: {path} (continuing without it)")
        except OSError as exc:
            out.notes.append(
                f"WARNING: cannot read agent file {path}: {exc.strerror} (continuing without it)"
            )
        else:
            out.notes.append(f"Loaded agent '{agent}' via system prompt")
    out.text = "\n".join(parts).strip("\n")
    return out
