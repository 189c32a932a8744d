"""How full is the context window? Two sources, the newer one wins.

* The status line's ``used_percentage``, stored by ``claude-hook status-line``
  as ``contextUsage`` (with ``contextUsageAt``). The status line never runs in
  ``claude -p`` (docs/CLAUDE_CODE.md §6.4), so that value can be missing or old.
* The transcript: when a PreToolUse hook runs, the assistant message that asked
  for the tool is already in the transcript with its ``usage`` (docs/CLAUDE_CODE.md §6.9);
  input + cache tokens ÷ the window size is the same quantity.

A number that is missing, not a number, negative or not finite is *unknown*,
never 0: an unknown reading must not look like an empty context and lift the
overflow gate. Nor may an older reading stand in for a newest one that cannot
be read (a line nested past the parser, bad numbers): that is an *unreadable*
reading, and the gate denies on it (docs/CLAUDE_CODE.md §6.9). Standard library only.
"""

from __future__ import annotations

import json
import math
import os
import time

from claude_shepherd.supervisor.session.fields import F

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

TAIL_CHUNK = 64 * 1024
TAIL_MAX = 8 * 1024 * 1024
CALL_WAIT = 1.0  # seconds to wait for the line of the current tool call (seen landing 25 ms late when idle)
CALL_POLL = 0.005
LIVE_WRITE_SECONDS = 5.0  # a transcript written this recently is still being written
SYNTHETIC_MODEL = "<synthetic>"
TOKEN_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")

KNOWN_WINDOWS: tuple[tuple[str, int], ...] = (
    ("claude-opus-5", 1_000_000),  # observed: the default model, 1M
    ("claude-sonnet-4-5", 200_000),  # observed
    ("claude-opus-4", 200_000),
    ("claude-sonnet-4", 200_000),
    ("claude-haiku-4", 200_000),
    ("claude-3", 200_000),
)
"""Window sizes by model-id prefix; a recorded window is used only for a model not listed here."""
LARGEST_WINDOW = 1_000_000
"""No recorded window counts as larger than the largest any model has."""


class Usage:
    """One reading of context usage."""

    __slots__ = ("fraction", "at", "source")

    def __init__(self, fraction: float | None, at: str, source: str) -> None:
        self.fraction = fraction  # of the window, 0.0 .. 1.0; None: the reading is there but unreadable
        self.at = at  # ISO-8601 UTC timestamp of the reading, "" when unknown
        self.source = source  # "status line" or "transcript"

    @property
    def unreadable(self) -> bool:
        return self.fraction is None

    def __repr__(self) -> str:
        return f"Usage({self.fraction!r}, {self.at!r}, {self.source!r})"


def unreadable() -> Usage:
    """The newest transcript reading, which could not be read: never replaced by an older one."""
    return Usage(None, "", "transcript")


def number(value: object) -> float | None:
    """A real, finite, non-negative number, else None (bools are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    if not math.isfinite(value) or value < 0:
        return None
    return value


def positive_int(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value


def fraction_from_percentage(value: object) -> float | None:
    """``used_percentage`` (0-100) as a fraction; over 100 is full, not invalid."""
    pct = number(value)
    return None if pct is None else min(pct, 100.0) / 100.0


def statusline_reading(data: t.Mapping[str, object]) -> tuple[float | None, int | None]:
    """(usage fraction, window size) from the status line's stdin object."""
    window = data.get("context_window")
    if not isinstance(window, dict):
        return None, None
    return (
        fraction_from_percentage(window.get("used_percentage")),
        positive_int(window.get("context_window_size")),
    )


CLOCK_SKEW = 60.0
"""Seconds a stored reading may lie in the future before it counts as undated."""


def stored_usage(state: t.Mapping[str, object], now: float | None = None) -> Usage | None:
    """The status line's reading as stored in the state.

    The state file is within an agent's reach, so a reading dated in the future
    (which would outvote every transcript reading for ever) counts as undated.
    """
    fraction = number(state.get(F.CONTEXT_USAGE))
    if fraction is None:
        return None
    at = state.get(F.CONTEXT_USAGE_AT)
    stamp = _stamp(at) if isinstance(at, str) else None
    latest = time.strftime(
        "%Y-%m-%dT%H:%M:%S", time.gmtime((time.time() if now is None else now) + CLOCK_SKEW)
    )
    return Usage(
        fraction, at if isinstance(at, str) and stamp is not None and stamp <= latest else "", "status line"
    )


def window_for_model(model: object) -> int | None:
    if not isinstance(model, str):
        return None
    if "[1m]" in model:
        return 1_000_000
    for prefix, size in KNOWN_WINDOWS:
        if model.startswith(prefix):
            return size
    return None


