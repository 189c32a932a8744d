"""Who owns a session: the supervisor's PID, its start time, and its fleet pane.

A PID alone is not an identity: after the owner dies the kernel may hand the
same number to an unrelated process (the bash original took such a process for
the owner, R3). We store a *start token* next to the PID — on Linux the boot id
plus the process start time in clock ticks since boot (``/proc/PID/stat`` field
22), which, unlike a wall-clock create time, does not move when the clock is
set. A PID whose current start token differs from the stored one is dead.

Standard library only (the hooks use it); psutil is imported lazily and only
where ``/proc`` does not exist.
"""

from __future__ import annotations

import os

from claude_shepherd.supervisor.env import CLAUDE_PID_ENV, SUPERVISOR_PID_ENV
from claude_shepherd.supervisor.session.numbers import PID_MAX, parse_pid
from claude_shepherd.supervisor.tmux_names import is_fleet_socket, one_line_field

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

    T = t.TypeVar("T")

_boot_id: str | None = None


ANCESTRY_DEPTH = 64


def valid_pid(value: object) -> t.TypeGuard[int]:
    """Is *value* a number that can name a process (a JSON field may hold anything)?"""
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= PID_MAX


def lineage(of: int | None = None) -> t.Iterator[int]:
    """The process *of* (default: this one), then its parent, and so on up to (not including) init,
    at most :data:`ANCESTRY_DEPTH` of them. Read from ``/proc``, which the agent cannot write."""
    current = os.getpid() if of is None else of
    for _ in range(ANCESTRY_DEPTH):
        if current <= 1:
            return
        yield current
        parent = parent_pid(current)
        if parent is None:
            return
        current = parent


def is_ancestor(pid: int, of: int | None = None) -> bool:
    """Is *pid* the process *of* (default: this one) or one of its ancestors?

    An environment variable naming a supervisor is believed only when that
    supervisor really is above us in the process tree.
    """
    return pid == 1 or any(current == pid for current in lineage(of))  # init is everyone's (and owns nothing)


def supervisor_pid(env: t.Mapping[str, str] | None = None) -> int:
    """The owning supervisor: ``$CLAUDE_SUPERVISOR_PID``; else Claude's own ``$CLAUDE_PID``
    (Claude Code gives it to hooks, the status line and Bash tools alike, so they
    agree even without claude-run); else our parent.

    A variable is taken only if it names a process above us (:func:`is_ancestor`):
    an agent that sets ``CLAUDE_SUPERVISOR_PID`` to another agent's supervisor
    does not become that agent."""
    env = os.environ if env is None else env
    for var in (SUPERVISOR_PID_ENV, CLAUDE_PID_ENV):
        pid = parse_pid(env.get(var, ""))
        if pid is not None and is_ancestor(pid):
            return pid
    return os.getppid()


def _read(path: str) -> bytes:
    """A small ``/proc`` file's bytes (pathlib would cost the hooks ~5 ms of import)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _read_boot_id() -> str:
    global _boot_id
    if _boot_id is None:
        try:
            _boot_id = _read("/proc/sys/kernel/random/boot_id").decode().strip()
        except OSError:
            _boot_id = "noboot"
    return _boot_id


def _proc_stat(pid: int) -> tuple[str, int, int] | None:
    """(state letter, parent PID, start time in ticks since boot) from ``/proc/PID/stat``; None if gone.

    Raises FileNotFoundError only where there is no ``/proc`` at all.
    """
    try:
        stat = _read(f"/proc/{pid}/stat")
    except FileNotFoundError:
        if os.path.exists("/proc/self/stat"):
            return None  # Linux, and the process is gone
        raise
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    fields = stat[stat.rfind(b")") + 2 :].split()
    try:
        return fields[0].decode(), int(fields[1]), int(fields[19])  # fields 3, 4 and 22 overall
    except (IndexError, ValueError):
        return None


def process_stat(pid: int) -> tuple[str, int, int] | None:
    """(state letter, parent PID, start ticks since boot) of *pid*; None if gone or there is no /proc."""
    try:
        return _proc_stat(pid)
    except FileNotFoundError:
        return None


def _from_stat(
    pid: int, read: t.Callable[[tuple[str, int, int]], T], portable: t.Callable[[int], T | None]
) -> T | None:
    """*read* from *pid*'s ``/proc`` stat, or *portable* (psutil) where there is no ``/proc``; None if gone."""
    if not valid_pid(pid):
        return None
    try:
        stat = _proc_stat(pid)
    except FileNotFoundError:
        return portable(pid)
    return None if stat is None else read(stat)


def start_token(pid: int) -> str | None:
    """A string that names this exact process, or None if *pid* does not exist."""
    return _from_stat(pid, lambda stat: f"{_read_boot_id()}:{stat[2]}", _start_token_portable)


def _start_token_portable(pid: int) -> str | None:
    import psutil  # only where /proc does not exist

    try:
        return f"ct:{psutil.Process(pid).create_time():.2f}"
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def parent_pid(pid: int) -> int | None:
    """The parent PID of *pid*, or None if it does not exist."""
    return _from_stat(pid, lambda stat: stat[1], _parent_pid_portable)


def _parent_pid_portable(pid: int) -> int | None:
    import psutil  # only where /proc does not exist

    try:
        ppid: int = psutil.Process(pid).ppid()
        return ppid
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None


