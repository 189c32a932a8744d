"""Where a ``fleet`` verb's words go: one :class:`Printer` per run, made where the CLI is wired.

A verb says lines as it works (a stop's progress is worth seeing while it
waits) and ends with a report (:mod:`claude_shepherd.fleet.handle`,
:mod:`claude_shepherd.fleet.reports`); the printer shows both on the terminal,
or, for ``--json``, keeps the lines for the one JSON object another host's
``fleet`` reads (``exit_code``, ``lines``, ``error``: hosts of one version talk
to each other with it, so these do not change; ``report``, the report's own
document, is beside them).

Light on purpose (the standard library only): ``fleet --help`` and ``fleet status`` import it.
"""

from __future__ import annotations

import json
import sys
import typing as t

from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.printable import printable

if t.TYPE_CHECKING:
    import typer

    from claude_shepherd.fleet.pane_status import PaneStatus

PROG = "fleet"
"""The program's name, as its usage and error lines say it."""

Say = t.Callable[[str], None]
"""Where a line goes (a printer's :meth:`Printer.say`, a watch's toast)."""


def _echo(text: str) -> None:
    """One line on stdout, at once (as click's echo: what is said while a verb waits is seen)."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


class FleetFailure(ShepherdError):
    """The command did its work but something must be reported as a failure."""


class Table(t.Protocol):
    """A report of pane rows (``fleet status``): a heading and a table for people, a document for ``--json``."""

    @property
    def rows(self) -> list[PaneStatus]: ...

    def heading(self) -> list[str]: ...

    def host_column(self) -> list[str] | None: ...

    def as_json(self) -> t.Any: ...


class Said(t.Protocol):
    """A verb's report that is lines for people (under ``--json``, the envelope's), and what fails it."""

    def lines(self) -> t.Iterable[str]: ...

    def failure(self) -> BaseException | None: ...


@t.runtime_checkable
class Documented(t.Protocol):
    """A report that is also a JSON document: under ``--json``, the envelope's ``report``."""

    def as_json(self) -> t.Any: ...


class Printer:
    """A run's output: said on the terminal, or kept for :meth:`envelope` once ``--json`` is asked."""

    def __init__(self) -> None:
        self._kept: list[str] | None = None
        self._report: object = None

    @property
    def machine(self) -> bool:
        """``--json``: what is said is kept for the envelope, never printed."""
        return self._kept is not None

    def use_json(self, on: bool) -> Printer:
        """With *on* (a verb's ``--json``), keep every line said from now on for :meth:`envelope`."""
        if on and self._kept is None:
            self._kept = []
        return self

    def say(self, line: str = "") -> None:
        """One line for the operator; what agents named in it (processes, folders) cannot carry escapes."""
        if self._kept is not None:
            self._kept.append(printable(line))
        else:
            _echo(printable(line))

    @property
    def said(self) -> list[str]:
        """The lines kept so far (under ``--json``; none otherwise)."""
        return list(self._kept or ())

    def document(self, value: object) -> None:
        """A verb's own JSON document on stdout (``status --json``, ``ls --json``): ASCII, escapes
        ``\\u``-quoted, so it carries no terminal escape either."""
        _echo(json.dumps(value, indent=2))

    def show(self, report: Said) -> None:
        """*report*'s lines; then its failure, raised (the run's error line and exit status). Under
        ``--json`` its document goes in the envelope too."""
        if self._kept is not None and isinstance(report, Documented):
            self._report = report.as_json()
        for line in report.lines():
            self.say(line)
        failure = report.failure()
        if failure is not None:
            raise failure

    def document_line(self, value: object) -> None:
        """*value* as one line of JSON (what ``status --json`` says instead of an error line)."""
        _echo(json.dumps(value))

    def status(self, report: Table, as_json: bool = False) -> None:
        """``fleet status``: its rows as one JSON document, or its heading and a table for people."""
        if as_json:
            self.document(report.as_json())
            return
        from claude_shepherd.fleet.status_table import render

        for line in report.heading():
            self.say(line)
        render(report.rows, report.host_column())

    def envelope(self, exit_code: int, error: str | None) -> str | None:
        """The JSON object of a verb run with ``--json`` (None when it was not): what another machine's
        ``fleet`` reads, never a screen."""
        if self._kept is None:
            return None
        answer = {"exit_code": exit_code, "lines": self._kept, "error": error}
        if self._report is not None:  # beside the three fields a host of this version reads
            answer["report"] = self._report
        return json.dumps(answer)


def printer_of(ctx: typer.Context) -> Printer:
    """The printer :func:`claude_shepherd.fleet.cli.run` made for this run (a new one for a caller that
    runs the typer app itself)."""
    root = ctx.find_root()
    if not isinstance(root.obj, Printer):
        root.obj = Printer()
    return root.obj


def locked(socket: str, verb: str, say: Say) -> t.ContextManager[None]:
    """The fleet's lock for *verb*'s whole run (a second verb waits, saying for whom)."""
    from claude_shepherd.fleet.lock import fleet_lock  # lazy: keeps `fleet --help` fast

    return fleet_lock(socket, verb, waiting=say)
