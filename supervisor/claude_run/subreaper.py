"""claude-run as a child subreaper: the orphans of Claude's tree become its children, and it ends them.

A ``setsid cmd &`` or a double-forked daemon started from a Bash tool loses its
parent at once and is reparented to the nearest *subreaper* ancestor — init,
unless claude-run is one. As init's child it was outside Claude's tree, so the
watchdog's tree kill never reached it and it survived every restart and stop.
With ``PR_SET_CHILD_SUBREAPER`` (Linux) such orphans become claude-run's
children: it reaps them as they exit, and after each Claude exit it ends every
child still left but the watchdog, with their descendants (the watchdog's
:func:`~claude_shepherd.supervisor.claude_run.watchdog.kill_trees` policy), before the next launch or its
own exit.

psutil is imported only when there is something to end: most exits leave nothing.
"""

from __future__ import annotations

import os

from claude_shepherd.supervisor.claude_run.watchdog import kill_trees, live_children, prctl
from claude_shepherd.supervisor.session.programs import HOOK_TIMEOUT, HOOKS_MAIN

TYPE_CHECKING = False
if TYPE_CHECKING:  # claude-run runs beside every agent: no typing at run time (docs/HOT_CORE.md)
    import typing as t

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Have orphaned descendants reparented to us instead of init; False where unsupported."""
    return prctl(PR_SET_CHILD_SUBREAPER, 1)


def leftovers(keep: t.Collection[int]) -> list[int]:
    """Our running children but those in *keep*."""
    return [pid for pid in live_children(os.getpid()) if pid not in keep]


def our_typists() -> set[int]:
    """Our children that the hooks left waiting to type into this pane: recorded so, by pid and start
    token, by the hook that spawned each (:mod:`claude_shepherd.supervisor.session.typists`). A process
    that only says it is one (its command line rewritten) is ended with Claude's other leftovers."""
    from claude_shepherd.supervisor.session import typists

    return {pid for pid in live_children(os.getpid()) if typists.recorded(pid, os.environ)}


def _cmdline(pid: int) -> list[str]:
    """*pid*'s command line ([] when it is gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [w.decode("utf-8", "surrogateescape") for w in f.read(65536).split(b"\0")]
    except OSError:
        return []


HOOK_FINISH = float(HOOK_TIMEOUT)
"""Seconds a hook of ours that Claude left running (StopFailure, detached so that ``claude -p``
cannot kill it) gets to finish before the sweep ends it: it records why Claude stopped. As long as
Claude Code itself lets a hook run: a loaded machine made 5 s too short, and the stop a crash."""


def is_our_hook(pid: int) -> bool:
    """Is *pid* a run of our hooks: ``claude-hook EVENT``, or installed as ``python -I -S
    …/hooks/__main__.py EVENT``? (By its command line: a process that only claims to be one gets
    :data:`HOOK_FINISH` seconds more, then is ended like any leftover.)"""
    words = _cmdline(pid)
    if any(os.path.basename(w) == "claude-hook" for w in words[:3]):
        return True
    return (
        len(words) > 4
        and words[1:3] == ["-I", "-S"]
        and os.path.realpath(words[3]) == os.path.realpath(HOOKS_MAIN)
    )


def end_processes(pids: t.Iterable[int], grace: float) -> int:
    """End *pids* (our children) and their descendants: SIGTERM, SIGCONT, *grace*, SIGKILL.

    Returns how many processes were signalled. Our children keep their PIDs until we reap them,
    so a PID cannot name another process here.
    """
    import psutil

    procs = []
    for pid in pids:
        try:
            procs.append(psutil.Process(pid))
        except psutil.Error:
            continue
    return kill_trees(procs, grace)[0] if procs else 0
