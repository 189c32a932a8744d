"""A prompt typed into a fleet pane's Claude, later, by a detached process of the hooks.

A parked agent goes on after its usage window reopens (:mod:`.usage_turn`), a paused one when its
day's or week's budget renews (:mod:`.budget_renewal`): in a fleet pane a process of ours (a *typist*)
waits for the moment and types the prompt, as a person would. It types only into the pane that still
carries the agent's identity (a relabelled pane, or a label two panes carry, is nobody's), Ctrl-U first
(a refused prompt is put back in Claude's input box), the text as literal keys, and Enter once it has
shown. What is typed is always our own text, never anything an agent gave: keys typed into a pane are
input to Claude (a line break sends, a line starting ``!`` runs a shell command).

A typist belongs to the claude-run it was left under (its *owner*: ``$CLAUDE_SUPERVISOR_PID``, believed
only when that process is above it), which adopts it and ends it when it exits for good. Should the
owner be gone anyway, the typist ends within :data:`OWNER_CHECK` seconds. Keys go only where the
owner's Claude reads them (:func:`reads_keys`): that Claude in the foreground of the pane's terminal, in
the raw mode of its TUI — never into a shell the pane fell back to, nor into a terminal whose keys would
wait for whatever reads next. While the owner's Claude is not there (a relaunch, a back-off), the
typist waits for it. Standard library only.
"""

from __future__ import annotations

import os
import sys
import time

from claude_shepherd.hooks import MAIN

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t

TYPE_SETTLE = 0.5
"""Seconds between the text and its Enter, for Claude's input box to show it."""
LATEST = 8 * 86400.0
"""The furthest ahead a moment to type is believed (a week's budget renews within 7 days)."""
CHECK_EVERY = 10.0
"""Seconds between two looks, during a long wait, at whether it is still wanted (the fleet may have
stopped, the agent been resumed): a process of ours never outlives what it waits for by more."""
OWNER_CHECK = 1.0
"""Seconds between two looks at whether the typist's claude-run still runs (a read of its ``/proc``)."""
READY_POLL = 0.5
"""Seconds between two looks, at the moment, for the owner's Claude reading keys in the pane."""


TYPISTS = ("resume-at", "budget-renews", "watch-subagent")
"""The ``claude-hook`` commands that wait, detached, to type into a pane (or interrupt its Claude)."""


def spawn(command: str, args: list[str], env: t.Mapping[str, str]) -> int | None:
    """Leave ``claude-hook COMMAND ARGS`` running detached, recorded as a typist
    (:mod:`claude_shepherd.supervisor.session.typists`); its pid, or None when it did not start."""
    from claude_shepherd.supervisor.session import typists
    from claude_shepherd.supervisor.session.programs import spawn_later

    pid = spawn_later([sys.executable, "-I", "-S", MAIN, command, *args], env, 0)
    if pid is not None:
        typists.record(pid, env)
    return pid


def is_typist(argv: t.Sequence[str]) -> bool:
    """Is *argv* (a process's command line) one of ours that :func:`spawn` left to wait and type?

    claude-run, a subreaper, adopts it when the hook that left it exits, and lets it be when it
    relaunches Claude in the same pane: it ends by itself once it typed or is not wanted (at most
    :data:`CHECK_EVERY` seconds after). A process that only claims to be one runs our code with its
    arguments, which types only our own text, only to a paused or parked agent in its own pane.
    """
    return (
        len(argv) >= 5
        and os.path.realpath(argv[0]) == os.path.realpath(sys.executable)
        and list(argv[1:4]) == ["-I", "-S", MAIN]
        and argv[4] in TYPISTS
    )


