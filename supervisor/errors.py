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
EXIT_BUDGET_SPENT = 4
"""``claude-run --budget-usd`` of a headless run stopped at its budget (docs/BUDGETS.md)."""
EXIT_CANNOT_EXECUTE = 126
EXIT_NOT_FOUND = 127
EXIT_INTERRUPTED = 130


class ShepherdError(Exception):
    """An expected failure with a message fit for one line on stderr.

    The message says what is wrong and, where it can, what to do about it.
    """

    exit_code = EXIT_FAILURE
    label = "error: "
    """What the line says before the message: an expected stop (:class:`BudgetSpentError`) is no error."""


class UsageError(ShepherdError):
    """The command line itself is wrong."""

    exit_code = EXIT_USAGE


class NotRunningError(ShepherdError):
    """What the command acts on (a fleet) is not running."""

    exit_code = EXIT_NOT_RUNNING


class ProgramMissingError(ShepherdError):
    """A program we run (tmux, Claude Code) is not installed."""

    exit_code = EXIT_NOT_FOUND


class CannotExecuteError(ShepherdError):
    """A program we run is there but cannot be executed (permissions, not a program)."""

    exit_code = EXIT_CANNOT_EXECUTE


class BudgetSpentError(ShepherdError):
    """A budget is spent and the command stopped for it, as it should: one line, no ``error:``."""

    exit_code = EXIT_BUDGET_SPENT
    label = ""


class ExitStatusError(ShepherdError):
    """A command that ends with its own status (say, the one of the program it ran) and one line why."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def error_line(prog: str, message: str, label: str = "error: ") -> str:
    """``PROG: error: MESSAGE`` on one line, shown safe (*label* instead of ``error: ``)."""
    return f"{prog}: {label}{printable(' '.join(message.split()))}"


def say_error(prog: str, message: str, label: str = "error: ") -> None:
    """:func:`error_line` on stderr; a closed stderr is ignored."""
    try:
        sys.stderr.write(error_line(prog, message, label) + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def run_main(
    prog: str, body: t.Callable[[], int | None], *, keep: t.Callable[[str], None] | None = None
) -> int:
    """Run a command's *body*; its status, or the one-line error and status of what it raised.

    *keep*: also given each error line (``claude-run`` keeps it in the pane's log)."""

    def fail(message: str, status: int, label: str = "error: ") -> int:
        say_error(prog, message, label)
        if keep is not None:
            keep(error_line(prog, message, label))
        return status

    try:
        return body() or EXIT_OK
    except ShepherdError as exc:
        return fail(str(exc), exc.exit_code, exc.label)
    except OSError as exc:
        return fail(f"{exc.strerror or exc} ({exc.filename or 'I/O'})", EXIT_FAILURE)
    except KeyboardInterrupt:
        return fail("interrupted", EXIT_INTERRUPTED)