def pid_exists(pid: int) -> bool:
    """True if *pid* > 0 names a running process (ours or another user's).

    A zombie — exited, not yet reaped by its parent — is not running: right
    after ``fleet stop`` a supervisor may linger as one for a moment, and must
    not be taken for a live owner.
    """
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        stat = _proc_stat(pid)
    except FileNotFoundError:
        return True  # no /proc: existence is all we can tell cheaply
    return stat is not None and stat[0] != "Z"


def owner_alive(pid: object, token: object = None) -> bool:
    """Is the recorded owner still running?

    ``pid`` ≤ 0 (or not a PID at all) is dead — the original treated PID 0 as
    alive (B1). With a recorded *token*, a live PID whose token differs is a
    reused PID, hence dead. Without one (state written by the bash original)
    the PID must still look like a supervisor or a Claude (its command line
    says ``claude``): otherwise any long-lived process that happens to hold
    the number — PID 1 always does — would keep the session forever.
    """
    if not valid_pid(pid) or not pid_exists(pid):
        return False
    if not token:
        return _looks_like_an_agent(pid)
    current = start_token(pid)
    return current is None or current == token  # None: cannot read, assume alive


AGENT_MARKERS = (b"claude", b"run.sh")


def _looks_like_an_agent(pid: int) -> bool:
    if pid == 1:
        return False
    try:
        cmdline = _read(f"/proc/{pid}/cmdline").lower()
    except FileNotFoundError:
        return not os.path.exists("/proc/self/cmdline")  # no /proc: existence is all we know
    except OSError:
        return True
    return any(marker in cmdline for marker in AGENT_MARKERS)


def same_owner(pid: object, token: object, my_pid: int, my_token: str | None) -> bool:
    """Does the stored (pid, token) name the process (my_pid, my_token)?"""
    if not valid_pid(pid) or pid != my_pid:
        return False
    return not token or not my_token or token == my_token


WATCHDOG_NAME = "claude-watchdog"
"""The watchdog is forked from claude-run and names itself so (``/proc/PID/comm``, 15 characters at most)."""


def is_watchdog(pid: int) -> bool:
    """Is *pid* one of our watchdogs? (``WATCHDOG_PID`` is never trusted blindly:
    SIGUSR1 terminates most processes that do not handle it.)"""
    if not valid_pid(pid):
        return False
    try:
        name = _read(f"/proc/{pid}/comm").decode(errors="replace").strip()
    except FileNotFoundError:
        if os.path.exists("/proc/self/comm"):
            return False
        import psutil  # only where /proc does not exist

        try:
            name = psutil.Process(pid).name()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return False
    except OSError:
        return False
    return name == WATCHDOG_NAME


def fleet_socket(env: t.Mapping[str, str] | None = None) -> str | None:
    """The socket path of the tmux server we run in, if it is a fleet's.

    Fleet sockets are named ``fleet`` or ``fleet-*``; any other tmux server
    (the user's own) is not a fleet, so we never read or recolour its panes
    (the original did, B10).
    """
    env = os.environ if env is None else env
    tmux = env.get("TMUX", "")
    if not tmux or not env.get("TMUX_PANE"):
        return None
    socket = tmux.split(",", 1)[0]
    return socket if is_fleet_socket(os.path.basename(socket)) else None


PANE_ID_FORMAT = "#{pane_id}\t#{pane_pid}\t" + "\t".join(
    one_line_field(f) for f in ("session_name", "window_name", "@pane_label")
)
"""One row per pane of the caller's tmux session, tab-separated: window names and labels may contain colons."""


def current_pane_id(env: t.Mapping[str, str] | None = None) -> str | None:
    """``{tmux session}:{window}:{@pane_label}`` of the calling fleet pane, else None.

    One tmux call with a timeout, listing the panes of ``$TMUX_PANE``'s session
    (the calling pane, not the focused one). ``$TMUX_PANE`` is only a claim: the
    pane counts only if its own process is one of our ancestors, so an agent
    cannot speak for another agent's pane by naming it. An identity two panes
    carry is nobody's: an agent can set its own pane's label to another's, and
    then neither pane may bind, record or resume anything under it until the
    person gives each pane its own label.
    """
    env = os.environ if env is None else env
    socket = fleet_socket(env)
    if socket is None:
        return None
    from claude_shepherd.supervisor.session.programs import run_tmux

    me = env["TMUX_PANE"]
    out = run_tmux(socket, ["list-panes", "-s", "-t", me, "-F", PANE_ID_FORMAT], env)
    if out is None or out.returncode != 0:
        return None
    identities: dict[str, str | None] = {}
    mine: str | None = None
    pid: int | None = None
    for row in out.stdout.splitlines():
        pane, pane_pid, rest = [*row.split("\t", 2), "", ""][:3]
        identities[pane] = pane_id_from_parts(*rest.split("\t", 2))
        if pane == me:
            mine, pid = identities[pane], parse_pid(pane_pid)
    if pid is None or not is_ancestor(pid) or mine is None:
        return None
    if sum(identity == mine for identity in identities.values()) > 1:
        return None
    return mine


def pane_id_from_parts(session: str = "", window: str = "", label: str = "") -> str | None:
    """Join the three parts, or None when any is missing (no label: not an agent pane)."""
    if not session or not window or not label:
        return None
    return f"{session}:{window}:{label}"
