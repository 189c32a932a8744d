"""The user's Claude arguments, and which of them belong to the first launch only.

``claude-run`` passes the user's own Claude arguments (``--model``,
``--dangerously-skip-permissions``, ...) on *every* launch, restarts included
(the bash original dropped them, G7). Two kinds apply to the first launch only:

* **conversation selectors** — ``--resume/-r [ID]``, ``--continue/-c``,
  ``--session-id ID``, ``--fork-session``, ``--from-pr [N]``, ``--teleport``: a
  restart is always a fresh conversation (docs/DESIGN.md §9), so repeating them
  would resume exactly what must not be resumed;
* **the initial prompt** (a positional argument): a restart carries its own
  prompt (``/session continue ...``), and re-sending the first task after a
  crash would start it over.

Telling a positional prompt from an option's value needs each option's arity.
:data:`VALUE_OPTIONS`, :data:`VARIADIC_OPTIONS` and :data:`OPTIONAL_VALUE_OPTIONS`
list Claude Code's own; an option not listed is taken as a flag, so for a newer
value-taking option write ``--option=value``. Anything after ``--`` is
positional.
"""

from __future__ import annotations

from claude_shepherd.supervisor.session.records import Record

TYPE_CHECKING = False
if TYPE_CHECKING:  # claude-run runs beside every agent: no typing at run time (docs/HOT_CORE.md)
    import typing as t

VALUE_OPTIONS: frozenset[str] = frozenset(
    {
        "--model",
        "--fallback-model",
        "--append-system-prompt",
        "--append-system-prompt-file",
        "--append-subagent-system-prompt",
        "--system-prompt",
        "--system-prompt-file",
        "--permission-mode",
        "--permission-prompt-tool",
        "--output-format",
        "--input-format",
        "--max-turns",
        "--max-budget-usd",
        "--max-thinking-tokens",
        "--session-id",
        "--settings",
        "--setting-sources",
        "--agent",
        "--agents",
        "--json-schema",
        "--advisor",
        "--effort",
        "--name",
        "-n",
    }
)
"""Claude options that take exactly one value."""

VARIADIC_OPTIONS: frozenset[str] = frozenset(
    {
        "--add-dir",
        "--allowedTools",
        "--allowed-tools",
        "--disallowedTools",
        "--disallowed-tools",
        "--mcp-config",
        "--plugin-dir",
        "--tools",
        "--betas",
    }
)
"""Claude options that take every following non-option argument (commander's ``<x...>``)."""

OPTIONAL_VALUE_OPTIONS: frozenset[str] = frozenset(
    {"--resume", "-r", "--debug", "-d", "--from-pr", "--worktree", "-w"}
)
"""Claude options whose value may be omitted (``--resume`` alone opens a picker)."""

CONVERSATION_SELECTORS: frozenset[str] = frozenset(
    {"--resume", "-r", "--continue", "-c", "--session-id", "--fork-session", "--from-pr", "--teleport"}
)
"""Options that choose which conversation Claude opens: first launch only."""


class ClaudeArgs(Record):
    """The user's arguments split by how long they apply."""

    __slots__ = ("every_launch", "first_launch_selectors", "prompt")
    every_launch: tuple[str, ...]
    first_launch_selectors: tuple[str, ...]
    prompt: tuple[str, ...]

    def __init__(
        self,
        every_launch: tuple[str, ...] = (),
        first_launch_selectors: tuple[str, ...] = (),
        prompt: tuple[str, ...] = (),
    ) -> None:
        self.every_launch = every_launch
        self.first_launch_selectors = first_launch_selectors
        self.prompt = prompt

    @property
    def selects_conversation(self) -> bool:
        """Did the user pick the first conversation themselves (so we must not add ``--resume``)?"""
        return bool(self.first_launch_selectors)

    @property
    def resume_id(self) -> str | None:
        """The id of the user's own ``--resume ID``, if any."""
        sel = self.first_launch_selectors
        for i, token in enumerate(sel):
            name, eq, value = token.partition("=")
            if name in ("--resume", "-r"):
                if eq:
                    return value or None
                if i + 1 < len(sel) and not sel[i + 1].startswith("-"):
                    return sel[i + 1]
        return None


def _option_name(token: str) -> tuple[str, bool]:
    """``--x=v`` → (``--x``, True); ``--x`` → (``--x``, False)."""
    if token.startswith("--") and "=" in token:
        return token.split("=", 1)[0], True
    return token, False


def split_args(args: t.Sequence[str]) -> ClaudeArgs:
    """Sort the user's Claude arguments into every-launch, selector and prompt parts."""
    every: list[str] = []
    selectors: list[str] = []
    prompt: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        if token == "--":
            prompt.extend(args[i + 1 :])
            break
        if not token.startswith("-") or token == "-":
            prompt.append(token)
            i += 1
            continue
        name, inline = _option_name(token)
        group = [token]
        i += 1
        if not inline:
            if name in VALUE_OPTIONS:
                if i < len(args):
                    group.append(args[i])
                    i += 1
            elif name in VARIADIC_OPTIONS:
                while i < len(args) and not args[i].startswith("-"):
                    group.append(args[i])
                    i += 1
            elif name in OPTIONAL_VALUE_OPTIONS:  # noqa: SIM102 (one branch per kind of option)
                if i < len(args) and not args[i].startswith("-"):
                    group.append(args[i])
                    i += 1
        (selectors if name in CONVERSATION_SELECTORS else every).extend(group)
    return ClaudeArgs(tuple(every), tuple(selectors), tuple(prompt))


def launch_argv(
    claude: str,
    user: ClaudeArgs,
    *,
    system_prompt: str | None,
    resume: str | None = None,
    prompt: str | None = None,
    with_selectors: bool = False,
    with_prompt: bool = False,
) -> list[str]:
    """The full command line of one launch.

    Our options come first (``--append-system-prompt``, ``--resume``), then the
    positional prompt — placed before the user's options so that none of
    theirs that takes several values (``--add-dir a b``) can swallow it — then
    the user's options. *with_selectors* / *with_prompt* add the user's
    first-launch-only parts; a restart *prompt* replaces the user's prompt.
    """
    argv = [claude]
    if system_prompt:
        argv += ["--append-system-prompt", system_prompt]
    if resume:
        argv += ["--resume", resume]
    positional = [prompt] if prompt else list(user.prompt) if with_prompt else []
    dashed = any(p.startswith("-") for p in positional)
    if not dashed:
        argv += positional
    argv += user.every_launch
    if with_selectors:
        argv += user.first_launch_selectors
    if dashed:
        argv += ["--", *positional]
    return argv
