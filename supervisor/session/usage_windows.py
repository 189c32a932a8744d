"""The account's usage windows, per credential, as Claude Code reports them; and which agents they stopped.

Claude Code shows a subscription's usage windows (a 5-hour window, a weekly one, per-model weeks…)
only in the status line's ``rate_limits`` (OAuth or gateway logins; nothing under an API key), and
only after a reply in that process. Every agent's status line hands us its copy, so the fleet keeps
the latest reading of each window here, per *credential*: the one the agent's Claude actually uses
(:func:`.credentials.credential_of`). Files in the usage folder (:mod:`.usage_records`):

* ``credentials/<slug>.json``: ``{"credential": PATH, "windows": {NAME: {"used_percentage",
  "resets_at", "seen_at"}}, "alerted": {NAME: [RESETS_AT, PERCENT…]}}``;
* ``agents/<slug>.json``: ``{"agent": IDENTITY, "credential": PATH, "limited": {"until", "window",
  "source", "since"}}`` — the fleet pane identity ``session:window:label`` (outside a fleet, the
  claude-run's, as :func:`claude_shepherd.supervisor.session.pane_records.spot` names it);
* ``resume-slots.json``: when each parked agent may go on (:mod:`.resume_slots`).

A reset more than :data:`.usage_records.MAX_AHEAD` (8 days) ahead is not believed anywhere here: such a
window is no reading, such a mark's reset is unknown. Windows are merged, never overwritten blindly: an
idle agent's status line re-renders the reading of its last reply, so within one window period (same
``resets_at``) the use only grows, a later ``resets_at`` starts a new period, and a window a reading
leaves out is dropped once its reset passed.
Written only when something changed (the status line runs on every render), never through a link.
Standard library only: the status line and the hooks import it.
"""

from __future__ import annotations

import os
import re
import time

from claude_shepherd.supervisor.session import index_records, usage_records
from claude_shepherd.supervisor.session.numbers import MAX_EPOCH
from claude_shepherd.supervisor.session.usage_records import believed_reset, file_name, number

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t
    from pathlib import Path

    class CredentialRecord(t.TypedDict):
        """``credentials/<slug>.json``, checked: each window's ``used_percentage``, ``resets_at`` and
        ``seen_at``; per window, the reset and the percents it alerted at."""

        credential: str
        windows: dict[str, dict[str, float]]
        alerted: dict[str, list[float]]

    class Limited(t.TypedDict):
        """An agent's mark while a usage limit stops it (``until`` None: its reset is unknown)."""

        until: float | None
        window: str
        source: str
        since: float
        held: t.NotRequired[float | None]

    class AgentRecord(t.TypedDict):
        """``agents/<slug>.json``, checked: the credential the agent uses, and its mark."""

        agent: str
        credential: t.NotRequired[str]
        limited: t.NotRequired[Limited]


CREDENTIALS_DIRNAME = "credentials"
AGENTS_DIRNAME = "agents"
MAX_WINDOWS = 16
WINDOW_FIELDS = ("used_percentage", "resets_at", "seen_at")
_WINDOW_NAME = re.compile(r"[a-z0-9_]{1,40}")

ALERT_PERCENTS: tuple[float, ...] = (80.0, 95.0)
"""Where a window alerts (once per window per reset); ``$CLAUDE_USAGE_ALERTS`` (``80,95``) tunes it."""
WAIT_PERCENT = 95.0
"""At or above this use, starts and relaunches wait for the window's reset (``$CLAUDE_USAGE_WAIT_PERCENT``)."""
RESUME_INTERVAL = 60.0
"""Seconds between two parked agents going on after a reset (``$CLAUDE_USAGE_RESUME_INTERVAL``)."""
LIMITED_GRACE = 15 * 60.0
"""A ``limited`` record older than its reset by this much is stale (the agent went on, or is gone)."""

ALERTS_ENV = "CLAUDE_USAGE_ALERTS"
WAIT_PERCENT_ENV = "CLAUDE_USAGE_WAIT_PERCENT"
RESUME_INTERVAL_ENV = "CLAUDE_USAGE_RESUME_INTERVAL"
IGNORE_ENV = "CLAUDE_USAGE_IGNORE"
"""``1``: start and relaunch without waiting for a closed window (the flag ``--ignore-usage-limits``)."""


# --------------------------------------------------------------------------- reading the status line


