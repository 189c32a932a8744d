"""The account's usage windows, per credential, as Claude Code reports them; and which agents they stopped.

Claude Code shows a subscription's usage windows (a 5-hour window, a weekly one, per-model weeks…)
only in the status line's ``rate_limits`` (OAuth or gateway logins; nothing under an API key), and
only after a reply in that process. Every agent's status line hands us its copy, so the fleet keeps
the latest reading of each window here, per *credential* — the one the agent's Claude actually uses
(:func:`credential_of`: an API key, a token, a gateway's token by a digest, never the secret; else the
Claude config directory, ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``, which holds a login). An API-key
agent is never held by a subscription's window read from the same config directory. Files under ``<sessions root>/.shepherd/usage/``:

* ``credentials/<slug>.json``: ``{"credential": PATH, "windows": {NAME: {"used_percentage",
  "resets_at", "seen_at"}}, "alerted": {NAME: [RESETS_AT, PERCENT…]}}``;
* ``agents/<slug>.json``: ``{"agent": IDENTITY, "credential": PATH, "limited": {"until", "window",
  "source", "since"}}`` — the fleet pane identity ``session:window:label`` (outside a fleet, the
  claude-run's, as :func:`claude_shepherd.supervisor.session.pane_records.spot` names it);
* ``resume-slots.json``: when each parked agent may go on (:func:`take_slot`).

A reset more than :data:`MAX_AHEAD` (8 days) ahead is not believed anywhere here: such a window is
no reading, such a mark's reset is unknown. Windows are merged, never overwritten blindly: an idle agent's status line re-renders the reading of
its last reply, so within one window period (same ``resets_at``) the use only grows, a later
``resets_at`` starts a new period, and a window a reading leaves out is dropped once its reset passed.
Written only when something changed (the status line runs on every render), never through a link.
Standard library only: the status line and the hooks import it.
"""

from __future__ import annotations

import json
import os
import re
import time

from claude_shepherd.supervisor.env import CONFIG_DIR_ENV, CREDENTIAL_ENV
from claude_shepherd.supervisor.session import index_records

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t
    from pathlib import Path

USAGE_DIRNAME = "usage"
CREDENTIALS_DIRNAME = "credentials"
AGENTS_DIRNAME = "agents"
SLOTS_FILE = "resume-slots.json"
RECORD_LIMIT = 16384
MAX_WINDOWS = 16
_WINDOW_NAME = re.compile(r"[a-z0-9_]{1,40}")
MAX_EPOCH = 2**40
MAX_AHEAD = 8 * 86400.0
"""The furthest a reset is believed to lie ahead: the longest window Claude reports is a week. A reading,
a printed reset or a mark further ahead (a gateway's or a broken clock's) is not believed — it would park
an agent, and hold claude-run's relaunch, for good — and counts as a reset not known."""

ALERT_PERCENTS: tuple[float, ...] = (80.0, 95.0)
"""Where a window alerts (once per window per reset); ``$CLAUDE_USAGE_ALERTS`` (``80,95``) tunes it."""
WAIT_PERCENT = 95.0
"""At or above this use, starts and relaunches wait for the window's reset (``$CLAUDE_USAGE_WAIT_PERCENT``)."""
RESUME_INTERVAL = 60.0
"""Seconds between two parked agents going on after a reset (``$CLAUDE_USAGE_RESUME_INTERVAL``)."""
SLOT_GRACE = 60.0
"""An agent asking again within this long after its slot gets the same slot (its retyped prompt)."""
SAME_RESET = 300.0
"""Resets this close are one: a reset read exactly, one parsed to the minute, "now" at an auto-continue."""
LIMITED_GRACE = 15 * 60.0
"""A ``limited`` record older than its reset by this much is stale (the agent went on, or is gone)."""

ALERTS_ENV = "CLAUDE_USAGE_ALERTS"
WAIT_PERCENT_ENV = "CLAUDE_USAGE_WAIT_PERCENT"
RESUME_INTERVAL_ENV = "CLAUDE_USAGE_RESUME_INTERVAL"
IGNORE_ENV = "CLAUDE_USAGE_IGNORE"
"""``1``: start and relaunch without waiting for a closed window (the flag ``--ignore-usage-limits``)."""


# --------------------------------------------------------------------------- credentials


