"""The attention queue: one ranked, deduplicated, snoozable list of what needs a person.

``fleet web``, ``fleet watch``, ``fleet status`` and the alert process (the notify command) all read
it here, so a person is paged once for one thing and a snooze given on a phone is quiet in the
terminal too. An entry is one agent in one *kind* of trouble (:data:`KINDS`): its key never merges
two things that need different actions. Entries are ranked by :data:`TIER` (what blocks an agent
until a person acts comes first), then by age (the longest waiting first), never by one composite
score.

Two kinds of writer keep it:

* :meth:`Queue.occurred`, from the alert process a hook starts when a pane *changes into* a state:
  a new entry pages (True), the same entry again within :data:`REPEAT` seconds of its last change
  is counted and pages nobody (an agent flapping between needs-you and working ten times is one
  page), and a snoozed one stays quiet;
* :meth:`Queue.observe`, from whatever looks at the fleets' rows (the web page, the watch): it opens
  entries for what the rows show, counts an entry that came back, and resolves one whose trouble is
  gone (it leaves the queue; if it comes back within :data:`REPEAT` it is the same entry again).

Records live in ``$XDG_STATE_HOME/claude-shepherd/attention/queue.json`` (0700 folder, 0600 file,
never through a link; the file tools cannot write it: the hooks protect the whole folder), changed
under one ``flock``, each write atomic. It sits in ``supervisor/`` beside the tmux vocabulary since
the hooks' alert process imports it, and the hooks import no module of ``fleet/``. Standard library
only; the clock is a seam (``Queue(clock=...)``) for tests.
"""

from __future__ import annotations

import binascii
import json
import os
import time

from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.tmux_names import ERROR, EXITED, LIMITED, NEEDS_YOU, PAUSED

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t

BUDGET = "budget"
"""An agent spent 80 % of a budget (the hooks' ``budget`` alert): raise it before the agent pauses."""
KINDS: tuple[str, ...] = (NEEDS_YOU, PAUSED, ERROR, EXITED, BUDGET, LIMITED)
"""What the queue holds, in the order of :data:`TIER`."""
TIER: dict[str, int] = {NEEDS_YOU: 0, PAUSED: 0, ERROR: 1, EXITED: 1, BUDGET: 2, LIMITED: 2}
"""0: an agent waits for a person (an answer, a budget); 1: an agent is broken or dead; 2: heads-up
(a budget nearly spent, a usage window that reopens by itself)."""
TIER_NAMES = ("waits for you", "broken", "heads-up")
WHAT: dict[str, str] = {
    NEEDS_YOU: "needs you",
    PAUSED: "paused at its budget",
    ERROR: "error",
    EXITED: "exited",
    BUDGET: "spent 80 % of its budget",
    LIMITED: "waits for a usage window",
}
REPEAT = 60.0
"""Seconds after an entry's last change within which the same thing again is that entry once more
(its count grows; nobody is paged), not a new one."""
SNOOZE_SECONDS = 3600.0
"""``snooze for an hour``."""
MAX_ENTRIES = 500
"""Records kept at most (the oldest resolved go first): a fleet has tens of agents, not thousands."""
MAX_BYTES = 1024 * 1024
"""The queue file read at most."""
MAX_TEXT = 300
"""Characters of an agent's name, label or fleet kept (agents choose their labels)."""
FOLDER = "attention"
FILE = "queue.json"
LOCK = "lock"
LOCK_TIMEOUT = 5.0


class GoneError(ShepherdError):
    """The entry a person acted on is no longer the one they saw."""


class AgentRef:
    """Which agent an entry is about: its host (``local``), fleet socket, ``session:window:label`` and
    pane (``%N``: what the entry's key names, see :func:`key_of`)."""

    __slots__ = ("host", "socket", "agent", "pane", "label", "fleet")

    def __init__(
        self, host: str, socket: str, agent: str, label: str = "", fleet: str = "", pane: str = ""
    ) -> None:
        self.host = host
        self.socket = socket
        self.agent = agent
        self.pane = pane
        self.label = label or agent.rpartition(":")[2]
        self.fleet = fleet or agent.partition(":")[0]


def ref_for(host: str, socket: str, row: t.Any) -> AgentRef:
    """The agent of a ``fleet status`` row (:class:`~claude_shepherd.fleet.pane_status.PaneStatus`) of the
    fleet on *socket* of *host*: named as its hooks' alerts name it (``session:window:label``)."""
    return AgentRef(host, socket, row.pane_id or row.pane, row.label or row.pane, row.session, row.pane)


def _kept_snooze(entry: Entry | None, ref: AgentRef, now: float) -> float | None:
    """The hour's snooze a new entry of the pane keeps: its old entry's, while it runs and the pane holds
    the same agent (tmux numbers panes anew when a fleet's server starts again: another agent in the same
    pane is not the one the person silenced)."""
    if entry is None or not entry.quiet(now) or entry.agent != ref.agent:
        return None
    return entry.snoozed_until