def windows_of(data: t.Mapping[str, object], now: float | None = None) -> dict[str, dict[str, float]] | None:
    """The status input's ``rate_limits`` as ``{name: {used_percentage, resets_at}}``; None when it has
    none (an API key, or no reply yet in this process): then nothing is known, not "nothing used".
    A window whose reset lies further ahead than :data:`.usage_records.MAX_AHEAD` is left out."""
    now = time.time() if now is None else now
    limits = data.get("rate_limits")
    if not isinstance(limits, dict):
        return None
    out: dict[str, dict[str, float]] = {}
    for name, window in list(limits.items())[:MAX_WINDOWS]:
        if not isinstance(name, str) or not _WINDOW_NAME.fullmatch(name) or not isinstance(window, dict):
            continue
        used = number(window.get("used_percentage"), 1000.0)
        resets = believed_reset(window.get("resets_at"), now)
        if used is None or resets is None:
            continue
        out[name] = {"used_percentage": min(used, 100.0), "resets_at": resets}
    return out


def merge(
    before: t.Mapping[str, t.Mapping[str, float]], reading: t.Mapping[str, t.Mapping[str, float]], now: float
) -> dict[str, dict[str, float]]:
    """The windows after *reading* (see the module's rules); ``seen_at`` moves only with a change."""
    out: dict[str, dict[str, float]] = {}
    for name, old in before.items():
        if not isinstance(old, dict) or name in reading:
            continue
        resets = believed_reset(old.get("resets_at"), now)
        if resets is not None and resets > now:  # not in this reading, not reset yet: still true
            out[name] = dict(old)
    for name, new in reading.items():
        prior = before.get(name)
        old_resets = believed_reset(prior.get("resets_at"), now) if prior else None
        old_used = number(prior.get("used_percentage"), 100.0) if prior else None
        if prior is not None and old_resets is not None and old_used is not None:
            if new["resets_at"] < old_resets - 1 and old_resets > now:
                out[name] = dict(prior)  # an older period's reading, re-rendered: keep ours
                continue
            if abs(new["resets_at"] - old_resets) <= 1 and new["used_percentage"] <= old_used:
                out[name] = dict(prior)  # the same period, no more used than we know
                continue
        out[name] = {**new, "seen_at": round(now, 3)}
    return out


# --------------------------------------------------------------------------- files


def _windows_of(value: object) -> dict[str, dict[str, float]]:
    """A record's windows, checked: each a mapping of names to numbers."""
    if not isinstance(value, dict):
        return {}
    out: dict[str, dict[str, float]] = {}
    for name, window in list(value.items())[:MAX_WINDOWS]:
        if isinstance(name, str) and isinstance(window, dict):
            numbers = {k: number(window.get(k), MAX_EPOCH) for k in WINDOW_FIELDS}
            out[name] = {k: v for k, v in numbers.items() if v is not None}
    return out


def credential_record_of(data: t.Mapping[str, object], credential: str) -> CredentialRecord:
    """A credential's record as read, checked (the file is within reach of an agent's Bash)."""
    alerted = data.get("alerted")
    marks: dict[str, list[float]] = {}
    for name, mark in alerted.items() if isinstance(alerted, dict) else ():
        if isinstance(name, str) and isinstance(mark, list):
            marks[name] = [v for v in (number(each, MAX_EPOCH) for each in mark) if v is not None]
    return {"credential": credential, "windows": _windows_of(data.get("windows")), "alerted": marks}


def read_credential(root: Path, credential: str) -> CredentialRecord | None:
    data = usage_records.read(root, CREDENTIALS_DIRNAME, file_name(credential), ("credential", credential))
    return None if data is None else credential_record_of(data, credential)


def read_credentials(root: Path) -> list[CredentialRecord]:
    """Every credential's record under *root*, by path."""
    try:
        names = sorted(os.listdir(usage_records.directory(root, CREDENTIALS_DIRNAME)))
    except OSError:
        return []
    out = []
    for name in names[:256]:
        data = usage_records.read(root, CREDENTIALS_DIRNAME, name)
        credential = data.get("credential") if data is not None else None
        if data is not None and isinstance(credential, str) and isinstance(data.get("windows"), dict):
            out.append(credential_record_of(data, credential))
    return out


def agent_record_of(data: t.Mapping[str, object], agent: str) -> AgentRecord:
    """An agent's record as read, checked: a mark without its window or source is no mark."""
    record: AgentRecord = {"agent": agent}
    credential, limited = data.get("credential"), data.get("limited")
    if isinstance(credential, str):
        record["credential"] = credential
    if isinstance(limited, dict):
        window, source = limited.get("window"), limited.get("source")
        if isinstance(window, str) and isinstance(source, str):
            mark: Limited = {"until": number(limited.get("until"), MAX_EPOCH), "window": window, "source": source,
                             "since": number(limited.get("since"), MAX_EPOCH) or 0.0}  # fmt: skip
            if "held" in limited:
                mark["held"] = number(limited.get("held"), MAX_EPOCH)
            record["limited"] = mark
    return record


