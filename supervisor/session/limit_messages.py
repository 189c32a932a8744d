"""Claude's usage-limit text: which window stopped the agent, and when it reopens.

A usage limit ends the turn with a line of text (``You've hit your 5-hour limit · resets 3:47pm (UTC)``)
and no reading: the StopFailure hook parses it to mark the agent limited until the reset
(:func:`.usage_windows.note_limited`). The forms are those CLI 2.1.328 and 2.1.332 print.
Standard library only: the hooks import it.
"""

from __future__ import annotations

import re
import time

from claude_shepherd.supervisor.session.usage_records import MAX_AHEAD

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_RESET = re.compile(
    r"resets\s+(?:(?P<month>"
    + "|".join(_MONTHS)
    + r")\w*\.?\s+(?P<day>\d{1,2}),?\s+(?:(?P<year>\d{4}),?\s+)?)?"
    r"(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?\s*(?P<ampm>[ap]m)\b(?:\s*\((?P<zone>[A-Za-z0-9_+\-/]{1,64})\))?",
    re.IGNORECASE,
)
_LIMIT = re.compile(r"\b(?:hit|reached) your (?:(?P<kind>[\w'-]+(?: [\w'-]+)*?) )?limit\b", re.IGNORECASE)
WINDOW_WORDS = {
    "5-hour": "five_hour",
    "session": "five_hour",
    "weekly": "seven_day",
    "opus": "seven_day_opus",
    "sonnet": "seven_day_sonnet",
    "fable": "seven_day_overage_included",
    "usage credit": "overage",
}
"""What Claude calls a window in ``You've hit your <words> limit`` (CLI 2.1.328 and 2.1.332), by name."""
UNKNOWN = "unknown"
"""The window of a usage limit whose text names none (``You've hit your limit``, ``…usage limit``)."""
_UNNAMED = ("", "usage")
_SHOWN = {"five_hour": "5-hour", "seven_day": "weekly", "seven_day_opus": "weekly Opus",
          "seven_day_sonnet": "weekly Sonnet", "seven_day_overage_included": "Fable", "overage": "usage credit",
          UNKNOWN: "usage"}  # fmt: skip


def window_words(name: str) -> str:
    """A window as a person reads it: ``5-hour``, ``weekly``… (*name* itself for one not known)."""
    return _SHOWN.get(name, name)


def parse_message(message: str, now: float | None = None) -> tuple[str, float | None]:
    """The window and the reset of Claude's usage-limit text, as CLI 2.1.328 and 2.1.332 print it:
    ``You've hit your 5-hour limit · resets 3:47pm (UTC)``, ``… weekly limit · resets Nov 27, 11:48pm
    (UTC)``, ``… Opus limit``, ``… session limit``, the plain ``You've hit your limit · resets 10pm (UTC)``
    (a subscription whose overage was refused), ``… usage limit``, ``Usage limit reached``. A window
    named by none of them is :data:`UNKNOWN`. The reset is the next such moment after *now*, in the
    time zone printed (Claude's own; local time when it names none this machine knows), or None."""
    now = time.time() if now is None else now
    kind = _LIMIT.search(message)
    words = (kind.group("kind") or "").strip().lower() if kind else ""
    if words in WINDOW_WORDS:
        window = WINDOW_WORDS[words]
    elif words in _UNNAMED:
        window = UNKNOWN
    else:  # a name as a reading's are: the mark that holds it must stay small enough to be read back
        window = re.sub(r"[^a-z0-9_]+", "_", words)[:40] or UNKNOWN
    match = _RESET.search(message[:2000])
    return window, (_reset_at(match, now) if match is not None else None)


def _reset_at(match: re.Match[str], now: float) -> float | None:
    """The moment of a ``resets …`` *match*: the first one after *now* (a minute's slack) it can name."""
    hour = int(match.group("hour")) % 12 + (12 if match.group("ampm").lower() == "pm" else 0)
    minute = int(match.group("minute") or 0)
    if minute > 59 or not 1 <= int(match.group("hour")) <= 12:
        return None
    month_name = (match.group("month") or "").title()
    dated = month_name in _MONTHS
    year_given = match.group("year")
    zone = _zone(match.group("zone"))
    try:
        if zone is None:
            local = time.localtime(now)
            year, month, day = local.tm_year, local.tm_mon, local.tm_mday
            if dated:
                month, day = _MONTHS.index(month_name) + 1, int(match.group("day"))
            year = int(year_given) if year_given else year

            def at(y: int) -> float:
                return time.mktime((y, month, day, hour, minute, 0, 0, 0, -1))
        else:
            from datetime import datetime

            today = datetime.fromtimestamp(now, zone)
            year, month, day = today.year, today.month, today.day
            if dated:
                month, day = _MONTHS.index(month_name) + 1, int(match.group("day"))
            year = int(year_given) if year_given else year

            def at(y: int) -> float:
                return datetime(y, month, day, hour, minute, tzinfo=zone).timestamp()

        when = at(year)
        if when <= now - 60 and not year_given:
            when = at(year + 1) if dated else when + 86400
    except (OverflowError, ValueError, OSError):
        return None
    return when if now - 60 < when <= now + MAX_AHEAD else None


def _zone(name: str | None) -> t.Any:
    """The time zone Claude printed (``UTC``, ``Europe/Berlin``), or None: local time."""
    if not name:
        return None
    try:
        from zoneinfo import ZoneInfo

        return ZoneInfo(name)
    except (ImportError, ValueError, OSError, KeyError):
        return None  # an abbreviation or a zone this machine lacks: Claude's clock is this machine's
