"""The session gate: with ``SESSION_REQUIRED=1``, no work without an active session.

PreToolUse (docs/DESIGN.md S10/S11): AskUserQuestion and Skill always pass, so do a
single ``session`` command and reading standards; everything else needs the
caller's session to be live (active, dehydrating or resuming). The deny says
what to do next, naming only skills installed here (else a plain default), and
nothing the gates would refuse. UserPromptSubmit injects the same guidance proactively.
Read-only: the gate never writes state. Standard library only.
"""

from __future__ import annotations

from claude_shepherd.hooks.config import Config
from claude_shepherd.hooks.installed_skills import DEFAULT_SKILL, installed_skills
from claude_shepherd.hooks.locate import Caller, session_arg
from claude_shepherd.hooks.read_whitelist import read_allowed
from claude_shepherd.hooks.tool_call import ASK_USER, BASH, READ, SKILL, ToolCall
from claude_shepherd.supervisor.session.fields import LIVE_LIFECYCLES, F, Lifecycle

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

    from claude_shepherd.supervisor.session.lookup import Found

TAG = "§CMD_REQUIRE_ACTIVE_SESSION"
NEW_SESSION = "session activate sessions/YYYY_MM_DD_TOPIC SKILL"
ALLOWED_MEANWHILE = (
    "Until then only AskUserQuestion, Skill, a single `session` command and reading standards "
    "(CLAUDE.md and the other standards of ~/.claude/ — agents/, commands/, skills/, plugins/, docs/, "
    ".directives/ — the project's .claude/, MEMORY.md, the sessions folder) are allowed."
)


def lifecycle(state: t.Mapping[str, object]) -> str:
    """The session's lifecycle; a bash-era state without one is active."""
    value = state.get(F.LIFECYCLE, Lifecycle.ACTIVE)
    return value if isinstance(value, str) else "unreadable"


def is_live(caller: Caller) -> bool:
    return caller.found is not None and lifecycle(caller.found.state) in LIVE_LIFECYCLES


def _described(found: Found, cwd: str) -> tuple[str, str, str]:
    """How a message names the session (``'NAME' (skill: S)``), the DIR argument to give
    ``session`` from *cwd*, and its lifecycle."""
    skill = found.state.get(F.SKILL)
    what = f"'{found.session_dir.name}' (skill: {skill if isinstance(skill, str) and skill else 'none'})"
    return what, session_arg(found.session_dir, cwd), lifecycle(found.state)


def tool_whitelisted(call: ToolCall, caller: Caller, cwd: str, env: t.Mapping[str, str]) -> bool:
    if call.name in (ASK_USER, SKILL):
        return True
    if call.name == BASH:
        return call.invocation is not None
    if call.name == READ:
        return read_allowed(call.file_path, cwd=cwd, sessions_root=str(caller.root), env=env)
    return False


def _skills(cwd: str, env: t.Mapping[str, str]) -> tuple[str, str]:
    """The skills to offer the user (``/a, /b`` or ``""``) and the line saying what SKILL is:
    only skills installed here are named, else a plain default."""
    skills = installed_skills(cwd, env)
    if not skills:
        return "", (
            "SKILL names the kind of work. No skill but /session is installed here, so use a plain word: "
            f"{DEFAULT_SKILL}."
        )
    listed = ", ".join(f"/{name}" for name in skills)
    return listed, (
        f"SKILL names the kind of work: a skill installed here ({listed}; give it without the slash and "
        f"follow its SKILL.md), or a plain word such as {DEFAULT_SKILL}."
    )


def deny_reason(caller: Caller, cwd: str, env: t.Mapping[str, str]) -> str:
    """Why the tool is blocked and the exact commands that unblock it."""
    found = caller.found
    if found is None:
        _, what_skill_is = _skills(cwd, env)
        return (
            f"{TAG}: No active session. Tool use blocked.\n"
            "Use AskUserQuestion to ask the user what to work on and in which session folder (a new one, "
            f"or one to continue), then activate it:\n  {NEW_SESSION}\n{what_skill_is}\n" + ALLOWED_MEANWHILE
        )
    what, arg, state = _described(found, cwd)
    if state == Lifecycle.COMPLETED:
        _, what_skill_is = _skills(cwd, env)
        return (
            f"{TAG}: Previous session {what} is completed. Tool use blocked.\n"
            f"Use AskUserQuestion to ask the user: 'Your previous session {what} is complete. "
            "Would you like to continue it, or start a new session?'\n"
            f"To continue it:  session continue {arg}\n"
            f"To start a new one:  {NEW_SESSION}\n{what_skill_is}\n" + ALLOWED_MEANWHILE
        )
    return (
        f"{TAG}: Session {what} is {state}, not active. Tool use blocked.\n"
        f"Pick it up with:  session continue {arg}\n"
        "(it re-activates the session and lists what to reload; then resume at the phase it prints).\n"
        + ALLOWED_MEANWHILE
    )


def session_gate(
    call: ToolCall, caller: Caller, config: Config, cwd: str, env: t.Mapping[str, str]
) -> str | None:
    """The deny reason, or None when the gate lets the call through."""
    if not config.session_required or is_live(caller):
        return None
    if tool_whitelisted(call, caller, cwd, env):
        return None
    return deny_reason(caller, cwd, env)


BOOT_STANDARDS = (
    "1. Load the standards you need: ~/.claude/CLAUDE.md, the project's CLAUDE.md and .claude/ "
    "files (reading these is allowed)."
)


def prompt_context(caller: Caller, config: Config, cwd: str, env: t.Mapping[str, str]) -> str | None:
    """UserPromptSubmit: boot instructions when no session is live, else None."""
    if not config.session_required or is_live(caller):
        return None
    found = caller.found
    if found is None:
        offered, what_skill_is = _skills(cwd, env)
        question = (
            f"Which skill should I use ({offered}), in which session folder — or describe the new work?"
            if offered
            else "What should I work on, and in which session folder (a new one, or one to continue)?"
        )
        return (
            f"{TAG}: No active session. You must activate a session before doing any work.\n"
            "Boot sequence:\n"
            f"{BOOT_STANDARDS}\n"
            f"2. Use AskUserQuestion to ask the user: 'No active session. {question}'\n"
            f"3. Activate it:  {NEW_SESSION}\n"
            f"   {what_skill_is}\n"
            "Other tools stay blocked until a session is active."
        )
    what, arg, state = _described(found, cwd)
    if state == Lifecycle.COMPLETED:
        _, what_skill_is = _skills(cwd, env)
        return (
            f"{TAG}: Previous session {what} is completed.\n"
            "Boot sequence:\n"
            f"{BOOT_STANDARDS}\n"
            f"2. Use AskUserQuestion to ask the user: 'Your previous session {what} is complete. "
            "Would you like to continue it, or start a new session?'\n"
            f"3. To continue it:  session continue {arg}\n"
            f"   To start a new one:  {NEW_SESSION}\n"
            f"   {what_skill_is}\n"
            "Other tools stay blocked until a session is active."
        )
    return (
        f"{TAG}: Session {what} is {state}, not active.\n"
        "Boot sequence:\n"
        f"1. Run:  session continue {arg}\n"
        "2. Read every file it lists (the dehydrated context and the required files).\n"
        "3. Resume the work at the phase it prints.\n"
        "Other tools stay blocked until the session is active again."
    )