_NAMED = re.compile(
    r"(?:api-key|auth-token|oauth-token):[0-9a-f]{12}|gateway:[^\s:]{1,80}:[0-9a-f]{12}|cloud:[a-z]{1,20}|/[^\x00-\x1f]{0,4000}"
)
CLOUD_ENV = ("CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY")
WINDOWLESS = ("api-key:", "auth-token:", "cloud:")
"""Credentials of no usage window: Claude reports none under them, and no subscription's window holds them."""


def credential_of(env: t.Mapping[str, str]) -> str:
    """The credential the agent's Claude actually uses, as Claude Code picks it: a cloud provider
    (``cloud:bedrock``), ``$ANTHROPIC_AUTH_TOKEN`` (``gateway:HOST:ID`` for a Claude gateway's token,
    else ``auth-token:ID``), ``$ANTHROPIC_API_KEY`` (``api-key:ID``), ``$CLAUDE_CODE_OAUTH_TOKEN``
    (``oauth-token:ID``), else the login kept in its config directory: ``$CLAUDE_CONFIG_DIR``
    (absolute), else ``$HOME/.claude``. An ID is a digest of the secret, never the secret.

    Claude keeps ``$CLAUDE_CODE_OAUTH_TOKEN`` from its hooks and status line (seen with 2.1.328 and
    2.1.332), so claude-run names the credential for them in ``$CLAUDE_SHEPHERD_CREDENTIAL``, which wins."""
    named = env.get(CREDENTIAL_ENV, "")
    if _NAMED.fullmatch(named):
        return named
    for name in CLOUD_ENV:
        if env.get(name, "").strip().lower() in ("1", "true", "yes"):
            return "cloud:" + name.rsplit("_", 1)[1].lower()
    token = env.get("ANTHROPIC_AUTH_TOKEN", "")
    if token:
        if _gateway_token(token):
            host = re.sub(r"^[a-z]+://|[/?#].*$", "", env.get("ANTHROPIC_BASE_URL", ""))[:80] or "default"
            return f"gateway:{host}:{_digest(token)}"
        return f"auth-token:{_digest(token)}"
    for name, kind in (("ANTHROPIC_API_KEY", "api-key"), ("CLAUDE_CODE_OAUTH_TOKEN", "oauth-token")):
        if env.get(name, ""):
            return f"{kind}:{_digest(env[name])}"
    configured = env.get(CONFIG_DIR_ENV, "")
    if configured and os.path.isabs(configured):
        return os.path.normpath(configured)
    home = env.get("HOME", "") or os.path.expanduser("~")
    return os.path.normpath(os.path.join(home, ".claude"))


def windowless(credential: str) -> bool:
    """Does *credential* have no usage windows (an API key, a plain token, a cloud provider)?"""
    return credential.startswith(WINDOWLESS)


def _digest(secret: str) -> str:
    """A short SHA-256 of *secret*, from the interpreter's own module where it has one (hashlib loads
    OpenSSL: milliseconds on every status line render of an API-key agent outside claude-run)."""
    try:
        from _sha2 import sha256  # type: ignore[import-not-found]
    except ImportError:
        try:
            from _sha256 import sha256  # type: ignore[import-not-found]
        except ImportError:
            from hashlib import sha256
    return str(sha256(secret.encode("utf-8", "surrogateescape")).hexdigest())[:12]


def _gateway_token(token: str) -> bool:
    """Is *token* a Claude gateway's (a JWT whose audience is ``claude-gateway``), whose windows Claude
    reports as a subscription's?"""
    parts = token.split(".")
    if len(parts) != 3 or len(parts[1]) > 8192:
        return False
    import base64

    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, TypeError):
        return False
    audience = payload.get("aud") if isinstance(payload, dict) else None
    return audience == "claude-gateway" or (isinstance(audience, list) and "claude-gateway" in audience)


def file_name(name: str) -> str:
    """A file name for *name* (a path, an identity): a readable part and a checksum."""
    return index_records.file_name(name, tidy=True)


def shown_credential(path: str, home: str | None = None) -> str:
    """*path* with the home directory written ``~`` (a credential that is no path, as it is)."""
    if not path.startswith("/"):
        return path
    home = home if home is not None else os.path.expanduser("~")
    if home and home != "/" and (path == home or path.startswith(home.rstrip("/") + "/")):
        return "~" + path[len(home.rstrip("/")) :]
    return path


# --------------------------------------------------------------------------- reading the status line


def _number(value: t.Any, most: float) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if 0 <= value <= most else None  # NaN fails both comparisons


def moment(value: t.Any) -> float | None:
    """*value* as epoch seconds any clock here can show, else None."""
    return _number(value, MAX_EPOCH)


