"""The replies a transcript gained since a byte offset, each priced (:mod:`.prices`).

Claude Code appends every reply of the main conversation to the transcript as an ``assistant`` line
holding the API's ``usage`` and ``model`` (one line per content block, all with the message's id and
its final usage: a reply is priced once, by its id). The hooks read only what was appended since
they last read (an offset the spend ledger keeps), and only complete lines: a line still being
written is read next time. A sub-agent's replies are written to a transcript of its own
(:func:`subagent_transcript`), every line ``isSidechain``: read as such (*sidechain*), those count; in
the main transcript they and Claude's own error messages (model ``<synthetic>``) cost nothing here; a
line that cannot be read is skipped.

Reads are bounded: at most :data:`READ_LIMIT` bytes, the newest (a longer gap is what a reading of
Claude's own figure covers). Standard library only: the hooks call it on every tool call of an agent
held to a budget.
"""

from __future__ import annotations

import json
import os
import stat
import time

from claude_shepherd.supervisor.session.prices import reply_cost

TYPE_CHECKING = False
if TYPE_CHECKING:
    pass

READ_LIMIT = 8 * 1024 * 1024
"""The most of a transcript read at once (its newest part)."""
COST_STATE_TAIL = 256 * 1024
"""How much of a transcript's end is searched for the last ``cost-state`` line (where a conversation
Claude ended before stands)."""
SYNTHETIC_MODEL = "<synthetic>"
_READ = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC


class Reply:
    """One priced reply: its message id, when Claude wrote it (epoch seconds), USD, known model."""

    __slots__ = ("id", "when", "usd", "known")

    def __init__(self, id: str, when: float, usd: float, known: bool) -> None:
        self.id = id
        self.when = when
        self.usd = usd
        self.known = known

    def __repr__(self) -> str:
        return f"Reply({self.id!r}, {self.when!r}, {self.usd!r}, {self.known!r})"


def epoch(stamp: object) -> float | None:
    """``2026-11-28T01:07:47.531Z`` (JavaScript's ``toISOString``, UTC) as epoch seconds, else None.

    By hand: ``datetime`` and ``time.strptime`` cost a hook milliseconds to import."""
    if not isinstance(stamp, str) or len(stamp) < 20 or stamp[-1] != "Z":
        return None
    try:
        year, month, day = int(stamp[0:4]), int(stamp[5:7]), int(stamp[8:10])
        hour, minute, second = int(stamp[11:13]), int(stamp[14:16]), float(stamp[17:-1])
    except ValueError:
        return None
    if stamp[4] != "-" or stamp[7] != "-" or stamp[10] != "T" or not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    # days from the civil date (Howard Hinnant's algorithm)
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    days = era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468
    return days * 86400 + hour * 3600 + minute * 60 + second


def subagent_transcript(transcript: str, agent_id: object) -> str | None:
    """Where Claude Code writes the replies of sub-agent *agent_id* of the conversation whose transcript is
    *transcript* (``<project>/<session>.jsonl`` → ``<project>/<session>/subagents/agent-<id>.jsonl``, or a
    folder below ``subagents/``), or None: not found, or an id that could name another file."""
    if not isinstance(agent_id, str) or not 0 < len(agent_id) <= 100:
        return None
    if not all(c.isalnum() or c in "-_" for c in agent_id) or not transcript.endswith(".jsonl"):
        return None
    folder = os.path.join(transcript[: -len(".jsonl")], "subagents")
    name = f"agent-{agent_id}.jsonl"
    direct = os.path.join(folder, name)
    if os.path.isfile(direct):
        return direct
    try:
        below = [entry.path for entry in os.scandir(folder) if entry.is_dir(follow_symlinks=False)]
    except OSError:
        return None
    return next((os.path.join(d, name) for d in below if os.path.isfile(os.path.join(d, name))), None)


