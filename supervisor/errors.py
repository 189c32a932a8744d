"""The one exception family of every command, each class carrying its exit status.

A command raises; :func:`run_main` turns the exception into one line on
stderr (``PROG: error: what is wrong; what to do``) and the status of its
class. Nothing else prints errors or picks exit codes.
"""

from __future__ import annotations

import sys

from claude_shepherd.supervisor.printable import printable

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_NOT_RUNNING = 3
EXIT_CANNOT_EXECUTE = 126
EXIT_NOT_FOUND = 127
EXIT_INTERRUPTED = 130


class ShepherdError(Exception):
    """An expected failure with a message fit for one line on stderr.

    The message says what is wrong and, where it can, what to do about it.
    """

    exit_code = EXIT_FAILURE


class UsageError(ShepherdError):
    """The command line itself is wrong."""

    exit_code = EXIT_USAGE


class NotRunningError(ShepherdError):
    """What the command acts on (a fleet) is not running."""

    exit_code = EXIT_NOT_RUNNING


class ProgramMissingError(ShepherdError):
    """A program we run (tmux, Claude Code) is not installed."""

    exit_code = EXIT_NOT_FOUND


def say_error(prog: str, message: str) -> None:
    """``PROG: error: MESSAGE`` as one line on stderr, shown safe; a closed stderr is ignored."""
    try:
        sys.stderr.write(f"{prog}: error: {printable(' '.join(message.split()))}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def run_main(prog: str, body: t.Callable[[], int | None]) -> int:
    """Run a command's *body*; its status, or the one-line error and status of what it raised."""
    try:
        return body() or EXIT_OK
    except ShepherdError as exc:
        say_error(prog, str(exc))
        return exc.exit_code
    except OSError as exc:
        say_error(prog, f"{exc.strerror or exc} ({exc.filename or 'I/O'})")
        return EXIT_FAILURE
    except KeyboardInterrupt:
        say_error(prog, "interrupted")
        return EXIT_INTERRUPTED