def key_of(ref: AgentRef, kind: str) -> str:
    """The dedupe key: one pane (the agent in it, whatever label it gives itself), one kind of trouble.

    Not the label: an agent can relabel its pane, and a new label must neither page the person anew
    nor, taken from another agent, make that agent's need a repeat. Without a pane (a record of
    another shape), the agent's name stands in (``\\x1f`` is in no tmux field we read)."""
    return "\x1f".join((ref.host, ref.socket, ref.pane or ref.agent, kind))


class Entry:
    """One thing that needs a person: an agent in one kind of trouble, since *opened*, seen *count* times."""

    __slots__ = ("kind", "host", "socket", "agent", "pane", "label", "fleet", "opened", "changed", "count",
                 "resolved", "snoozed_until", "snoozed_change", "paged")  # fmt: skip

    def __init__(
        self,
        kind: str,
        ref: AgentRef,
        opened: float,
        *,
        changed: float | None = None,
        count: int = 1,
        resolved: float | None = None,
        snoozed_until: float | None = None,
        snoozed_change: bool = False,
        paged: float | None = None,
    ) -> None:
        self.kind = kind
        self.host = ref.host
        self.socket = ref.socket
        self.agent = ref.agent
        self.pane = ref.pane
        self.label = ref.label
        self.fleet = ref.fleet
        self.opened = opened
        """When this entry began: its age."""
        self.changed = opened if changed is None else changed
        """Its last opening, repeat or resolution (what :data:`REPEAT` counts from)."""
        self.count = count
        """How often the agent got into this trouble while the entry lasted."""
        self.resolved = resolved
        """When its trouble was seen gone (None: it waits)."""
        self.snoozed_until = snoozed_until
        self.snoozed_change = snoozed_change
        """Snoozed until its trouble goes (then, back again, it is loud)."""
        self.paged = paged
        """When the notify command was run for it (None: never)."""

    @property
    def ref(self) -> AgentRef:
        return AgentRef(self.host, self.socket, self.agent, self.label, self.fleet, self.pane)

    @property
    def key(self) -> str:
        return key_of(self.ref, self.kind)

    @property
    def id(self) -> str:
        """A short name of the key, for a person to type (``fleet attention --snooze ID``)."""
        return f"{binascii.crc32(self.key.encode()):08x}"

    @property
    def tier(self) -> int:
        return TIER.get(self.kind, len(TIER_NAMES))

    @property
    def waiting(self) -> bool:
        return self.resolved is None

    @property
    def where(self) -> str:
        """``[host/]session:window:label``, as the fleet's verbs name an agent."""
        return self.agent if self.host == LOCAL else f"{self.host}/{self.agent}"

    def quiet(self, now: float) -> bool:
        """Snoozed: shown apart, paging nobody."""
        return self.snoozed_change or (self.snoozed_until is not None and now < self.snoozed_until)

    def words(self) -> str:
        """``SDK needs you``, ``SDK paused at its budget (×3)``."""
        times = f" (×{self.count})" if self.count > 1 else ""
        return f"{self.label} {WHAT.get(self.kind, self.kind)}{times}"

    def as_json(self) -> dict[str, object]:
        return {"kind": self.kind, "host": self.host, "socket": self.socket, "agent": self.agent, "pane": self.pane,
                "label": self.label, "fleet": self.fleet, "opened": self.opened, "changed": self.changed,
                "count": self.count, "resolved": self.resolved, "snoozed_until": self.snoozed_until,
                "snoozed_change": self.snoozed_change, "paged": self.paged, "key": self.key, "id": self.id,
                "tier": self.tier}  # fmt: skip

    @classmethod
    def from_json(cls, data: object) -> Entry | None:
        """A record as written, or None for anything else (a broken record costs only itself)."""
        if not isinstance(data, dict) or data.get("kind") not in KINDS:
            return None
        texts = [data.get(k) for k in ("host", "socket", "agent", "label", "fleet")]
        if not all(isinstance(v, str) and 0 < len(v) <= MAX_TEXT for v in texts[:3]):
            return None
        host, socket, agent, label, fleet = (v if isinstance(v, str) else "" for v in texts)
        raw_pane = data.get("pane")
        pane = raw_pane if isinstance(raw_pane, str) else ""
        opened, changed = _moment(data.get("opened")), _moment(data.get("changed"))
        count = data.get("count")
        if opened is None or changed is None or not isinstance(count, int) or isinstance(count, bool):
            return None
        return cls(
            data["kind"],
            AgentRef(host, socket, agent, label[:MAX_TEXT], fleet[:MAX_TEXT], pane[:MAX_TEXT]),
            opened,
            changed=changed,
            count=max(1, min(count, 10**9)),
            resolved=_moment(data.get("resolved")),
            snoozed_until=_moment(data.get("snoozed_until")),
            snoozed_change=data.get("snoozed_change") is True,
            paged=_moment(data.get("paged")),
        )


