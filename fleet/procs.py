"""The processes of a fleet: which belong to which pane, and what each one is.

A process belongs to a pane when it descends from the pane's process (the
``pane_pid`` tmux reports, checked against its start time), or from a process
that belonged to the pane when the caller looked before (``fleet stop``
follows what its first look found, re-parented orphans included). Never
because its environment says so: ``TMUX_PANE`` is inherited, but anything an
agent runs can set it to name another pane. (``claude-run`` is a subreaper,
so what Claude's tools leave behind stays in the pane's tree while it runs.)

Only processes of the current user are considered; nothing is ever signalled
outside the set a caller computed from a fleet pane.
"""

from __future__ import annotations

import os
import signal
import typing as t
from dataclasses import dataclass, field
from pathlib import Path

from claude_shepherd.supervisor import proctree
from claude_shepherd.supervisor.env import SESSIONS_DIR_ENV, SUPERVISOR_PID_ENV, WORKTREE_ENV
from claude_shepherd.supervisor.session.identity import WATCHDOG_NAME
from claude_shepherd.supervisor.session.numbers import parse_pid

if t.TYPE_CHECKING:
    import psutil

    from claude_shepherd.fleet.tmux import PaneInfo

SUPERVISOR_SCRIPT = "claude-run"
SUPERVISOR_MODULE = "claude_shepherd.supervisor.claude_run.cli"
_ENV_KEYS = ("TMUX", "TMUX_PANE", SUPERVISOR_PID_ENV, SESSIONS_DIR_ENV, WORKTREE_ENV)


@dataclass
class Proc:
    """A snapshot of one process: enough to classify it and to signal it safely."""

    pid: int
    ppid: int
    cmdline: list[str]
    create_time: float
    env: dict[str, str] = field(default_factory=dict)
    name: str = ""
    cwd: str | None = field(default=None, compare=False, repr=False)
    """Its working directory once :func:`cwd_of` read it (``""``: it could not be read)."""

    @property
    def is_tmux_server(self) -> bool:
        """A tmux server (it names itself so): never ours to signal, whatever its environment says."""
        return self.name == "tmux: server"

    @property
    def is_supervisor(self) -> bool:
        """``claude-run`` (a console script, so argv is ``python .../claude-run ...``); its watchdog,
        forked from it with the same argv, is not one."""
        if self.is_watchdog:
            return False
        head = [Path(arg).name for arg in self.cmdline[:2]]
        return SUPERVISOR_SCRIPT in head or SUPERVISOR_MODULE in self.cmdline[:3]

    @property
    def is_watchdog(self) -> bool:
        return self.name == WATCHDOG_NAME

    @property
    def supervisor_pid(self) -> int | None:
        return parse_pid(self.env.get(SUPERVISOR_PID_ENV, ""))

    @property
    def tmux_socket(self) -> str | None:
        raw = self.env.get("TMUX", "")
        return raw.split(",", 1)[0] if raw else None

    @property
    def tmux_pane(self) -> str | None:
        return self.env.get("TMUX_PANE") or None

    def describe(self) -> str:
        words = " ".join(self.cmdline)[:80] if self.cmdline else "?"
        return f"{self.pid} ({words})"

    def handle(self) -> psutil.Process | None:
        """A psutil handle that is still *this* process (not a reused pid), else None."""
        import psutil  # for signalling and scans only: `fleet status` reads /proc (docs/HOT_CORE.md)

        try:
            proc = psutil.Process(self.pid)
            if abs(proc.create_time() - self.create_time) > 0.05:
                return None
            return proc
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            return None


def walk(roots: t.Iterable[int], children: t.Callable[[int], t.Iterable[int] | None]) -> t.Iterator[int]:
    """*roots* and every pid below them (*children* lists a pid's), each once, depth first."""
    stack = list(roots)
    seen: set[int] = set()
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        yield pid
        stack.extend(children(pid) or ())


