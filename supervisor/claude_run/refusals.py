"""Claude refusing to start for a reason no retry can fix is not a crash: claude-run ends, saying why.

Claude Code 2.1.332 names such refusals (``startup_failure_reason`` in its SDK types; the 2.1.332
binary): among them ``sideload_flags_disabled`` (managed settings set ``disableSideloadFlags`` and the
launch names ``--plugin-dir``, ``--plugin-url``, ``--agents`` or ``--mcp-config``),
``worktree_resume_refused`` and ``worktree_unverified`` (a resumed conversation's worktree that cannot
be entered, or not verified). Interactively and in ``-p`` alike it prints one line to standard error
and exits 1 — the reason's name only reaches ``--output-format stream-json`` — so claude-run reads
that line (supervisor.claude_run.stderr_tail). Relaunched, the same Claude would refuse the same way
until the crash limit gave up, saying only that Claude kept exiting 1.

Claude says a worktree it could not verify is "usually transient": that one is tried once more.
"""

from __future__ import annotations

import re

from claude_shepherd.supervisor.session.records import Record

REFUSED_STATUS = 78
"""claude-run's exit status when Claude refused to start for a reason no retry fixes (EX_CONFIG: what
Claude was given, or its settings, must change)."""


class Refusal(Record):
    __slots__ = ("reason", "said", "fix", "retry_once")
    reason: str
    """Claude's own name for it (``sideload_flags_disabled``…)."""
    said: str
    """Claude's line, as it printed it (cut to a line's length)."""
    fix: str
    retry_once: bool

    def __init__(self, reason: str, said: str, fix: str, retry_once: bool = False) -> None:
        self.reason = reason
        self.said = said
        self.fix = fix
        self.retry_once = retry_once

    def message(self) -> str:
        return f"Claude refused to start ({self.reason}: {self.said.rstrip('.')}); {self.fix}"


_FORMS: tuple[tuple[str, re.Pattern[str], str, bool], ...] = (
    (
        "sideload_flags_disabled",
        re.compile(
            r"^(?P<line>\S.*? (?:is|are) disabled by your organization's managed settings "
            r"\(disableSideloadFlags\)\.)",
            re.MULTILINE,
        ),
        "drop those flags from claude-run's Claude arguments (or the layout's command), or have your "
        "administrator remove disableSideloadFlags; not retried",
        False,
    ),
    (
        "worktree_resume_refused",
        re.compile(r"^(?P<line>Error: cannot resume into worktree .*)$", re.MULTILINE),
        "start it fresh, or resume with --fork-session to go on without that worktree; not retried",
        False,
    ),
    (
        "worktree_unverified",
        re.compile(r"^(?P<line>Error: could not verify worktree .* for this resume.*)$", re.MULTILINE),
        "tried again once; run claude-run again later, or check the worktree's git metadata",
        True,
    ),
)
LINE_MAX = 300


def refusal_in(status: int, said: str) -> Refusal | None:
    """The start-up refusal Claude's standard error *said* before it exited with *status*, if any."""
    if status != 1 or not said:
        return None
    text = said.replace("\r\n", "\n").replace("\r", "\n")[-8192:]
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)  # colours (Claude prints these lines in red)
    for reason, pattern, fix, retry in _FORMS:
        found = list(pattern.finditer(text))[-1:]  # the last one: this Claude's
        if found:
            found_line = found[0]
            line = " ".join(found_line.group("line").split())
            return Refusal(reason, line if len(line) <= LINE_MAX else line[: LINE_MAX - 1] + "…", fix, retry)
    return None
