"""A private directory of ours: made 0700 when missing, refused when anyone else could use it.

The fleet keeps its locks, its SSH connection sockets, its records of spans,
layouts and logs, and the hooks their alert bookkeeping, in folders that sit
where another local user may have made a folder of the same name first
(``/tmp/tmux-UID``, ``/tmp/claude-shepherd-UID``): a folder of theirs would
let them listen on our sockets, answer for our hosts or feed us records.
Every such folder goes through :func:`private_dir` before anything in it is
used, as tmux does with its own socket folder. A folder of ours that only
others could *read* is tightened to 0700 (nothing can have been planted in
it); one that is not ours, not a folder (a symlink included), or that others
could write is refused. Standard library only: the hooks use it.
"""

from __future__ import annotations

import os
import stat

from claude_shepherd.supervisor.errors import ShepherdError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t


class NotPrivateError(ShepherdError):
    """A folder we keep private is someone else's, or open to others."""


def private_dir(
    path: str | os.PathLike[str], *, within: str | os.PathLike[str] | None = None, hint: str = ""
) -> str:
    """*path*, made (0700) when missing, once it is a directory of this user nobody else can use.

    *within*: an ancestor of *path* that is private too; every folder from it down to *path* is made
    and checked the same way (the folders above it are made as usual). Without it, *path*'s parent
    must exist. *hint* is added to the refusal (say, which variable moves the folder).
    Raises :class:`NotPrivateError` with one line saying what to do.
    """
    path = os.path.abspath(os.fspath(path))
    chain = [path]
    if within is not None:
        top = os.path.abspath(os.fspath(within))
        if os.path.commonpath([top, path]) != top:
            raise ValueError(f"{path} is not within {top}")
        while chain[-1] != top:
            chain.append(os.path.dirname(chain[-1]))
        parent = os.path.dirname(top)
        if parent != top:
            try:
                os.makedirs(parent, exist_ok=True)
            except OSError as exc:
                raise _refusal(top, f"its parent cannot be made ({exc.strerror or exc})", hint) from None
    for folder in reversed(chain):
        _ensure(folder, hint)
    return path


def _ensure(path: str, hint: str) -> None:
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise _refusal(path, f"it cannot be made ({exc.strerror or exc})", hint) from None
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise _refusal(path, f"it cannot be read ({exc.strerror or exc})", hint) from None
    if not stat.S_ISDIR(info.st_mode):
        raise _refusal(path, "it is not a folder (a link, or a file); remove it", hint)
    if info.st_uid != os.getuid():
        raise _refusal(path, f"it belongs to user id {info.st_uid}, not you; remove it", hint)
    if info.st_mode & 0o022:
        raise _refusal(path, "others may write in it; remove it (nothing in it can be trusted)", hint)
    if info.st_mode & 0o077:
        try:
            os.chmod(path, 0o700)
        except OSError as exc:
            raise _refusal(path, f"it cannot be made private ({exc.strerror or exc})", hint) from None


def _refusal(path: str, why: str, hint: str) -> NotPrivateError:
    return NotPrivateError(f"{path} is not a private folder of yours: {why}{'; ' + hint if hint else ''}")


def is_private_dir(path: str | os.PathLike[str], **kwargs: t.Any) -> bool:
    """:func:`private_dir` for callers that go without the folder when it cannot be trusted (the hooks)."""
    try:
        private_dir(path, **kwargs)
    except NotPrivateError:
        return False
    return True