class Table:
    """Every process of this user, read once: cheap to query many times."""

    def __init__(self, procs: t.Iterable[Proc]) -> None:
        self.by_pid: dict[int, Proc] = {p.pid: p for p in procs}
        self.children: dict[int, list[int]] = {}
        for proc in self.by_pid.values():
            self.children.setdefault(proc.ppid, []).append(proc.pid)

    def descendants(self, pid: int) -> list[Proc]:
        """*pid* and everything below it."""
        return [self.by_pid[member] for member in walk([pid], self.children.get) if member in self.by_pid]

    def same(self, proc: Proc) -> Proc | None:
        """This table's entry for *proc* if it is still that process (not a reused pid)."""
        now = self.by_pid.get(proc.pid)
        return now if now is not None and abs(now.create_time - proc.create_time) <= 0.05 else None

    def of_pane(
        self, pane_pid: int, pane_started: float | None = None, known: t.Iterable[Proc] = ()
    ) -> list[Proc]:
        """The pane's process tree, and the trees of the *known* members still running.

        With *pane_started* (the create time seen earlier), the tree is followed
        only if *pane_pid* still names that process, never a reused pid.
        """
        root = self.by_pid.get(pane_pid) if pane_pid > 0 else None
        if root is not None and pane_started is not None and abs(root.create_time - pane_started) > 0.05:
            root = None
        roots = ([root] if root is not None else []) + [p for p in map(self.same, known) if p is not None]
        found = {member.pid: member for top in roots for member in self.descendants(top.pid)}
        return sorted((p for p in found.values() if not p.is_tmux_server), key=lambda p: p.pid)

    def claude_of(self, supervisor: Proc) -> Proc | None:
        """The Claude a supervisor runs: its oldest child that is not the watchdog, nor a typist of the
        hooks (which outlives a relaunch of Claude, so is older than the next one); a subreaper's other
        children are orphans Claude's tools left, all started after Claude."""
        from claude_shepherd.hooks.pane_typing import is_typist

        children = [self.by_pid[pid] for pid in self.children.get(supervisor.pid, []) if pid in self.by_pid]
        candidates = [child for child in children if not child.is_watchdog and not is_typist(child.cmdline)]
        return min(candidates, key=lambda p: (p.create_time, p.pid)) if candidates else None

    def agent_of(
        self, socket_path: str | None, pane: PaneInfo
    ) -> tuple[list[Proc], Proc | None, Proc | None]:
        """A pane's processes, its supervisor and the Claude it runs: the pane -> supervisor -> Claude walk.

        Only the tree under the pane's process counts, so *socket_path* (the pane's server) is not needed.
        """
        members = self.of_pane(0 if pane.dead else pane.pid)
        supervisor = next((p for p in members if p.is_supervisor), None)
        return members, supervisor, self.claude_of(supervisor) if supervisor else None


def env_of(proc: Proc) -> dict[str, str]:
    """*proc*'s environment (the keys the fleet reads), read now when its snapshot left it out: reading
    every process's environment is most of a snapshot's cost, and a status needs only its agents'."""
    if not proc.env and _still(proc):
        try:
            with open(f"/proc/{proc.pid}/environ", encoding="utf-8", errors="surrogateescape") as block:
                proc.env = _environ(block.read(), _ENV_KEYS)
        except OSError:
            return proc.env
    return proc.env


def cwd_of(proc: Proc) -> str | None:
    """*proc*'s working directory, while it is still that process (as psutil's ``cwd`` reads it); read
    once for a snapshot, as its environment is."""
    if proc.cwd is None:
        proc.cwd = _read_cwd(proc) or ""
    return proc.cwd or None


def _read_cwd(proc: Proc) -> str | None:
    if not _still(proc):
        return None
    try:
        path = os.readlink(f"/proc/{proc.pid}/cwd").split("\x00")[0]
    except OSError:
        return None
    if path.endswith(" (deleted)") and not os.path.exists(path):
        path = path.removesuffix(" (deleted)")
    return path


# /proc read as psutil reads it, so that a process's start time is the same float either way (a
# handle is checked against it): `fleet status` reads its panes' trees without importing psutil.

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_boot: list[float] = []


def _boot_time() -> float:
    if not _boot:
        with open("/proc/stat", "rb") as stat:
            for line in stat:
                if line.startswith(b"btime"):
                    _boot.append(float(line.strip().split()[1]))
                    break
            else:
                raise OSError("/proc/stat has no btime")
    return _boot[0]