def _reset(value: t.Any, now: float) -> float | None:
    """A reset as a number of epoch seconds no further than :data:`MAX_AHEAD` from *now*, else None."""
    return _number(value, min(MAX_EPOCH, now + MAX_AHEAD))


def windows_of(data: t.Mapping[str, t.Any], now: float | None = None) -> dict[str, dict[str, float]] | None:
    """The status input's ``rate_limits`` as ``{name: {used_percentage, resets_at}}``; None when it has
    none (an API key, or no reply yet in this process): then nothing is known, not "nothing used".
    A window whose reset lies further ahead than :data:`MAX_AHEAD` is left out."""
    now = time.time() if now is None else now
    limits = data.get("rate_limits")
    if not isinstance(limits, dict):
        return None
    out: dict[str, dict[str, float]] = {}
    for name, window in list(limits.items())[:MAX_WINDOWS]:
        if not isinstance(name, str) or not _WINDOW_NAME.fullmatch(name) or not isinstance(window, dict):
            continue
        used = _number(window.get("used_percentage"), 1000.0)
        resets = _reset(window.get("resets_at"), now)
        if used is None or resets is None:
            continue
        out[name] = {"used_percentage": min(used, 100.0), "resets_at": resets}
    return out


def merge(
    before: t.Mapping[str, t.Any], reading: t.Mapping[str, t.Mapping[str, float]], now: float
) -> dict[str, dict[str, float]]:
    """The windows after *reading* (see the module's rules); ``seen_at`` moves only with a change."""
    out: dict[str, dict[str, float]] = {}
    for name, old in before.items():
        if not isinstance(old, dict) or name in reading:
            continue
        resets = _reset(old.get("resets_at"), now)
        if resets is not None and resets > now:  # not in this reading, not reset yet: still true
            out[name] = dict(old)
    for name, new in reading.items():
        old = before.get(name) if isinstance(before.get(name), dict) else None
        old_resets = _reset(old.get("resets_at"), now) if old else None
        old_used = _number(old.get("used_percentage"), 100.0) if old else None
        if old is not None and old_resets is not None and old_used is not None:
            if new["resets_at"] < old_resets - 1 and old_resets > now:
                out[name] = dict(old)  # an older period's reading, re-rendered: keep ours
                continue
            if abs(new["resets_at"] - old_resets) <= 1 and new["used_percentage"] <= old_used:
                out[name] = dict(old)  # the same period, no more used than we know
                continue
        out[name] = {**new, "seen_at": round(now, 3)}
    return out


# --------------------------------------------------------------------------- files


def _dict(value: t.Any) -> dict[str, t.Any]:
    return value if isinstance(value, dict) else {}


def _folder(folder: str | None = None) -> str:
    return f"{USAGE_DIRNAME}/{folder}" if folder else USAGE_DIRNAME


def _dir(root: Path, folder: str | None = None) -> str:
    return index_records.folder_path(root, _folder(folder))


def _read(
    root: Path, folder: str | None, name: str, where: tuple[str, str] | None = None
) -> dict[str, t.Any] | None:
    return index_records.read(root, _folder(folder), name, RECORD_LIMIT, where)


def _write(root: Path, folder: str | None, name: str, record: t.Mapping[str, t.Any]) -> bool:
    return index_records.write(root, _folder(folder), name, json.dumps(record, sort_keys=True) + "\n")


def read_credential(root: Path, credential: str) -> dict[str, t.Any] | None:
    return _read(root, CREDENTIALS_DIRNAME, file_name(credential), ("credential", credential))


def read_credentials(root: Path) -> list[dict[str, t.Any]]:
    """Every credential's record under *root*, by path."""
    try:
        names = sorted(os.listdir(_dir(root, CREDENTIALS_DIRNAME)))
    except OSError:
        return []
    out = []
    for name in names[:256]:
        data = _read(root, CREDENTIALS_DIRNAME, name)
        if (
            data is not None
            and isinstance(data.get("credential"), str)
            and isinstance(data.get("windows"), dict)
        ):
            out.append(data)
    return out


def read_agents(root: Path) -> list[dict[str, t.Any]]:
    """Every agent's record under *root* (for ``fleet usage``)."""
    try:
        names = sorted(os.listdir(_dir(root, AGENTS_DIRNAME)))
    except OSError:
        return []
    found = [_read(root, AGENTS_DIRNAME, name) for name in names[:4096] if name.endswith(".json")]
    return [record for record in found if record is not None and isinstance(record.get("agent"), str)]


