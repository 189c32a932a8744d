"""``claude-hook EVENT``: the one entry point Claude Code calls.

Events: ``pre-tool-use``, ``user-prompt-submit``, ``session-start``,
``status-line``, ``stop`` and ``notification`` (the last two only mark the
fleet pane done / needs-you, :mod:`claude_shepherd.supervisor.pane_notify`), ``stop-failure`` (a usage
limit: :mod:`claude_shepherd.hooks.stop_failure`), ``pre-skill-shell-command`` (a skill's inline
shell command, gated like Bash: :mod:`claude_shepherd.hooks.skill_shell`), ``post-tool-batch`` (a
budget's last word before the next request: :mod:`claude_shepherd.hooks.tool_batch`), ``pre-compact`` (no
compaction at a budget: :mod:`claude_shepherd.hooks.compact_gate`); and ``install`` /
``uninstall`` to set them up. Dispatch is a
plain look at ``sys.argv`` — no argparse, no typer (56 ms to import) — and each
event module is imported only when called, so a hook call loads the standard
library and our small modules, nothing else. Hook events always exit 0: any
other status makes Claude Code fail open or show an error instead of our answer.
"""

from __future__ import annotations

import os
import sys

from claude_shepherd.hooks.protocol import HOOK_EVENTS, PRE_SKILL_SHELL_COMMAND, PRE_TOOL_USE

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

SETUP_COMMANDS = ("install", "uninstall")
GATES = {"pre-tool-use": PRE_TOOL_USE, "pre-skill-shell-command": PRE_SKILL_SHELL_COMMAND}
"""The events whose answer decides whether something runs, with Claude Code's name for each: they fail
closed (a hook that crashes or is late lets it run)."""
USAGE = (
    "usage: claude-hook EVENT < hook-input.json\n"
    f"  EVENT: {', '.join(HOOK_EVENTS)}\n"
    "       claude-hook install [--user | --project | --settings-file PATH] [--dry-run]\n"
    "       claude-hook uninstall [--user | --project | --settings-file PATH] [--dry-run]\n"
    "example:\n"
    "  claude-hook install --dry-run   # what installing into ~/.claude/settings.json would change"
)


def _runner(event: str) -> t.Callable[[bytes, t.Mapping[str, str]], str]:
    if event == "pre-tool-use":
        from claude_shepherd.hooks.pre_tool_use import run
    elif event == "user-prompt-submit":
        from claude_shepherd.hooks.prompt_submit import run
    elif event == "session-start":
        from claude_shepherd.hooks.session_start import run
    elif event == "stop":
        from claude_shepherd.hooks.turn_events import run_stop as run
    elif event == "notification":
        from claude_shepherd.hooks.turn_events import run_notification as run
    elif event == "stop-failure":
        from claude_shepherd.hooks.stop_failure import run
    elif event == "pre-skill-shell-command":
        from claude_shepherd.hooks.skill_shell import run
    elif event == "post-tool-batch":
        from claude_shepherd.hooks.tool_batch import run
    elif event == "pre-compact":
        from claude_shepherd.hooks.compact_gate import run
    else:
        from claude_shepherd.hooks.statusline import run
    return run


def run_hook(event: str, raw: bytes, env: t.Mapping[str, str] | None = None) -> str:
    """The stdout of hook *event* for stdin *raw* (what tests call in-process)."""
    return _runner(event)(raw, os.environ if env is None else env)


def _late_answer(event: str, limit: float) -> str:
    """What a hook that missed its deadline answers: the gates fail closed, the status line says so."""
    if event in GATES:
        from claude_shepherd.hooks.pre_tool_use import failure_reason
        from claude_shepherd.hooks.protocol import deny

        return deny(
            failure_reason(
                f"it found no answer within {limit:g} s (a FIFO or a huge file in the sessions "
                "root can do that; `fleet doctor` lists them)",
                GATES[event],
            ),
            GATES[event],
        )
    if event == "status-line":
        return f"No session · claude-hook status-line: no answer within {limit:g} s"
    return ""


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    command = args[0] if args else ""
    if command in HOOK_EVENTS:
        from claude_shepherd.hooks import deadline
        from claude_shepherd.hooks.protocol import emit, read_stdin

        limit = deadline.seconds(os.environ)
        deadline.arm(limit, _late_answer(command, limit), emit)
        try:
            out = run_hook(command, read_stdin())
        except Exception as exc:
            from claude_shepherd.hooks.protocol import deny, note, one_line

            out = ""
            if command in GATES:
                out = deny(
                    one_line(f"claude-hook {command} failed ({type(exc).__name__}: {exc}); blocked."),
                    GATES[command],
                )
            else:
                note(f"claude-hook {command} failed ({type(exc).__name__}: {exc})")
        deadline.answer(out, emit)
        return 0
    if command == "alert":  # internal: the process a pane's alert runs in (claude_shepherd.supervisor.alerts)
        from claude_shepherd.supervisor.alerts import main as alert_main

        return alert_main(args[1:])
    if (
        command == "pane-died"
    ):  # internal: the fleet server's pane-died hook (claude_shepherd.hooks.pane_died)
        from claude_shepherd.hooks.pane_died import main as pane_died_main

        return pane_died_main(args[1:])
    if (
        command == "resume-at"
    ):  # internal: types a parked agent's continue prompt at its slot (hooks.usage_turn)
        from claude_shepherd.hooks.usage_turn import resume_at

        return resume_at(args[1:])
    if (
        command == "budget-renews"
    ):  # internal: resumes a paused agent when its budget renews (hooks.budget_renewal)
        from claude_shepherd.hooks.budget_renewal import main as renewal_main

        return renewal_main(args[1:])
    if command == "watch-subagent":  # internal: interrupts a sub-agent's follow-ups at a budget
        from claude_shepherd.hooks.subagent_watch import main as watch_main

        return watch_main(args[1:])
    if command in SETUP_COMMANDS:
        from claude_shepherd.hooks.install import main as setup_main

        return setup_main(args)
    if command in ("-h", "--help", "help"):
        print(USAGE)
        return 0
    if command == "--version":
        from claude_shepherd.supervisor import __version__

        print(f"claude-hook {__version__}")
        return 0
    print(f"claude-hook: unknown event {command!r}\n{USAGE}" if command else USAGE, file=sys.stderr)
    return 2