def read_agents(root: Path) -> list[AgentRecord]:
    """Every agent's record under *root* (for ``fleet usage``)."""
    try:
        names = sorted(os.listdir(usage_records.directory(root, AGENTS_DIRNAME)))
    except OSError:
        return []
    out = []
    for name in names[:4096]:
        data = usage_records.read(root, AGENTS_DIRNAME, name) if name.endswith(".json") else None
        agent = data.get("agent") if data is not None else None
        if data is not None and isinstance(agent, str):
            out.append(agent_record_of(data, agent))
    return out


def forget_credential(root: Path, credential: str) -> None:
    """Drop *credential*'s reading and its resume slots (a person cleared it: ``fleet usage --clear``)."""
    fd = index_records.opened(root, usage_records.folder(CREDENTIALS_DIRNAME))
    if fd is not None:
        try:
            os.unlink(file_name(credential), dir_fd=fd)
        except OSError:
            pass
        finally:
            os.close(fd)
    from claude_shepherd.supervisor.session import resume_slots  # only here: the status line needs none

    resume_slots.forget(root, credential)


def read_agent(root: Path, agent: str) -> AgentRecord | None:
    data = usage_records.read(root, AGENTS_DIRNAME, file_name(agent), ("agent", agent))
    return None if data is None else agent_record_of(data, agent)


def note_reading(
    root: Path, credential: str, reading: t.Mapping[str, t.Mapping[str, float]], now: float | None = None
) -> tuple[CredentialRecord, list[tuple[str, float, float]]]:
    """Merge a status line's *reading* into *credential*'s record; written only when it changed.

    Returns the record and the alerts it crossed into: ``(window, percent, resets_at)`` for each
    threshold of :func:`alert_percents` a window reached for the first time in its period. A change
    is merged again under the credential's lock (``fcntl``), so that of two agents whose status
    lines see the same crossing at once, one alerts.
    """
    now = time.time() if now is None else now
    record, crossed, changed = _merged(read_credential(root, credential), credential, reading, now)
    if not changed:
        return record, crossed
    import fcntl

    try:
        os.makedirs(usage_records.directory(root, CREDENTIALS_DIRNAME), exist_ok=True)
        lock = os.open(
            os.path.join(
                usage_records.directory(root, CREDENTIALS_DIRNAME), "." + file_name(credential) + ".lock"
            ),
            os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
        )
    except OSError:
        return record, []
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        record, crossed, changed = _merged(read_credential(root, credential), credential, reading, now)
        if changed:
            usage_records.write(root, CREDENTIALS_DIRNAME, file_name(credential), record)
        return record, crossed
    finally:
        os.close(lock)


def _merged(
    before: CredentialRecord | None,
    credential: str,
    reading: t.Mapping[str, t.Mapping[str, float]],
    now: float,
) -> tuple[CredentialRecord, list[tuple[str, float, float]], bool]:
    """The record after *reading*, the alerts it crosses into, and whether it changed."""
    old_windows = before["windows"] if before else {}
    windows = merge(old_windows, reading, now)
    alerted_before = before["alerted"] if before else {}
    alerted: dict[str, list[float]] = {}
    crossed: list[tuple[str, float, float]] = []
    percents = alert_percents()
    for name, window in windows.items():
        previous = alerted_before.get(name)
        done = previous[1:] if previous and previous[0] == window["resets_at"] else []
        for percent in percents:
            if window["used_percentage"] >= percent and percent not in done:
                done = [*done, percent]
                crossed.append((name, percent, window["resets_at"]))
        if done:
            alerted[name] = [window["resets_at"], *done]
    record: CredentialRecord = {"credential": credential, "windows": windows, "alerted": alerted}
    changed = (windows, alerted) != (old_windows, alerted_before)  # a first reading of nothing writes nothing
    return record, crossed, changed


def note_agent(root: Path, agent: str, credential: str) -> AgentRecord:
    """Record that *agent* uses *credential* (written only when that is news); returns its record."""
    before = read_agent(root, agent)
    if before is not None and before.get("credential") == credential:
        return before
    record: AgentRecord = {"agent": agent, "credential": credential}
    usage_records.write(root, AGENTS_DIRNAME, file_name(agent), record)
    return record


