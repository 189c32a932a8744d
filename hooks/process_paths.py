"""Paths that mean something else in every process: ``/proc/self``, ``/proc/PID``, ``/dev/fd`` …

A file tool's path is opened by Claude, but judged by a hook: another
process, whose working directory (moved by ``cd``), descriptors and PID are
its own. ``/proc/self/cwd/sessions/THEIRS/…`` is the hook's working directory
to the hook and Claude's to Claude — another agent's handover behind a path
the gates saw as harmless; ``/proc/PID/cwd`` or ``/proc/PID/root`` reach
into any process's view of the files. Such a path cannot be judged as Claude
will open it, so the gates refuse it, however it is reached: written out, or
through a symlink on the way (``/dev/fd`` is one, so is ``/proc/mounts``).
Standard library only.
"""

from __future__ import annotations

import os

PROC_OWN = frozenset({"self", "thread-self"})
DEV_OWN = frozenset({"fd", "stdin", "stdout", "stderr"})
PROCESS_RELATIVE = (
    "a path through /proc/self, /proc/PID, /proc/thread-self or /dev/fd names another file for Claude "
    "than for the hook that checks it; name the file by its own path."
)
MAX_LINKS = 40
"""Symlinks followed on one path before it is refused as a loop (the kernel's own limit)."""


def _own_view(path: str) -> bool:
    """Is *path* (absolute, normalised) itself a place each process sees as its own?"""
    parent, name = os.path.split(path)
    if parent == "/proc":
        return name in PROC_OWN or name.isdigit()
    return parent == "/dev" and name in DEV_OWN


def process_relative(path: str, cwd: str, home: str) -> bool:
    """Does *path* (as a file tool names it: relative to *cwd*, ``~`` for *home*) pass through a place
    that depends on which process opens it? Every symlink on the way is followed, as the kernel
    would, without following the magic ones (``/proc/self/cwd``) the hook would see as its own."""
    if path == "~" or path.startswith("~/"):
        path = home + path[1:]
    pending = os.path.join(cwd, path).split(os.sep)
    pending.reverse()
    current = os.sep
    links = 0
    while pending:
        name = pending.pop()
        if name in ("", "."):
            continue
        if name == "..":
            current = os.path.dirname(current)
            continue
        candidate = os.path.join(current, name)
        if _own_view(candidate):
            return True
        try:
            target = os.readlink(candidate)
        except OSError:  # not a link, or not there (yet): the path goes on from it as written
            current = candidate
            continue
        links += 1
        if links > MAX_LINKS:
            return True
        if target.startswith(os.sep):
            current = os.sep
        pending.extend(reversed(target.split(os.sep)))
    return False
