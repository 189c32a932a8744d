"""One PreToolUse call (or a skill's inline shell command, judged as a Bash call), classified once for
every rule that looks at it."""

from __future__ import annotations

import os

from claude_shepherd.hooks.bash_whitelist import Invocation, whitelisted
from claude_shepherd.hooks.config import Config
from claude_shepherd.hooks.protocol import HookInput

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

ASK_USER = "AskUserQuestion"
SKILL = "Skill"
BASH = "Bash"
READ = "Read"
EDIT = "Edit"
SUBAGENT_TOOLS = frozenset({"Task", "Agent"})
UNKNOWN_TRANSCRIPT = "unknown"


class ToolCall:
    """The tool, its input, and what the rules need to know about it."""

    __slots__ = (
        "name",
        "input",
        "invocation",
        "is_session_command",
        "transcript_path",
        "transcript_key",
        "tool_use_id",
        "conversation",
        "from_skill",
        "agent_id",
    )

    def __init__(
        self,
        name: str,
        tool_input: dict[str, t.Any],
        invocation: Invocation | None,
        is_session_command: bool,
        transcript_path: str,
        transcript_key: str,
        tool_use_id: str = "",
        conversation: str = "",
        from_skill: bool = False,
        agent_id: str = "",
    ) -> None:
        self.name = name
        self.input = tool_input
        self.invocation = invocation  # a whitelisted Bash command (session or an extra), parsed
        self.is_session_command = is_session_command  # the invocation is of `session` itself
        self.transcript_path = transcript_path
        self.transcript_key = transcript_key  # basename of the transcript: one heartbeat counter per agent
        self.tool_use_id = tool_use_id  # names the transcript line of the response asking for this call
        self.conversation = conversation  # Claude's session_id: whose overflow and dehydrate budget this is
        self.from_skill = from_skill  # a skill's inline shell command (PreSkillShellCommand), not a tool call
        self.agent_id = agent_id  # a sub-agent's call: its reply is in that sub-agent's own transcript

    @property
    def from_agent(self) -> bool:
        return bool(self.agent_id)

    @property
    def counted(self) -> bool:
        """Whether the heartbeat counts this call: not a sub-agent's Task/Agent call (its own calls count,
        in its transcript) nor a skill's inline command (:mod:`claude_shepherd.hooks.skill_shell` says why)."""
        return self.name not in SUBAGENT_TOOLS and not self.from_skill

    @property
    def file_path(self) -> str | None:
        value = self.input.get("file_path")
        return value if isinstance(value, str) else None

    @property
    def skill_call(self) -> tuple[str, str] | None:
        """(skill, args) of a Skill call."""
        if self.name != SKILL:
            return None
        skill, args = self.input.get("skill"), self.input.get("args")
        return (skill if isinstance(skill, str) else "", args if isinstance(args, str) else "")


def classify(inp: HookInput, config: Config, *, from_skill: bool = False) -> ToolCall:
    name = inp.text("tool_name")
    tool_input = inp.obj("tool_input")
    invocation = None
    is_session = False
    if name == BASH:
        invocation = whitelisted(tool_input.get("command"), config.session_programs | config.extra_programs)
        is_session = invocation is not None and invocation.program in config.session_programs
    transcript = inp.text("transcript_path")
    key = os.path.basename(transcript) if transcript and "\0" not in transcript else ""
    conversation = inp.text("session_id")
    return ToolCall(
        name,
        tool_input,
        invocation,
        is_session,
        transcript,
        key or UNKNOWN_TRANSCRIPT,
        inp.text("tool_use_id"),
        conversation if 0 < len(conversation) <= 200 and conversation.isprintable() else "",
        from_skill,
        inp.text("agent_id"),
    )