def only_one(path: str) -> int | None:
    """Hold the lock at *path* for the life of this process (its descriptor), or None when another
    process holds it: one typist per agent, however many hooks that ran at once left one."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


Owner = tuple[int, str]
"""A claude-run: its pid and start token."""


def owner(env: t.Mapping[str, str]) -> Owner | None:
    """The claude-run this typist belongs to: ``$CLAUDE_SUPERVISOR_PID`` when that process is above this
    one (the hook that left it, or, once that exited, claude-run itself, a subreaper, is its parent);
    None when no claude-run is: then nothing ends it with its agent, and nothing may be typed."""
    from claude_shepherd.supervisor.env import SUPERVISOR_PID_ENV
    from claude_shepherd.supervisor.session.identity import is_ancestor, start_token
    from claude_shepherd.supervisor.session.numbers import parse_pid

    pid = parse_pid(env.get(SUPERVISOR_PID_ENV, "").strip())
    if pid is None or pid <= 1 or pid == os.getpid() or not is_ancestor(pid):
        return None
    token = start_token(pid)
    return None if token is None else (pid, token)


def owner_alive(who: Owner) -> bool:
    from claude_shepherd.supervisor.session.identity import start_token

    return start_token(who[0]) == who[1]


def wait_for(when: float, still: t.Callable[[], bool] | None = None, who: Owner | None = None) -> bool:
    """Sleep until epoch *when*, True then; False for a moment nobody waits for (not a number, or
    further ahead than :data:`LATEST`), as soon as *still* (asked every :data:`CHECK_EVERY` seconds
    of a long wait) says there is nothing to wait for any more, or once the claude-run *who* is gone
    (looked at every :data:`OWNER_CHECK` seconds)."""
    if not when - time.time() <= LATEST:  # NaN fails too
        return False
    asked = time.monotonic()
    while (left := when - time.time()) > 0:
        step = left if still is None and who is None else min(left, CHECK_EVERY)
        time.sleep(min(step, OWNER_CHECK) if who is not None else step)
        if who is not None and not owner_alive(who):
            return False
        if still is not None and left > CHECK_EVERY and time.monotonic() - asked >= CHECK_EVERY:
            asked = time.monotonic()
            if not still():
                return False
    return True


def type_prompt(
    socket: str, pane: str, agent: str, text: str, who: Owner, still: t.Callable[[], bool] | None = None
) -> bool:
    """Type *text* into *pane* and send it once the claude-run *who* has its Claude reading the pane's
    keys (waiting for it while *who* runs and *still* says the prompt is wanted), if the pane is still
    *agent*'s; True when it was typed. Looked at again before the Enter: a Claude that went meanwhile
    gets no Enter, nor does what took the terminal after it."""
    from claude_shepherd.supervisor.session.programs import run_tmux

    if not pane.startswith("%"):
        return False
    claude = _ready(socket, pane, agent, who, still)
    if claude is None:
        return False
    for keys in (["C-u"], ["-l", "--", text]):
        run_tmux(socket, ["send-keys", "-t", pane, *keys], os.environ)
    time.sleep(TYPE_SETTLE)
    if reads_keys(socket, pane, agent, who) != claude:
        return False
    run_tmux(socket, ["send-keys", "-t", pane, "Enter"], os.environ)
    return True


def _ready(socket: str, pane: str, agent: str, who: Owner, still: t.Callable[[], bool] | None) -> int | None:
    """The pid of *who*'s Claude once it has read *pane*'s keys at two looks in a row (a TUI just
    started may still drop them); None when *who* ended, or *still* says the prompt is not wanted."""
    seen: int | None = None
    asked = time.monotonic()
    while owner_alive(who):
        claude = reads_keys(socket, pane, agent, who)
        if claude is not None and claude == seen:
            return claude
        seen = claude
        if still is not None and time.monotonic() - asked >= CHECK_EVERY:
            asked = time.monotonic()
            if not still():
                return None
        time.sleep(READY_POLL)
    return None


def reads_keys(socket: str, pane: str, agent: str, who: Owner) -> int | None:
    """The pid of the Claude of claude-run *who* when it is what reads *pane*'s keys now: the
    foreground process group of *who*'s terminal is *who*'s (Claude stays in it: claude-run runs it as
    ``system()`` does) with Claude, a child of *who*, in it; that terminal is the pane's, which runs and
    carries *agent*'s identity; and it is in raw mode (Claude's TUI reads each key itself). Else None.
    ``/proc`` first: a typist waiting for a Claude that is not there asks tmux nothing."""
    mine = _stat(who[0]) if owner_alive(who) else None
    if mine is None or mine[4] <= 0 or mine[4] != mine[1]:
        return None  # gone, or a shell (or nothing) has the foreground of its terminal
    claude = next(
        (
            pid
            for pid in _children(who[0])
            if (s := _stat(pid)) is not None and s[1] == mine[4] and s[0] != "Z"
        ),
        None,
    )
    fields = _pane_fields(socket, pane) if claude is not None else None
    if fields is None or fields[1] != agent:
        return None
    try:
        device = os.stat(fields[2]).st_rdev
    except OSError:
        return None
    return claude if mine[3] == device and _raw(fields[2]) else None


def _stat(pid: int) -> tuple[str, int, int, int, int] | None:
    """(state, process group, session, terminal device, terminal's foreground group) of *pid*."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    try:
        return fields[0].decode(), int(fields[2]), int(fields[3]), int(fields[4]), int(fields[5])
    except (IndexError, ValueError):
        return None


def _children(pid: int) -> list[int]:
    """*pid*'s children: from ``/proc``'s children list, else from every process's parent."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as f:
            return [int(word) for word in f.read().split()]
    except FileNotFoundError:
        pass
    except (OSError, ValueError):
        return []
    from claude_shepherd.supervisor.session.identity import parent_pid

    return [int(name) for name in os.listdir("/proc") if name.isdigit() and parent_pid(int(name)) == pid]


def _raw(tty: str) -> bool:
    """Does a program read *tty*'s keys one by one (not canonical mode, where a shell's line editing or
    a plain read would take them)?"""
    import termios

    try:
        fd = os.open(tty, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return not termios.tcgetattr(fd)[3] & termios.ICANON
    except termios.error:
        return False
    finally:
        os.close(fd)


def identity_of(socket: str, pane: str) -> str | None:
    """The fleet identity *pane* carries now, if it runs (a dead pane types nowhere) and no other pane
    of its session carries it too."""
    fields = _pane_fields(socket, pane)
    return fields[1] if fields is not None else None


def _pane_fields(socket: str, pane: str) -> tuple[str, str, str] | None:
    """(pane, identity, terminal) of *pane* if it runs and carries an identity no other pane of its
    session carries too; None otherwise."""
    from claude_shepherd.supervisor.session.identity import PANE_ID_FORMAT, pane_id_from_parts
    from claude_shepherd.supervisor.session.programs import run_tmux

    out = run_tmux(
        socket,
        ["list-panes", "-s", "-t", pane, "-F", "#{pane_dead}\t#{pane_tty}\t" + PANE_ID_FORMAT],
        os.environ,
    )
    if out is None or out.returncode != 0:
        return None
    rows = [row.split("\t", 4) for row in out.stdout.splitlines()]
    carried = {
        row[2]: (row[0], row[1], pane_id_from_parts(*row[4].split("\t", 2))) for row in rows if len(row) == 5
    }
    dead, tty, mine = carried.get(pane, ("1", "", None))
    others = [identity for _, _, identity in carried.values()]
    if mine is None or dead != "0" or others.count(mine) != 1:
        return None
    return pane, mine, tty
