"""The sessions root's ``.gitignore``: our locks, index and temp files stay out of git.

Claude Code lists what each Bash command changed in the work tree by asking
git (``git status``, honouring ``.gitignore``): its files-changed view, and the
changed-file list PostToolUse hooks get. Without this file every ``session``
call showed the store's lock files and the index under ``sessions/``, and
``git status`` listed them for a commit. The store writes the file when it is
missing — never over one that exists (a person's own) — and the file ignores
itself too, so it never shows as a change either.

What stays visible, to commit with the project if sessions are kept in git:
each session's ``.state.json``, its logs and its handover (and a corrupt state
file set aside, which someone should look at). Standard library only: the
store calls this on every write (one ``open`` that fails once the file exists).
"""

from __future__ import annotations

import os

GITIGNORE = ".gitignore"
TEXT = """\
# Written by claude-shepherd: its locks, session index and temp files, never committed.
# Commit the rest (each session's .state.json, logs and handover) if you keep sessions in git.
/.gitignore
/.shepherd/
.state.json.lock
.*.tmp-*
"""


def ensure(name: str = GITIGNORE, *, dir_fd: int | None = None) -> None:
    """Create the ``.gitignore`` at *name* (relative to *dir_fd*) unless something is there already.

    ``O_EXCL`` never follows a planted symlink and never replaces anything;
    any failure leaves things as they were (the file only keeps a listing tidy).
    """
    try:
        fd = os.open(
            name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=dir_fd
        )
    except OSError:
        return
    try:
        os.write(fd, TEXT.encode())
    except OSError:
        pass
    finally:
        os.close(fd)