def note_limited(
    root: Path,
    agent: str,
    credential: str,
    until: float | None,
    window: str,
    source: str,
    now: float | None = None,
    held: float | None = None,
) -> AgentRecord:
    """*agent* hit *window*'s limit; it reopens at *until* (known from *source*: ``reading``,
    ``message``, or ``continue``: a continue prompt held with no mark before; None: unknown). *held*:
    the slot at which a process of the hooks types its held continue prompt (hooks.usage_turn)."""
    now = time.time() if now is None else now
    limited: Limited = {
        "until": believed_reset(until, now),
        "window": window,
        "source": source,
        "since": round(now, 3),
    }
    if held is not None:
        limited["held"] = believed_reset(held, now)
    record: AgentRecord = {"agent": agent, "credential": credential, "limited": limited}
    usage_records.write(root, AGENTS_DIRNAME, file_name(agent), record)
    return record


def clear_limited(root: Path, agent: str) -> None:
    """*agent* goes on: its ``limited`` mark goes (its credential stays)."""
    before = read_agent(root, agent)
    if before is not None and "limited" in before:
        del before["limited"]
        usage_records.write(root, AGENTS_DIRNAME, file_name(agent), before)


def limited_of(record: AgentRecord | None, now: float | None = None) -> Limited | None:
    """The agent's ``limited`` mark while it stands (until its reset plus :data:`LIMITED_GRACE`); its
    ``until`` is a number within :data:`.usage_records.MAX_AHEAD` of *now*, or None (unknown)."""
    limited = record.get("limited") if record else None
    if limited is None:
        return None
    now = time.time() if now is None else now
    until = believed_reset(limited["until"], now)
    since = number(limited["since"], now + 60) or 0.0  # never a mark from the future
    if until is None:
        return {**limited, "until": None} if now - since < LIMITED_GRACE else None
    return {**limited, "until": until} if now < until + LIMITED_GRACE else None


# --------------------------------------------------------------------------- the reset


def closed(
    windows: t.Mapping[str, object], percent: float, now: float | None = None
) -> tuple[str, float, float] | None:
    """The window at or above *percent* that reopens last, as ``(name, used, resets_at)``; None when
    every window known is below it (or has reset)."""
    now = time.time() if now is None else now
    worst: tuple[str, float, float] | None = None
    for name, window in windows.items():
        if not isinstance(window, dict):
            continue
        used = number(window.get("used_percentage"), 100.0)
        resets = believed_reset(window.get("resets_at"), now)
        if used is None or resets is None or used < percent or resets <= now:
            continue
        if worst is None or resets > worst[2]:
            worst = (name, used, resets)
    return worst


def clock(epoch: float, now: float | None = None) -> str:
    """``15:47`` (local time) for a moment within a day, else ``Nov 27 15:47``; ``?`` for no moment this
    machine can show (another host may send any number)."""
    now = time.time() if now is None else now
    try:
        local = time.localtime(epoch)
    except (OverflowError, OSError, ValueError):
        return "?"
    if abs(epoch - now) < 20 * 3600:
        return time.strftime("%H:%M", local)
    return time.strftime("%b %d %H:%M", local)


# --------------------------------------------------------------------------- tuning


def _env(env: t.Mapping[str, str] | None) -> t.Mapping[str, str]:
    return os.environ if env is None else env


def alert_percents(env: t.Mapping[str, str] | None = None) -> tuple[float, ...]:
    raw = _env(env).get(ALERTS_ENV, "")
    if not raw.strip():
        return ALERT_PERCENTS
    out = []
    for part in raw.split(","):
        try:
            value = float(part)
        except ValueError:
            continue
        if 0 < value <= 100:
            out.append(value)
    return tuple(sorted(out))


def _tuned(env: t.Mapping[str, str] | None, name: str, default: float, most: float) -> float:
    from claude_shepherd.supervisor.session.numbers import parse_decimal

    value = parse_decimal(_env(env).get(name, "").strip(), maximum=most)
    return default if value is None else value


def wait_percent(env: t.Mapping[str, str] | None = None) -> float:
    return _tuned(env, WAIT_PERCENT_ENV, WAIT_PERCENT, 100.0)


def resume_interval(env: t.Mapping[str, str] | None = None) -> float:
    return _tuned(env, RESUME_INTERVAL_ENV, RESUME_INTERVAL, 24 * 3600.0)


def ignored(env: t.Mapping[str, str] | None = None) -> bool:
    return _env(env).get(IGNORE_ENV, "") == "1"
