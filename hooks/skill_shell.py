"""``claude-hook pre-skill-shell-command``: a skill's inline shell command is gated like a Bash call.

Claude Code runs the inline commands of a skill (``!`command``` in its text, and ```` ```! ````
blocks) while it loads the skill — a ``/NAME`` the person typed, or the model's Skill call —
and no PreToolUse hook sees them. From 2.1.332 it asks the PreSkillShellCommand hook first
(2.1.328 runs them unasked). So each is put to every PreToolUse rule as the Bash call it would
be (:func:`claude_shepherd.hooks.pre_tool_use.judge`): the budget pause, protected files, the
session gate, the overflow gate, a pending restart, the heartbeat's block — one set of rules, in
one place. A PowerShell command is judged the same way: the rules read the command, not the shell.

The heartbeat does not count these commands, but denies them once it blocks (as it does Task/Agent
calls). It counts the agent's tool calls between log entries, and the Skill call that loaded the
skill was one: counting its lines too would charge one call several times, and a ``/NAME`` the
person typed is no call of the agent's at all. Nor would counting bound anything: one Bash call can
run a script of any length.

Input Claude Code never sends (no ``tool_input.command`` string, a shell other than Bash or
PowerShell) is denied, saying so; nothing here fails open. The ``tool_use_id`` names no line of the
transcript, so it is dropped: the overflow gate reads the transcript's newest response, and waits
for none. Standard library only.
"""

from __future__ import annotations

from claude_shepherd.hooks.pre_tool_use import judge
from claude_shepherd.hooks.protocol import PRE_SKILL_SHELL_COMMAND, HookInput, one_line, parse_input
from claude_shepherd.hooks.tool_call import BASH

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

SHELLS = ("Bash", "PowerShell")
"""The shells a skill's commands run in (a skill's ``shell:`` front matter: bash, the default, or powershell)."""
JSON_TYPES = ((bool, "boolean"), (int, "number"), (float, "number"), (list, "array"), (dict, "object"))


def _shown(value: object) -> str:
    """A value of the input as a reason names it: a string (its start), else its JSON type."""
    if isinstance(value, str):
        return one_line(repr(value[:60]))
    return "a JSON " + next((n for k, n in JSON_TYPES if isinstance(value, k)), "null")


def as_bash_call(inp: HookInput) -> HookInput:
    """*inp* as the PreToolUse input of a Bash call running the same command in the same conversation,
    or an input whose problem says why it is no command Claude Code would run."""
    if inp.problem is not None:
        return inp
    shell = inp.data.get("tool_name")
    if shell not in SHELLS:
        named = "names no shell" if shell is None else f"is {_shown(shell)}"
        return HookInput({}, f"its tool_name {named}, not Bash or PowerShell")
    command = inp.obj("tool_input").get("command")
    if command is None:
        return HookInput({}, "its tool_input has no command")
    if not isinstance(command, str):
        return HookInput({}, f"its tool_input.command is {_shown(command)}, not the command's text")
    data = {key: value for key, value in inp.data.items() if key != "tool_use_id"}
    data.update(tool_name=BASH, tool_input={"command": command})
    return HookInput(data)


def run(raw: bytes, env: t.Mapping[str, str]) -> str:
    """The hook's stdout for stdin *raw*: "" (the command runs) or the event's deny."""
    return judge(as_bash_call(parse_input(raw)), env, PRE_SKILL_SHELL_COMMAND)