def read_proc(pid: int) -> Proc | None:
    """Process *pid* from /proc (None when it is gone): its parent, name, command line and start time."""
    try:
        data = _stat(pid)
        with open(f"/proc/{pid}/cmdline", encoding="utf-8", errors="surrogateescape") as line:
            raw = line.read()
        started, ppid = _started(data), int(data[data.rfind(b")") + 2 :].split()[1])
    except (OSError, ValueError, IndexError):
        return None
    name = data[data.find(b"(") + 1 : data.rfind(b")")].decode("utf-8", "surrogateescape")
    cmdline = _cmdline(raw)
    if len(name) >= 15 and cmdline and os.path.basename(cmdline[0]).startswith(name):
        name = os.path.basename(cmdline[0])  # the kernel keeps 15 characters of it
    return Proc(pid=pid, ppid=ppid, cmdline=cmdline, create_time=started, name=name)


def _cmdline(raw: str) -> list[str]:
    if not raw:
        return []
    sep = "\x00" if raw.endswith("\x00") else " "
    words = raw.removesuffix(sep).split(sep)
    if sep == "\x00" and len(words) == 1 and " " in raw:  # a process that rewrote its argv
        words = raw.removesuffix(sep).split(" ")
    return words


def _environ(block: str, keys: t.Iterable[str]) -> dict[str, str]:
    """*keys* of an environ block, as a dict of its whole (NUL-ended ``KEY=value`` entries, up to the first
    empty one) would hold them, the last of each: found by search, not by reading every entry."""
    if block.startswith("\x00"):
        return {}
    empty = block.find("\x00\x00")
    ended = (
        block[: empty + 1] if empty >= 0 else block[: block.rfind("\x00") + 1]
    )  # an entry not ended is none
    entries = "\x00" + ended
    found: dict[str, str] = {}
    for key in keys:
        at = entries.rfind(f"\x00{key}=")
        if at >= 0:
            start = at + len(key) + 2
            found[key] = entries[start : entries.find("\x00", start)]
    return found


def _stat(pid: int) -> bytes:
    with open(f"/proc/{pid}/stat", "rb") as stat:
        return stat.read()


def _started(data: bytes) -> float:
    """The start time in a ``/proc/PID/stat`` line, as psutil's ``create_time`` gives it."""
    return float(data[data.rfind(b")") + 2 :].split()[19]) / _CLOCK_TICKS + _boot_time()


def _still(proc: Proc) -> bool:
    """*proc*'s pid still names the process that was read (not a reused pid)."""
    try:
        return abs(_started(_stat(proc.pid)) - proc.create_time) <= 0.05
    except (OSError, ValueError, IndexError):
        return False


def snapshot(*, with_env: bool = True) -> Table:
    """Read every process of the current user (their environment only when asked)."""
    import psutil  # the scan of every process: stop, doctor and the watch (docs/HOT_CORE.md)

    uid = os.getuid()
    procs: list[Proc] = []
    for proc in psutil.process_iter(["pid", "ppid", "name", "cmdline", "create_time", "uids"]):
        info = proc.info
        try:
            if info.get("uids") is None or info["uids"].real != uid:
                continue
            env: dict[str, str] = {}
            if with_env:
                try:
                    full = proc.environ()
                    env = {k: full[k] for k in _ENV_KEYS if k in full}
                except (psutil.AccessDenied, psutil.ZombieProcess, psutil.NoSuchProcess, OSError):
                    env = {}
            procs.append(
                Proc(
                    pid=info["pid"],
                    ppid=info.get("ppid") or 0,
                    cmdline=list(info.get("cmdline") or []),
                    create_time=info.get("create_time") or 0.0,
                    env=env,
                    name=info.get("name") or "",
                )
            )
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return Table(procs)


def protected_pids() -> set[int]:
    """Ourselves and our ancestors: never signalled, even when ``fleet`` runs inside a fleet pane."""
    import psutil  # signalling only

    pids = {os.getpid()}
    try:
        for parent in psutil.Process().parents():
            pids.add(parent.pid)
    except psutil.Error:
        pass
    return pids


def _handles(procs: t.Iterable[Proc]) -> dict[int, tuple[Proc, psutil.Process]]:
    """Each of *procs* that is still the process we snapshotted, with its psutil handle."""
    out: dict[int, tuple[Proc, psutil.Process]] = {}
    for proc in procs:
        handle = proc.handle()
        if handle is not None:
            out[id(handle)] = (proc, handle)
    return out


