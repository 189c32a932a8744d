"""``claude-hook stop-failure``: a turn ended on an API error — a usage limit is not a crash.

Claude Code runs the ``StopFailure`` hook once per failed turn, after its retries, with ``error``
(``rate_limit``, ``authentication_failed``, ``billing_error``, ``server_error``…) and the text it
showed (``You've hit your 5-hour limit · resets 3:47pm (UTC)``). For a usage limit the agent is
recorded ``limited`` until the window reopens — the reset read from the credential's latest reading
of that window when it has one (exact, epoch seconds), else parsed from the text (to the minute, in
local time: the end of that minute, never too early) — and its fleet pane shows ``limited``; claude-run reads the record to wait for the reset
instead of counting a crash (supervisor.claude_run.usage_wait). Any other failure shows ``error``.

Under ``claude -p`` Claude does not wait for this hook: it exits and kills it, so ``claude-hook
install`` installs it behind ``setsid -f`` (a process of its own, which outlives Claude).
Prints nothing. Standard library only.
"""

from __future__ import annotations

import time

from claude_shepherd.hooks import pane_notify
from claude_shepherd.hooks.locate import claimant, locate
from claude_shepherd.hooks.protocol import parse_input
from claude_shepherd.supervisor.session import pane_records, usage_windows
from claude_shepherd.supervisor.tmux_names import ERROR, LIMITED

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t

RATE_LIMIT = "rate_limit"


def limit_of(
    message: str, windows: t.Mapping[str, t.Any], now: float
) -> tuple[str, float | None, str] | None:
    """``(window, reset, source)`` of a usage-limit stop, or None when *message* is no usage limit
    (an API key's plain 429, which Claude already retried)."""
    window, parsed = usage_windows.parse_message(message, now)
    at_limit = usage_windows.closed(windows, 100.0, now)
    if window == "unknown" and at_limit is None:
        return None
    known = windows.get(window) if isinstance(windows.get(window), dict) else None
    if known is not None and usage_windows.closed({window: known}, 100.0, now) is not None:
        return window, float(known["resets_at"]), "reading"
    if parsed is not None:
        return window, parsed + 60, "message"  # printed to the minute: its end, never too early
    if at_limit is not None:
        return at_limit[0], at_limit[2], "reading"
    return window, None, "message"


def run(raw: bytes, env: t.Mapping[str, str]) -> str:
    inp = parse_input(raw)
    if inp.text("error") != RATE_LIMIT:
        pane_notify.publish(ERROR, env=env)
        return ""
    now = time.time()
    caller = locate(inp.cwd, env)
    credential = usage_windows.credential_of(env)
    record = usage_windows.read_credential(caller.root, credential) or {}
    windows = record.get("windows")
    windows = windows if isinstance(windows, dict) else {}
    limit = limit_of(inp.text("last_assistant_message"), windows, now)
    if limit is None:
        pane_notify.publish(ERROR, env=env)
        return ""
    where = pane_records.spot(caller.pane, claimant(env, caller.pid, caller.token))
    if where is not None:
        window, until, source = limit
        usage_windows.note_limited(caller.root, where[0], credential, until, window, source, now)
    pane_notify.publish(LIMITED, env=env)
    return ""