def forget_credential(root: Path, credential: str) -> None:
    """Drop *credential*'s reading and its resume slots (a person cleared it: ``fleet usage --clear``)."""
    fd = index_records.opened(root, _folder(CREDENTIALS_DIRNAME))
    if fd is not None:
        try:
            os.unlink(file_name(credential), dir_fd=fd)
        except OSError:
            pass
        finally:
            os.close(fd)
    import fcntl

    try:
        os.makedirs(_dir(root), exist_ok=True)
        lock = os.open(os.path.join(_dir(root), SLOTS_FILE + ".lock"),
                       os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)  # fmt: skip
    except OSError:
        return
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        slots = _read(root, None, SLOTS_FILE) or {}
        if credential in slots:
            _write(root, None, SLOTS_FILE, {k: v for k, v in slots.items() if k != credential})
    finally:
        os.close(lock)


def read_agent(root: Path, agent: str) -> dict[str, t.Any] | None:
    return _read(root, AGENTS_DIRNAME, file_name(agent), ("agent", agent))


def note_reading(
    root: Path, credential: str, reading: t.Mapping[str, t.Mapping[str, float]], now: float | None = None
) -> tuple[dict[str, t.Any], list[tuple[str, float, float]]]:
    """Merge a status line's *reading* into *credential*'s record; written only when it changed.

    Returns the record and the alerts it crossed into: ``(window, percent, resets_at)`` for each
    threshold of :func:`alert_percents` a window reached for the first time in its period. A change
    is merged again under the credential's lock (``fcntl``), so that of two agents whose status
    lines see the same crossing at once, one alerts.
    """
    now = time.time() if now is None else now
    record, crossed, changed = _merged(read_credential(root, credential) or {}, credential, reading, now)
    if not changed:
        return record, crossed
    import fcntl

    try:
        os.makedirs(_dir(root, CREDENTIALS_DIRNAME), exist_ok=True)
        lock = os.open(
            os.path.join(_dir(root, CREDENTIALS_DIRNAME), "." + file_name(credential) + ".lock"),
            os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
        )
    except OSError:
        return record, []
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        record, crossed, changed = _merged(read_credential(root, credential) or {}, credential, reading, now)
        if changed:
            _write(root, CREDENTIALS_DIRNAME, file_name(credential), record)
        return record, crossed
    finally:
        os.close(lock)


def _merged(
    before: t.Mapping[str, t.Any], credential: str, reading: t.Mapping[str, t.Mapping[str, float]], now: float
) -> tuple[dict[str, t.Any], list[tuple[str, float, float]], bool]:
    """The record after *reading*, the alerts it crosses into, and whether it changed."""
    old_windows = _dict(before.get("windows"))
    windows = merge(old_windows, reading, now)
    alerted_before = _dict(before.get("alerted"))
    alerted: dict[str, list[float]] = {}
    crossed: list[tuple[str, float, float]] = []
    percents = alert_percents()
    for name, window in windows.items():
        previous = alerted_before.get(name)
        done = (
            previous[1:]
            if isinstance(previous, list) and previous and previous[0] == window["resets_at"]
            else []
        )
        for percent in percents:
            if window["used_percentage"] >= percent and percent not in done:
                done = [*done, percent]
                crossed.append((name, percent, window["resets_at"]))
        if done:
            alerted[name] = [window["resets_at"], *done]
    record = {"credential": credential, "windows": windows, "alerted": alerted}
    changed = record != {"credential": credential, "windows": old_windows, "alerted": alerted_before}
    return record, crossed, changed


def note_agent(root: Path, agent: str, credential: str) -> dict[str, t.Any]:
    """Record that *agent* uses *credential* (written only when that is news); returns its record."""
    before = read_agent(root, agent)
    if before is not None and before.get("credential") == credential:
        return before
    record = {"agent": agent, "credential": credential}
    _write(root, AGENTS_DIRNAME, file_name(agent), record)
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
) -> dict[str, t.Any]:
    """*agent* hit *window*'s limit; it reopens at *until* (known from *source*: ``reading``,
    ``message``, or ``continue``: a continue prompt held with no mark before; None: unknown). *held*:
    the slot at which a process of the hooks types its held continue prompt (hooks.usage_turn)."""
    now = time.time() if now is None else now
    limited = {"until": _reset(until, now), "window": window, "source": source, "since": round(now, 3)}
    if held is not None:
        limited["held"] = _reset(held, now)
    record = {"agent": agent, "credential": credential, "limited": limited}
    _write(root, AGENTS_DIRNAME, file_name(agent), record)
    return record


