"""Read and write ``.state.json`` safely: one lock, atomic replace.

Every writer in the project goes through :func:`update_state`. It holds an
exclusive ``flock`` on ``.state.json.lock`` from the read to the replace, so two
writers never lose each other's update (docs/DESIGN.md R5), and it writes a temp file
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

from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.session import root_gitignore
from claude_shepherd.supervisor.session.fields import STATE_FILE
from claude_shepherd.supervisor.session.safe_fs import (
    MAX_STATE_BYTES,
    UnsafeFileError,
    open_dir,
    open_lock,
    read_bytes,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

LOCK_SUFFIX = ".lock"
DEFAULT_LOCK_TIMEOUT = 5.0

if TYPE_CHECKING:
    from claude_shepherd.supervisor.session.state import State

    T = t.TypeVar("T")


class StateError(ShepherdError):
    """A state file cannot be read or written."""


class NoStateError(StateError):
    """The session has no ``.state.json`` yet."""


class CorruptStateError(StateError):
    """``.state.json`` exists but is not a JSON object."""


class UnsafeStateError(CorruptStateError):
    """``.state.json`` (or its folder or lock) is a link, a FIFO, a device or too big."""


class LockTimeoutError(StateError):
    """Another process held the state lock for too long."""


def state_path(session_dir: Path) -> Path:
    return session_dir / STATE_FILE


class file_lock:
    """Hold an exclusive ``flock`` on *lock_path*; the kernel drops it if we die.

    The lock file is never deleted: deleting it would let two processes lock two
    different inodes of the same name. It is opened without following a link
    (an agent could point the name at any file of the user's). A contended lock
    is waited for in the kernel, which wakes waiters as soon as it is released;
    polling with sleeps let a dozen busy writers starve one past its timeout.
    (A class, not ``contextlib``: one less import on the hook path.)
    """

    def __init__(
        self, lock_path: Path | str, timeout: float = DEFAULT_LOCK_TIMEOUT, dir_fd: int | None = None
    ) -> None:
        self.lock_path = lock_path
        self.timeout = timeout
        self.dir_fd = dir_fd
        self.fd = -1

    def __enter__(self) -> None:
        try:
            fd = open_lock(self.lock_path, dir_fd=self.dir_fd)
        except UnsafeFileError as exc:
            raise UnsafeStateError(str(exc)) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                os.close(fd)
                raise
            if not wait_for_lock(fd, self.timeout):
                os.close(fd)
                raise LockTimeoutError(
                    f"{self.lock_path} has been locked by another process for more than "
                    f"{self.timeout:g}s; retry, or see who holds it with `fuser {self.lock_path}`"
                ) from None
        self.fd = fd

    def __exit__(self, *exc_info: object) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)  # closing the descriptor releases the flock


class _LockWaitExpired(Exception):
    pass


def _expire(signum: int, frame: object) -> None:
    raise _LockWaitExpired


def wait_for_lock(fd: int, timeout: float) -> bool:
    """Block in ``flock`` until the lock is ours or *timeout* passes; True when it is ours.

    The kernel wait is bounded by a one-shot ``SIGALRM`` when this thread may
    use it (the main thread, no timer running); otherwise — in a thread, or
    while someone else's timer runs — it falls back to polling.
    """
    import signal as _signal  # only when contended: most hook calls never get here

    try:
        idle = _signal.getitimer(_signal.ITIMER_REAL) == (0.0, 0.0)
        previous = _signal.signal(_signal.SIGALRM, _expire) if idle else None
    except ValueError:  # not the main thread
        idle = False
    if not idle:
        return _poll_for_lock(fd, timeout)
    try:
        try:
            _signal.setitimer(_signal.ITIMER_REAL, max(timeout, 0.001))
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            finally:
                _signal.setitimer(_signal.ITIMER_REAL, 0)
            return True
        except _LockWaitExpired:
            pass
        try:  # the alarm may have fired just after the lock was granted
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError:
            return False
    finally:
        _signal.signal(_signal.SIGALRM, previous if previous is not None else _signal.SIG_DFL)


def _poll_for_lock(fd: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    pause = 0.0005
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
        if time.monotonic() >= deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 0.005)


def json_object(
    raw: str, where: object, error: type[ShepherdError] = ShepherdError, hint: str = ""
) -> dict[str, object]:
    """Parse *raw* as a JSON object, or raise *error* saying in one line what is wrong.

    Used for state files, activation stdin and Claude settings alike; *hint*
    ends the message with what to do.
    """
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise error(f"{where} is not valid JSON ({exc}){hint}") from None
    except RecursionError:
        raise error(f"{where} is nested too deeply to be read{hint}") from None
    if not isinstance(data, dict):
        raise error(f"{where} holds a JSON {type(data).__name__}, not an object{hint}")
    return data


def parse_state(raw: str, where: Path) -> State:
    """Parse the text of a state file, or say in one line what is wrong with it."""
    if not raw.strip():
        raise CorruptStateError(f"{where} is empty")
    return as_state(json_object(raw, where, CorruptStateError))


def as_state(data: dict[str, object]) -> State:
    """A JSON object read as a state: every field optional, each checked where it is read or by the schema."""
    return data  # type: ignore[return-value]


def as_fields(state: State) -> dict[str, object]:
    """The state as the plain JSON object it is, for a key known only at run time (unknown keys are kept)."""
    return state  # type: ignore[return-value]


def _no_state(session_dir: Path) -> NoStateError:
    return NoStateError(
        f"no {STATE_FILE} in {session_dir}; activate it first with `session activate {session_dir} SKILL`"
    )


def open_session_dir(session_dir: Path, *, create: bool = False) -> int:
    """A descriptor of the session folder itself (never through a symlink); the caller closes it."""
    if create:
        try:
            os.mkdir(session_dir, 0o755)
        except FileExistsError:
            pass
        except FileNotFoundError:
            session_dir.parent.mkdir(parents=True, exist_ok=True)
            os.makedirs(session_dir, 0o755, exist_ok=True)
    try:
        return open_dir(session_dir)
    except UnsafeFileError as exc:
        raise UnsafeStateError(str(exc)) from None
    except (FileNotFoundError, NotADirectoryError):
        raise NoStateError(f"session directory {session_dir} does not exist") from None


def read_raw(session_dir: Path, dir_fd: int | None = None) -> str:
    """The text of the state file, read safely; raises the store's errors."""
    path = state_path(session_dir)
    own_fd = dir_fd is None
    fd = open_session_dir(session_dir) if dir_fd is None else dir_fd
    try:
        data = read_bytes(STATE_FILE, limit=MAX_STATE_BYTES, dir_fd=fd)
    except FileNotFoundError:
        raise _no_state(session_dir) from None
    except UnsafeFileError as exc:
        raise UnsafeStateError(str(exc).replace(STATE_FILE, str(path), 1)) from None
    except OSError as exc:
        raise StateError(f"cannot read {path}: {exc.strerror or exc}") from None
    finally:
        if own_fd:
            os.close(fd)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise CorruptStateError(f"{path} is not UTF-8 text") from None


def read_state(session_dir: Path) -> State:
    """Read a session's state without locking (writers replace the file atomically)."""
    return parse_state(read_raw(session_dir), state_path(session_dir))


def dump_state(state: State) -> str:
    """Serialise like jq's default output (the bash era grepped this layout)."""
    return json.dumps(state, indent=2, ensure_ascii=False) + "\n"


def _temp_name(name: str) -> str:
    return f".{name}.tmp-{os.getpid()}-{time.monotonic_ns()}"


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
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        write_atomic_at(fd, path.name, text, mode=mode, keep_mode=keep_mode)
    finally:
        os.close(fd)


def write_atomic_at(dir_fd: int, name: str, text: str, *, mode: int = 0o644, keep_mode: bool = False) -> None:
    """:func:`write_atomic` of *name* inside the open directory *dir_fd*.

    The temp file is created exclusively and never through a link, and the
    rename replaces whatever *name* is (a planted symlink included) without
    following it.
    """
    tmp = _temp_name(name)
    fd = os.open(
        tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd
    )
    try:
        if keep_mode:
            os.fchmod(fd, mode)  # not narrowed by the umask
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except FileNotFoundError:
            pass
        raise
    try:
        os.fsync(dir_fd)
    except OSError:
        pass


def sweep_temps(dir_fd: int, name: str) -> int:
    """Remove the temp files a killed writer of *name* left behind; how many.

    Called with *name*'s lock held: every writer holds it while its temp file
    exists, so any temp file found then belongs to a writer that died.
    """
    prefix = f".{name}.tmp-"
    removed = 0
    try:
        entries = os.listdir(dir_fd)
    except OSError:
        return 0
    for entry in entries:
        if entry.startswith(prefix):
            try:
                os.unlink(entry, dir_fd=dir_fd)
                removed += 1
            except OSError:
                pass
    return removed


def set_aside(session_dir: Path, dir_fd: int | None = None) -> Path:
    """Rename a corrupt state file out of the way instead of overwriting it."""
    path = state_path(session_dir)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    target = f"{STATE_FILE}.corrupt-{stamp}"
    counter = 1
    while os.path.lexists(session_dir / target):
        counter += 1
        target = f"{STATE_FILE}.corrupt-{stamp}-{counter}"
    os.replace(STATE_FILE, target, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    return path.with_name(target)


def update_state(
    session_dir: Path,
    mutate: t.Callable[[State], T],
    *,
    create: bool = False,
    replace_corrupt: t.Callable[[str | None], None] | bool = False,
    validate: t.Callable[[State], None] | None = None,
    timeout: float = DEFAULT_LOCK_TIMEOUT,
) -> T:
    """Run *mutate* on the state under the session's lock and write the result.

    *mutate* changes the dict in place and returns whatever the caller wants
    back. If it raises, nothing is written. If the state did not change, the
    file is not rewritten. *validate* (the schema) may refuse the new state by
    raising. With *create*, a missing file starts as ``{}``. *replace_corrupt*
    lets a corrupt file be renamed aside so the state starts as ``{}``: when it
    is a callable, it is first given the corrupt text (None when the file could
    not even be read) and may refuse by raising (only ``session activate`` does
    this, after checking who owned the file).
    """
    fd = open_session_dir(session_dir, create=create)
    try:
        root_gitignore.ensure("../" + root_gitignore.GITIGNORE, dir_fd=fd)  # before the lock file appears
        with file_lock(STATE_FILE + LOCK_SUFFIX, timeout, dir_fd=fd):
            sweep_temps(fd, STATE_FILE)
            try:
                raw: str | None = read_raw(session_dir, fd)
            except NoStateError:
                if not create:
                    raise
                raw = None
            except CorruptStateError as exc:
                if not replace_corrupt:
                    raise
                raw = "\0" + str(exc)  # parsed as corrupt below
            before: State
            if raw is None:
                before = {}
            else:
                try:
                    before = parse_state(raw, state_path(session_dir))
                except CorruptStateError as exc:
                    if not replace_corrupt:
                        raise CorruptStateError(
                            f"{exc}; fix it by hand or re-activate the session "
                            f"(the broken file is then kept beside it)"
                        ) from None
                    if callable(replace_corrupt):
                        replace_corrupt(None if raw.startswith("\0") else raw)
                    set_aside(session_dir, fd)
                    before = {}
                    raw = None
            state = json.loads(json.dumps(before))  # an independent copy
            result = mutate(state)
            if state != before or raw is None:
                if validate is not None:
                    validate(state)
                text = dump_state(state)
                if len(text.encode("utf-8")) > MAX_STATE_BYTES:  # every reader would refuse it
                    raise StateError(
                        f"{state_path(session_dir)} would grow past {MAX_STATE_BYTES // 1024} KiB; "
                        "keep large material in files of the session folder, not in its state"
                    )
                write_atomic_at(fd, STATE_FILE, text)
            return result
    finally:
        os.close(fd)