LOCAL = "local"
"""This machine, as ``fleet`` names it wherever it lists hosts."""


def _moment(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 2**40:
        return None
    return float(value)


def ranked(entries: t.Iterable[Entry]) -> list[Entry]:
    """By tier, then the longest waiting first; the key keeps equal ones in one order."""
    return sorted(entries, key=lambda e: (e.tier, e.opened, e.key))


def kinds_of(row: t.Any) -> list[str]:
    """What of :data:`KINDS` a ``fleet status`` row (:class:`~claude_shepherd.fleet.pane_status.PaneStatus`)
    shows: the one reading of rows into entries, for every reader of the queue."""
    from claude_shepherd.supervisor.session.budgets import ALERT_AT

    state: str = row.state or ""
    kinds = []
    if state == NEEDS_YOU:
        kinds.append(NEEDS_YOU)
    if row.paused or state == PAUSED:
        kinds.append(PAUSED)
    if state == ERROR:
        kinds.append(ERROR)
    if state.startswith(EXITED) and row.agent:
        kinds.append(EXITED)
    usd, spent = row.budget_usd, row.budget_spent
    if usd and spent is not None and spent >= usd * ALERT_AT and PAUSED not in kinds:
        kinds.append(BUDGET)
    ended = state.startswith((EXITED, "stopped"))
    if state == LIMITED or (row.limited_until is not None and not ended):
        kinds.append(LIMITED)
    return kinds


class Queue:
    """The queue's records for the environment *env* (default: this process's), read and changed under
    its lock; *clock* gives epoch seconds."""

    def __init__(
        self, env: t.Mapping[str, str] | None = None, *, clock: t.Callable[[], float] = time.time
    ) -> None:
        from claude_shepherd.supervisor.session.roots import registry_dir

        self.env = os.environ if env is None else env
        self.clock = clock
        self.top = registry_dir(self.env)
        self.folder = os.path.join(self.top, FOLDER)

    # ------------------------------------------------------------------ reading

    def read(self) -> list[Entry]:
        """Every record (nothing when there is no queue yet, or it cannot be trusted)."""
        from claude_shepherd.supervisor.session.safe_fs import UnsafeFileError, read_bytes

        if not (_trusted(self.top) and _trusted(self.folder)):
            return []  # none yet (a reader makes nothing), or not ours alone: nothing in it is believed
        try:
            raw = read_bytes(os.path.join(self.folder, FILE), limit=MAX_BYTES)
            data = json.loads(raw or b"{}")
        except (OSError, UnsafeFileError, ValueError, RecursionError):
            return []
        listed = data.get("entries") if isinstance(data, dict) else None
        found = [e for e in map(Entry.from_json, listed if isinstance(listed, list) else []) if e]
        return list({e.key: e for e in found}.values())  # one record per key

    def waiting(self, now: float | None = None) -> list[Entry]:
        """What needs a person now, ranked; snoozed entries are left out (:meth:`snoozed`)."""
        now = self.clock() if now is None else now
        return ranked(e for e in self.read() if e.waiting and not e.quiet(now))

    def snoozed(self, now: float | None = None) -> list[Entry]:
        now = self.clock() if now is None else now
        return ranked(e for e in self.read() if e.waiting and e.quiet(now))

    # ------------------------------------------------------------------ writing

    def _change(self, change: t.Callable[[dict[str, Entry], float], t.Any]) -> t.Any:
        """Run *change* on the records (by key) under the lock, and write them if it changed any."""
        from claude_shepherd.supervisor.session.private_dir import private_dir
        from claude_shepherd.supervisor.session.store import file_lock, write_atomic_at

        private_dir(self.folder, within=self.top)
        fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            with file_lock(LOCK, timeout=LOCK_TIMEOUT, dir_fd=fd):
                entries = {e.key: e for e in self.read()}
                before = json.dumps([e.as_json() for e in entries.values()], sort_keys=True)
                now = self.clock()
                result = change(entries, now)
                kept = _pruned(entries.values(), now)
                after = json.dumps([e.as_json() for e in kept], sort_keys=True)
                if after != before:
                    text = json.dumps({"version": 1, "entries": [e.as_json() for e in kept]})
                    write_atomic_at(fd, FILE, text, mode=0o600, keep_mode=True)
                return result
        finally:
            os.close(fd)

    def occurred(self, ref: AgentRef, kind: str) -> bool:
        """*ref* changed into *kind* (an alert is due): True when that is news a person is paged for."""

        def change(entries: dict[str, Entry], now: float) -> bool:
            key = key_of(ref, kind)
            entry = entries.get(key)
            if entry is not None and now - entry.changed <= REPEAT:
                entry.count += 1
                entry.changed, entry.resolved = now, None
                entry.agent, entry.label = ref.agent, ref.label[:MAX_TEXT]
                return False
            until = _kept_snooze(entry, ref, now)
            fresh = Entry(kind, ref, now, snoozed_until=until)
            entries[key] = fresh
            if fresh.quiet(now):
                return False
            fresh.paged = now
            return True

        return bool(self._change(change))

    def observe(
        self, seen: t.Iterable[tuple[AgentRef, str]], looked: t.Callable[[Entry], bool]
    ) -> list[Entry]:
        """Take in what a look at the fleets showed: each (agent, kind) of *seen* waits; an entry whose
        fleet was *looked* at whole and that is not among them is resolved. Returns what waits, ranked
        (snoozed ones too: :meth:`Entry.quiet` tells)."""
        seen = list(seen)

        def change(entries: dict[str, Entry], now: float) -> list[Entry]:
            current = {key_of(ref, kind): (ref, kind) for ref, kind in seen}
            for key, (ref, kind) in current.items():
                entry = entries.get(key)
                if entry is None or (entry.resolved is not None and now - entry.changed > REPEAT):
                    entries[key] = Entry(kind, ref, now, snoozed_until=_kept_snooze(entry, ref, now))
                elif entry.resolved is not None:  # back within REPEAT: the same entry, once more
                    entry.count += 1
                    entry.changed, entry.resolved = now, None
                if entries[key].agent != ref.agent:  # the agent relabelled its pane: named as it is now
                    entries[key].agent, entries[key].label = ref.agent, ref.label[:MAX_TEXT]
            for key, entry in entries.items():
                if entry.resolved is None and key not in current and looked(entry):
                    entry.resolved, entry.changed = now, now
                    entry.snoozed_change = False  # it changed: back again, it is loud
            return ranked(e for e in entries.values() if e.resolved is None)

        return list(self._change(change))

    def snooze(self, key: str, *, hour: bool = True, opened: float | None = None) -> Entry:
        """Quiet the entry *key* (or its :attr:`Entry.id`) for an hour, or (not *hour*) until its trouble
        goes. *opened*: the entry as the person saw it; refused if another has taken its place since."""

        def change(entries: dict[str, Entry], now: float) -> Entry:
            entry = entries.get(key) or next((e for e in entries.values() if e.id == key), None)
            if entry is None or entry.resolved is not None:
                raise GoneError("that entry is no longer in the queue (resolved, or never there); look again")
            if opened is not None and abs(entry.opened - opened) > 0.001:
                raise GoneError("that entry was replaced by a newer one since it was shown; look again")
            if hour:
                entry.snoozed_until = now + SNOOZE_SECONDS
            else:
                entry.snoozed_change = True
            return entry

        snoozed: Entry = self._change(change)
        return snoozed

    def wake(self, key: str) -> Entry:
        """Take the snooze off the entry *key* (or its id)."""

        def change(entries: dict[str, Entry], now: float) -> Entry:
            entry = entries.get(key) or next((e for e in entries.values() if e.id == key), None)
            if entry is None:
                raise GoneError("that entry is no longer in the queue; look again")
            entry.snoozed_until, entry.snoozed_change = None, False
            return entry

        woken: Entry = self._change(change)
        return woken


def _trusted(path: str) -> bool:
    """A folder of this user's that nobody else can write, not a link; False when missing."""
    import stat

    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022


def _pruned(entries: t.Iterable[Entry], now: float) -> list[Entry]:
    """What is worth keeping: every waiting entry, and the resolved ones still within :data:`REPEAT`
    (they may come back as themselves); at most :data:`MAX_ENTRIES`, the newest."""
    kept = [e for e in entries if e.resolved is None or now - e.changed <= REPEAT]
    kept.sort(key=lambda e: (e.resolved is None, e.changed), reverse=True)
    return kept[:MAX_ENTRIES]


def waiting_of(refs: t.Iterable[tuple[AgentRef, str]], queue: Queue | None = None) -> list[Entry]:
    """The entries *refs* (what rows show) are, as the queue has them (their count and age) where it
    does, less those snoozed, ranked: what ``fleet status`` says waits, read without writing anything."""
    queue = queue or Queue()
    now = queue.clock()
    stored = {e.key: e for e in queue.read() if e.waiting}
    out: dict[str, Entry] = {}
    for ref, kind in refs:
        key = key_of(ref, kind)
        out[key] = stored.get(key) or Entry(kind, ref, now)
    return ranked(e for e in out.values() if not e.quiet(now))