def clear_limited(root: Path, agent: str) -> None:
    """*agent* goes on: its ``limited`` mark goes (its credential stays)."""
    before = read_agent(root, agent)
    if before is not None and "limited" in before:
        _write(root, AGENTS_DIRNAME, file_name(agent), {k: v for k, v in before.items() if k != "limited"})


def limited_of(record: t.Mapping[str, t.Any] | None, now: float | None = None) -> dict[str, t.Any] | None:
    """The agent's ``limited`` mark while it stands (until its reset plus :data:`LIMITED_GRACE`); its
    ``until`` is a number within :data:`MAX_AHEAD` of *now*, or None (unknown)."""
    limited = record.get("limited") if record else None
    if not isinstance(limited, dict):
        return None
    now = time.time() if now is None else now
    until = _reset(limited.get("until"), now)
    since = _number(limited.get("since"), now + 60) or 0.0  # never a mark from the future
    if until is None:
        return {**limited, "until": None} if now - since < LIMITED_GRACE else None
    return {**limited, "until": until} if now < until + LIMITED_GRACE else None


# --------------------------------------------------------------------------- the reset


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


def closed(
    windows: t.Mapping[str, t.Any], percent: float, now: float | None = None
) -> tuple[str, float, float] | None:
    """The window at or above *percent* that reopens last, as ``(name, used, resets_at)``; None when
    every window known is below it (or has reset)."""
    now = time.time() if now is None else now
    worst: tuple[str, float, float] | None = None
    for name, window in windows.items():
        if not isinstance(window, dict):
            continue
        used = _number(window.get("used_percentage"), 100.0)
        resets = _reset(window.get("resets_at"), now)
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


# --------------------------------------------------------------------------- going on, one at a time


def take_slot(
    root: Path, credential: str, agent: str, reset: float, interval: float, now: float | None = None
) -> float:
    """When *agent*, parked by *credential*'s window that reopens at *reset*, may go on.

    The first agent to ask goes at the reset, each next one *interval* seconds after the one before
    (each resume re-sends a whole context: all at once would spend the fresh window at once). The
    slots are one small file, taken under an ``fcntl`` lock; asking again gives the same slot.
    An agent that asks after its slot would have come goes at once, and the next one *interval* after
    that: the slots space the agents' actual going on (Claude's own jitter puts them 30–90 s after
    the reset, in any order).
    """
    import fcntl

    now = time.time() if now is None else now
    reset = min(reset, now + MAX_AHEAD) if reset == reset else now  # NaN: no reset known
    try:
        os.makedirs(_dir(root), exist_ok=True)
        fd = os.open(
            os.path.join(_dir(root), SLOTS_FILE + ".lock"),
            os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
        )
    except OSError:
        return reset  # no shared record: go at the reset (Claude's own jitter still spreads it)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        slots = _read(root, None, SLOTS_FILE) or {}
        mine = slots.get(credential) if isinstance(slots.get(credential), dict) else None
        known = _number(mine.get("reset"), MAX_EPOCH) if mine is not None else None
        if mine is None or known is None or abs(known - reset) > SAME_RESET:
            mine = {"reset": reset, "agents": {}}
        agents = mine["agents"] if isinstance(mine.get("agents"), dict) else {}
        taken = _number(agents.get(agent), MAX_EPOCH)
        if taken is not None and now <= max(taken, reset) + SLOT_GRACE:
            return max(taken, reset)  # asked again (a retyped prompt), or parked again before its turn
        last = max((v for v in agents.values() if _number(v, MAX_EPOCH) is not None), default=None)
        slot = max(reset if last is None else max(last + interval, reset), now)  # never in the past
        agents[agent] = round(slot, 3)
        mine["agents"] = agents
        slots = {k: v for k, v in slots.items() if isinstance(v, dict) and _slots_live(v, now)}
        slots[credential] = mine
        _write(root, None, SLOTS_FILE, slots)
        return slot
    finally:
        os.close(fd)  # releases the lock


def _slots_live(entry: t.Mapping[str, t.Any], now: float) -> bool:
    agents = entry.get("agents")
    latest = (
        max((v for v in agents.values() if isinstance(v, (int, float))), default=0.0)
        if isinstance(agents, dict)
        else 0.0
    )
    return now - latest < 24 * 3600


def read_slots(root: Path) -> dict[str, t.Any]:
    """The slots file (for ``fleet status``: who goes on when)."""
    return _read(root, None, SLOTS_FILE) or {}
