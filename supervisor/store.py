"""Read and write ``.state.json`` safely: one lock, atomic replace.

Every writer in the project goes through :func:`update_state`. It holds an
exclusive ``flock`` on ``.state.json.lock`` from the read to the replace, so two
writers never lose each other's update (seed 002 R5), and it writes a temp file
in the same directory, fsyncs it and renames it over the state file, so a reader
never sees half a file even when a writer is SIGKILLed mid-write.

Standard library only: the hooks call this on every tool call.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time
from pathlib import Path

from supervisor.errors import ShepherdError
from supervisor.fields import IDENTITY_FIELDS, STATE_FILE

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

LOCK_SUFFIX = ".lock"
DEFAULT_LOCK_TIMEOUT = 5.0

if TYPE_CHECKING:
    T = t.TypeVar("T")
    State = dict[str, t.Any]
else:
    State = dict


class StateError(ShepherdError):
    """A state file cannot be read or written."""


class NoStateError(StateError):
    """The session has no ``.state.json`` yet."""


class CorruptStateError(StateError):
    """``.state.json`` exists but is not a JSON object."""


class LockTimeoutError(StateError):
    """Another process held the state lock for too long."""


def state_path(session_dir: Path) -> Path:
    return session_dir / STATE_FILE


class file_lock:  # noqa: N801 - used like the function it replaces: ``with file_lock(path):``
    """Hold an exclusive ``flock`` on *lock_path*; the kernel drops it if we die.

    The lock file is never deleted: deleting it would let two processes lock two
    different inodes of the same name. (A class, not ``contextlib``: one less
    import on the hook path.)
    """

    def __init__(self, lock_path: Path, timeout: float = DEFAULT_LOCK_TIMEOUT) -> None:
        self.lock_path = lock_path
        self.timeout = timeout
        self.fd = -1

    def __enter__(self) -> None:
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        deadline = time.monotonic() + self.timeout
        pause = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise LockTimeoutError(
                        f"{self.lock_path} has been locked by another process for more than "
                        f"{self.timeout:g}s; retry, or see who holds it with `fuser {self.lock_path}`"
                    ) from None
                time.sleep(pause)
                pause = min(pause * 2, 0.02)
        self.fd = fd

    def __exit__(self, *exc_info: object) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)  # closing the descriptor releases the flock


def json_object(
    raw: str, where: object, error: type[ShepherdError] = ShepherdError, hint: str = ""
) -> dict[str, t.Any]:
    """Parse *raw* as a JSON object, or raise *error* saying in one line what is wrong.

    Used for state files, activation stdin and Claude settings alike; *hint*
    ends the message with what to do.
    """
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise error(f"{where} is not valid JSON ({exc}){hint}") from None
    if not isinstance(data, dict):
        raise error(f"{where} holds a JSON {type(data).__name__}, not an object{hint}")
    return data


def parse_state(raw: str, where: Path) -> State:
    """Parse the text of a state file, or say in one line what is wrong with it."""
    if not raw.strip():
        raise CorruptStateError(f"{where} is empty")
    return json_object(raw, where, CorruptStateError)


def read_state(session_dir: Path) -> State:
    """Read a session's state without locking (writers replace the file atomically)."""
    path = state_path(session_dir)
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NoStateError(
            f"no {STATE_FILE} in {session_dir}; activate it first with "
            f"`session activate {session_dir} SKILL`"
        ) from None
    except UnicodeDecodeError:
        raise CorruptStateError(f"{path} is not UTF-8 text") from None
    return parse_state(raw, path)


def dump_state(state: State) -> str:
    """Serialise like jq's default output (the bash era grepped this layout)."""
    return json.dumps(state, indent=2, ensure_ascii=False) + "\n"


def write_atomic(path: Path, text: str, *, keep_mode: bool = False) -> None:
    """Write *text* to *path* so that readers see the old or the new file, never a mix.

    With *keep_mode*, the new file gets the permissions of the one it replaces
    (a user's settings file may be private).
    """
    mode = 0o644
    if keep_mode:
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            pass
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{time.monotonic_ns()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        if keep_mode:
            os.fchmod(fd, mode)  # not narrowed by the umask
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def set_aside(path: Path) -> Path:
    """Rename a corrupt state file out of the way instead of overwriting it."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    counter = 1
    while target.exists():
        counter += 1
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{counter}")
    os.replace(path, target)
    return target


def update_state(
    session_dir: Path,
    mutate: t.Callable[[State], T],
    *,
    create: bool = False,
    replace_corrupt: bool = False,
    validate: t.Callable[[State], None] | None = None,
    timeout: float = DEFAULT_LOCK_TIMEOUT,
) -> T:
    """Run *mutate* on the state under the session's lock and write the result.

    *mutate* changes the dict in place and returns whatever the caller wants
    back. If it raises, nothing is written. If the state did not change, the
    file is not rewritten. *validate* (the pydantic schema, from the CLI) may
    refuse the new state by raising. With *create*, a missing file starts as
    ``{}``; with *replace_corrupt*, a corrupt one is renamed aside first and the
    state starts as ``{}`` (only ``session activate`` may do that).
    """
    path = state_path(session_dir)
    if create:
        session_dir.mkdir(parents=True, exist_ok=True)
    elif not session_dir.is_dir():
        raise NoStateError(f"session directory {session_dir} does not exist")
    with file_lock(path.with_name(path.name + LOCK_SUFFIX), timeout):
        try:
            raw = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            if not create:
                raise NoStateError(
                    f"no {STATE_FILE} in {session_dir}; activate it first with "
                    f"`session activate {session_dir} SKILL`"
                ) from None
            raw = None
        except UnicodeDecodeError:
            raw = "\0"  # parsed as corrupt below
        before: State
        if raw is None:
            before = {}
        else:
            try:
                before = parse_state(raw, path)
            except CorruptStateError as exc:
                if not replace_corrupt:
                    raise CorruptStateError(
                        f"{exc}; fix it by hand or re-activate the session "
                        f"(the broken file is then kept beside it)"
                    ) from None
                set_aside(path)
                before = {}
        state = json.loads(json.dumps(before))  # an independent copy
        result = mutate(state)
        if state != before or raw is None:
            if validate is not None:
                validate(state)
            write_atomic(path, dump_state(state))
            if any(before.get(key) != state.get(key) for key in IDENTITY_FIELDS):
                from supervisor import index  # late: avoids a cycle, costs nothing

                try:
                    index.note(session_dir.parent, session_dir.name, state)
                except (OSError, StateError):
                    # The state is written; the cache must not turn that into a failure
                    # (or hide this session from lookups): have it rebuilt instead.
                    index.invalidate(session_dir.parent)
        return result