def subagent_transcripts(transcript: str) -> list[tuple[str, str, float]]:
    """(agent id, path, mtime) of every sub-agent transcript of the conversation whose transcript is
    *transcript* (``subagents/agent-<id>.jsonl`` and one folder below), newest first, at most 64."""
    if not transcript.endswith(".jsonl"):
        return []
    folder = os.path.join(transcript[: -len(".jsonl")], "subagents")
    found: list[tuple[str, str, float]] = []
    try:
        entries = list(os.scandir(folder))
        for d in [e for e in entries if e.is_dir(follow_symlinks=False)][:16]:
            entries += list(os.scandir(d.path))
    except OSError:
        return []
    for entry in entries:
        name = entry.name
        if not (name.startswith("agent-") and name.endswith(".jsonl")):
            continue
        ident = name[len("agent-") : -len(".jsonl")]
        if not 0 < len(ident) <= 100 or not all(c.isalnum() or c in "-_" for c in ident):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            found.append((ident, entry.path, info.st_mtime))
    return sorted(found, key=lambda f: -f[2])[:64]


def reply_of(entry: object, now: float, sidechain: bool = False) -> Reply | None:
    """The priced reply one transcript line holds, or None (a sub-agent's line unless *sidechain*)."""
    if not isinstance(entry, dict) or entry.get("type") != "assistant":
        return None
    if entry.get("isSidechain") is True and not sidechain:
        return None
    message = entry.get("message")
    if not isinstance(message, dict):
        return None
    model, ident = message.get("model"), message.get("id")
    if model == SYNTHETIC_MODEL or not isinstance(ident, str) or not 0 < len(ident) <= 200:
        return None
    priced = reply_cost(model, message.get("usage"))
    if priced is None:
        return None
    when = epoch(entry.get("timestamp"))
    return Reply(ident, now if when is None else when, priced[0], priced[1])


def open_transcript(path: str) -> int | None:
    """The transcript, opened to read without blocking (a FIFO would hang the hook), else None."""
    if not isinstance(path, str) or not os.path.isabs(path) or "\0" in path:
        return None
    try:
        fd = os.open(path, _READ)
    except OSError:
        return None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def start_of(path: str) -> int:
    """Where a conversation not read before starts to be this agent's: after its last ``cost-state``
    line (what Claude spent on it before, counted as its baseline), else where the bounded read starts."""
    fd = open_transcript(path)
    if fd is None:
        return 0
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - COST_STATE_TAIL)
        tail = os.pread(fd, size - start, start)
    except OSError:
        return 0
    finally:
        os.close(fd)
    at = tail.rfind(b'"cost-state"')
    if at != -1:
        end = tail.find(b"\n", at)
        return start + (end + 1 if end != -1 else len(tail))
    return max(0, size - READ_LIMIT)


def size_of(path: str) -> int | None:
    fd = open_transcript(path)
    if fd is None:
        return None
    try:
        return os.fstat(fd).st_size
    except OSError:
        return None
    finally:
        os.close(fd)


def read_since(
    path: str, offset: int, now: float | None = None, *, sidechain: bool = False
) -> tuple[list[Reply], int] | None:
    """The replies appended to the transcript at *path* from byte *offset* on, and the offset after the
    last complete line read; None when the transcript cannot be read. An offset past the end (the file
    was replaced) reads its newest part anew."""
    fd = open_transcript(path)
    if fd is None:
        return None
    now = time.time() if now is None else now
    try:
        size = os.fstat(fd).st_size
        if offset > size:
            offset = max(0, size - READ_LIMIT)
        start = max(offset, size - READ_LIMIT)
        data = os.pread(fd, size - start, start)
    except OSError:
        return None
    finally:
        os.close(fd)
    end = data.rfind(b"\n") + 1  # a line still being written is read next time
    first = 0
    if start > offset and start > 0:  # the bounded read began inside a line
        first = data.find(b"\n") + 1
    replies: list[Reply] = []
    for line in data[first:end].split(b"\n"):
        if b'"assistant"' not in line or b'"usage"' not in line:
            continue
        try:
            reply = reply_of(json.loads(line), now, sidechain)
        except (ValueError, RecursionError):
            continue
        if reply is not None:
            replies.append(reply)
    return replies, start + end if end else max(offset, start)


def has_since(path: str, offset: int, needle: bytes, span: int = READ_LIMIT) -> bool:
    """Is *needle* in the transcript after *offset* (its newest *span* bytes at most)?"""
    fd = open_transcript(path)
    if fd is None:
        return False
    try:
        size = os.fstat(fd).st_size
        start = max(0, min(offset, size), size - span)
        return needle in os.pread(fd, size - start, start)
    except OSError:
        return False
    finally:
        os.close(fd)
