"""``claude-hook stop-failure``: a turn ended on an API error — a usage limit is not a crash.

Claude Code runs the ``StopFailure`` hook once per failed turn, after its retries, with ``error``
(``rate_limit``, ``authentication_failed``, ``billing_error``, ``server_error``…) and the text it
showed (``You've hit your 5-hour limit · resets 3:47pm (UTC)``, on 2.1.332 also ``You've hit your limit ·
resets 10:49pm (UTC)``). A ``rate_limit`` is a usage limit unless Claude's own retries of it ran out
(``API Error: …``, an API key's). For a usage limit the agent is
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

from claude_shepherd.hooks.locate import claimant, locate
from claude_shepherd.hooks.protocol import parse_input
from claude_shepherd.supervisor import pane_notify
from claude_shepherd.supervisor.session import limit_messages, pane_records, usage_windows
from claude_shepherd.supervisor.session.credentials import credential_of
from claude_shepherd.supervisor.session.usage_records import SAME_RESET
from claude_shepherd.supervisor.tmux_names import ERROR, LIMITED

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t

RATE_LIMIT = "rate_limit"
RETRIED = "API Error"
"""How Claude's text begins when its own retries of a 429 ran out: an API key's (or a plain token's) rate
limit, ``API Error: Request rejected (429) · …``, which no usage window of ours explains."""


def limit_of(
    error: str, message: str, windows: t.Mapping[str, t.Mapping[str, float]], now: float
) -> tuple[str, float | None, str] | None:
    """``(window, reset, source)`` of a usage-limit stop, or None when it was none.

    Claude's ``error`` decides (``rate_limit``), not its prose, which each version words anew: every
    form it prints for a subscription's limit (supervisor.session.limit_messages.parse_message) is a
    usage limit, and so is a text not known yet; only the text Claude leaves after its own retries
    (``API Error: …``) is not. The reset is the credential's reading of that window when it stands at
    100 % (exact), else the one printed (to the minute: its end, never too early), else the reading of
    any window at 100 %, else unknown."""
    if error != RATE_LIMIT or message.lstrip().startswith(RETRIED):
        return None
    window, parsed = limit_messages.parse_message(message, now)
    known = windows.get(window) if isinstance(windows.get(window), dict) else None
    if known is not None and usage_windows.closed({window: known}, 100.0, now) is not None:
        return window, float(known["resets_at"]), "reading"
    at_limit = usage_windows.closed(windows, 100.0, now)
    if window == limit_messages.UNKNOWN and at_limit is not None:
        if parsed is None or abs(parsed + 60 - at_limit[2]) <= SAME_RESET:
            return at_limit[0], at_limit[2], "reading"
        return at_limit[0], parsed + 60, "message"
    if parsed is not None:
        return window, parsed + 60, "message"
    if at_limit is not None:
        return at_limit[0], at_limit[2], "reading"
    return window, None, "message"


def run(raw: bytes, env: t.Mapping[str, str]) -> str:
    inp = parse_input(raw)
    error = inp.text("error")
    if error != RATE_LIMIT:
        pane_notify.publish(ERROR, env=env)
        return ""
    now = time.time()
    caller = locate(inp.cwd, env)
    credential = credential_of(env)
    record = usage_windows.read_credential(caller.root, credential)
    windows = record["windows"] if record else {}
    limit = limit_of(error, inp.text("last_assistant_message"), windows, now)
    if limit is None:
        pane_notify.publish(ERROR, env=env)
        return ""
    where = pane_records.spot(caller.pane, claimant(env, caller.pid, caller.token))
    if where is not None:
        window, until, source = limit
        usage_windows.note_limited(caller.root, where[0], credential, until, window, source, now)
    pane_notify.publish(LIMITED, env=env)
    return ""
