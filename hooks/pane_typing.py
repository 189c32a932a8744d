"""A prompt typed into a fleet pane's Claude, later, by a detached process of the hooks.

A parked agent goes on after its usage window reopens (:mod:`.usage_turn`), a paused one when its
day's or week's budget renews (:mod:`.budget_renewal`): in a fleet pane a process of ours waits for the
moment and types the prompt, as a person would. It types only into the pane that still carries the
agent's identity (a relabelled pane, or a label two panes carry, is nobody's), Ctrl-U first (a refused
prompt is put back in Claude's input box), the text as literal keys, and Enter once it has shown. What
is typed is always our own text, never anything an agent gave: keys typed into a pane are input to
Claude (a line break sends, a line starting ``!`` runs a shell command). Standard library only.
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


TYPISTS = ("resume-at", "budget-renews")
"""The ``claude-hook`` commands that wait, detached, to type into a pane."""


def spawn(command: str, args: list[str], env: t.Mapping[str, str]) -> int | None:
    """Leave ``claude-hook COMMAND ARGS`` running detached; its pid, or None when it did not start."""
    from claude_shepherd.supervisor.session.programs import spawn_later

    return spawn_later([sys.executable, "-I", "-S", MAIN, command, *args], env, 0)


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


def wait_for(when: float, still: t.Callable[[], bool] | None = None) -> bool:
    """Sleep until epoch *when*, True then; False for a moment nobody waits for (not a number, or
    further ahead than :data:`LATEST`), or as soon as *still* (asked every :data:`CHECK_EVERY` seconds
    of a long wait) says there is nothing to wait for any more."""
    if not when - time.time() <= LATEST:  # NaN fails too
        return False
    while (left := when - time.time()) > 0:
        time.sleep(min(left, CHECK_EVERY) if still is not None else left)
        if still is not None and left > CHECK_EVERY and not still():
            return False
    return True


def type_prompt(socket: str, pane: str, agent: str, text: str) -> bool:
    """Type *text* into *pane* and send it, if the pane is still *agent*'s; True when it was typed."""
    from claude_shepherd.supervisor.session.programs import run_tmux

    if not pane.startswith("%") or identity_of(socket, pane) != agent:
        return False
    for keys in (["C-u"], ["-l", "--", text]):
        run_tmux(socket, ["send-keys", "-t", pane, *keys], os.environ)
    time.sleep(TYPE_SETTLE)
    run_tmux(socket, ["send-keys", "-t", pane, "Enter"], os.environ)
    return True


def identity_of(socket: str, pane: str) -> str | None:
    """The fleet identity *pane* carries now, if it runs (a dead pane types nowhere) and no other pane
    of its session carries it too."""
    from claude_shepherd.supervisor.session.identity import PANE_ID_FORMAT, pane_id_from_parts
    from claude_shepherd.supervisor.session.programs import run_tmux

    out = run_tmux(
        socket, ["list-panes", "-s", "-t", pane, "-F", "#{pane_dead}\t" + PANE_ID_FORMAT], os.environ
    )
    if out is None or out.returncode != 0:
        return None
    rows = [row.split("\t", 3) for row in out.stdout.splitlines()]
    carried = {row[1]: (row[0], pane_id_from_parts(*row[3].split("\t", 2))) for row in rows if len(row) == 4}
    dead, mine = carried.get(pane, ("1", None))
    others = [identity for _, identity in carried.values()]
    return mine if mine is not None and dead == "0" and others.count(mine) == 1 else None