def _usage_of(entry: object, recorded_window: int | None) -> Usage | bool | None:
    """The reading in one transcript line; False when the line carries none (look further back)."""
    if not isinstance(entry, dict) or entry.get("type") != "assistant" or entry.get("isSidechain") is True:
        return False
    message = entry.get("message")
    if not isinstance(message, dict) or not isinstance(message.get("usage"), dict):
        return False
    model = message.get("model")
    if model == SYNTHETIC_MODEL:
        return False  # a locally generated message (API error): no real usage
    usage = message["usage"]
    total = 0.0
    for name in TOKEN_FIELDS:
        if name not in usage and name != "input_tokens":
            continue
        tokens = number(usage.get(name))
        if tokens is None:
            return unreadable()  # unknown, and not to be replaced by older data
        total += tokens
    if total <= 0:
        return False
    # The model's own window first: a recorded one is a value in the agent's reach.
    window = window_for_model(model) or (min(recorded_window, LARGEST_WINDOW) if recorded_window else None)
    if not window:
        return None
    stamp = entry.get("timestamp")
    return Usage(total / window, stamp if isinstance(stamp, str) else "", "transcript")


def _scan(
    path: str, window: int | None, marker: bytes | None, *, settled: bool
) -> tuple[Usage | None, bool, bool]:
    """The newest usage in the transcript; whether *marker* appears in that line or after it; and
    whether the last line is still being written (cut short: wait for it unless *settled*).

    A line that cannot be parsed and may be an assistant response (it names ``"assistant"``) is an
    unreadable reading, not one to skip: skipping it let an older, lower reading judge the call.
    """
    seen = False
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        span = TAIL_CHUNK
        while True:
            start = max(0, size - span)
            handle.seek(start)
            lines = handle.read(size - start).split(b"\n")
            if start > 0:
                lines = lines[1:]  # the first one is cut
            for index, line in enumerate(reversed(lines)):
                seen = seen or (marker is not None and marker in line)
                written = index > 0  # every line but the last ends with a newline
                if written and b'"usage"' not in line:
                    continue
                if not line:
                    continue
                try:
                    found = _usage_of(json.loads(line), window)
                except (ValueError, RecursionError):
                    if not written and not settled:
                        return None, seen, True
                    if b'"assistant"' not in line:
                        continue  # not a response, whatever else it is
                    found = unreadable()
                if found is not False:
                    return (found if isinstance(found, Usage) else None), seen, False
            if start == 0 or span >= TAIL_MAX:
                return None, seen, False
            span *= 4


def _tool_use_marker(tool_use_id: object) -> bytes | None:
    if not isinstance(tool_use_id, str) or not 0 < len(tool_use_id) <= 200:
        return None
    if not all(c.isalnum() or c in "_-" for c in tool_use_id):
        return None
    return b'"' + tool_use_id.encode() + b'"'


def transcript_usage(
    path: object, recorded_window: object = None, tool_use_id: object = None, wait: float = CALL_WAIT
) -> Usage | None:
    """The newest main-conversation usage in the transcript at *path*, or None.

    With *tool_use_id*, the reading should be that of the response asking for
    this call. Claude Code writes the transcript asynchronously, so that line
    can land a few milliseconds after the hook starts (seen with the real CLI
    in ``-p``); while the file is being written, wait up to *wait* seconds for
    it rather than judge by the previous response.
    """
    if not isinstance(path, str) or not os.path.isabs(path) or "\0" in path:
        return None
    window = positive_int(recorded_window)
    marker = _tool_use_marker(tool_use_id)
    deadline: float | None = None
    settled = False
    try:
        while True:
            if not os.path.isfile(path):
                return None  # not a regular file: a FIFO would block the hook until it times out
            found, seen, pending = _scan(path, window, marker, settled=settled)
            if not pending and (seen or marker is None):
                return found
            now = time.monotonic()
            if deadline is None:
                if time.time() - os.stat(path).st_mtime > LIVE_WRITE_SECONDS:
                    if not pending:
                        return found  # nobody is writing it: this call's line is not coming
                    settled = True  # a line cut short for good: read it as it is
                    continue
                deadline = now + wait
            if now >= deadline:
                if not pending:
                    return found
                settled = True
                continue
            time.sleep(CALL_POLL)
    except OSError:
        return None


def _stamp(at: str) -> str | None:
    """``YYYY-MM-DDTHH:MM:SS`` of a UTC ISO timestamp, or None if it is not one."""
    head = at[:19]
    if len(head) == 19 and head[4] == "-" and head[7] == "-" and head[10] == "T" and head[13] == ":":
        return head
    return None


def newest(first: Usage | None, second: Usage | None) -> Usage | None:
    """The more recent reading; within the same second (or undated), the fuller one.

    An unreadable reading wins: it is the transcript's newest, which no stored one can be newer than
    in a way that can be checked.
    """
    if first is None or second is None:
        return first if second is None else second
    if first.fraction is None or second.fraction is None:
        return first if first.fraction is None else second
    a, b = _stamp(first.at), _stamp(second.at)
    if a and b and a != b:
        return first if a > b else second
    if bool(a) != bool(b):
        return first if a else second
    return first if first.fraction >= second.fraction else second