def send(procs: t.Iterable[Proc], sig: signal.Signals) -> list[Proc]:
    """Signal each process that is still the one we snapshotted (never ourselves or an ancestor);
    return those signalled."""
    protected = protected_pids()
    handles = _handles(p for p in procs if p.pid not in protected)
    sent = proctree.send([handle for _, handle in handles.values()], sig)
    return [handles[id(handle)][0] for handle in sent]


def is_alive(proc: Proc) -> bool:
    """Is *proc* still the process we snapshotted, and running (a zombie counts as gone)?"""
    handle = proc.handle()
    return handle is not None and proctree.alive(handle)


def alive(procs: t.Iterable[Proc]) -> list[Proc]:
    """Those still running (zombies count as gone: only their parent can reap them)."""
    return [proc for proc in procs if is_alive(proc)]


def wait_gone(procs: list[Proc], timeout: float, poll: float = 0.05) -> list[Proc]:
    """Wait until every process has exited or *timeout* passed; return the survivors."""
    return proctree.wait_gone(procs, timeout, is_alive=is_alive, poll=poll)


def _children(pid: int) -> list[int]:
    """*pid*'s children, from the kernel's per-thread lists (no scan of every process)."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as listing:
                found += [int(word) for word in listing.read().split()]
        except (OSError, ValueError):
            continue
    return found


def trees(roots: t.Iterable[int]) -> Table:
    """The processes under *roots* (themselves included), read from /proc down to each supervisor's
    children: enough to find each pane's supervisor and Claude without reading every process, nor
    what Claude runs (its tools, MCP servers and shells). A whole snapshot where /proc has no
    children lists."""
    if not os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children"):
        return snapshot(with_env=False)
    read: dict[int, Proc] = {}

    def children(pid: int) -> list[int]:
        """*pid*'s children, once it is read as a member (a process that is gone has none)."""
        proc = read_proc(pid)
        if proc is None:
            return []
        read[pid] = proc
        parent = read.get(proc.ppid)
        if parent is not None and parent.is_supervisor:
            return []  # Claude, or the watchdog: what they run tells nothing of the agent
        return _children(pid)

    for _ in walk([pid for pid in roots if pid > 0], children):
        pass
    return Table(read.values())


class Processes(t.Protocol):
    """The machine's processes as the fleet's waits use them: read, signal, wait for their exit.

    ``fleet stop`` and the wait for started agents take one (with a clock), so their decisions —
    how long to wait, when to escalate, what to report — run in a test on scripted processes and
    a fake clock. :data:`LOCAL` is the machine's.
    """

    def snapshot(self) -> Table:
        """Every process of this user, without environments."""
        ...

    def trees(self, roots: t.Iterable[int]) -> Table:
        """The processes under *roots*, themselves included."""
        ...

    def send(self, procs: t.Iterable[Proc], sig: signal.Signals) -> list[Proc]: ...

    def alive(self, procs: t.Iterable[Proc]) -> list[Proc]: ...

    def wait_gone(self, procs: list[Proc], timeout: float) -> list[Proc]: ...


class LocalProcesses:
    """This machine's processes: :class:`Processes` over psutil and /proc."""

    def snapshot(self) -> Table:
        return snapshot(with_env=False)

    def trees(self, roots: t.Iterable[int]) -> Table:
        return trees(roots)

    def send(self, procs: t.Iterable[Proc], sig: signal.Signals) -> list[Proc]:
        return send(procs, sig)

    def alive(self, procs: t.Iterable[Proc]) -> list[Proc]:
        return alive(procs)

    def wait_gone(self, procs: list[Proc], timeout: float) -> list[Proc]:
        return wait_gone(procs, timeout)


LOCAL: Processes = LocalProcesses()


def end(procs: list[Proc], grace: float, kill_wait: float) -> list[Proc]:
    """End *procs* (:func:`proctree.end`: SIGTERM, *grace*, SIGKILL, *kill_wait*); return the survivors.
    Ourselves and our ancestors are never signalled (and count as survivors)."""
    protected = protected_pids()
    handles = _handles(p for p in procs if p.pid not in protected)
    _, left = proctree.end([handle for _, handle in handles.values()], grace, kill_wait=kill_wait)
    return [p for p in procs if p.pid in protected and is_alive(p)] + [handles[id(h)][0] for h in left]
