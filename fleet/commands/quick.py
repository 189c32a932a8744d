"""``fleet status`` without typer: its words read by hand when they are plain, so that typer (70 ms
to import) stays off the path a script or a status bar runs in a loop.

:func:`claude_shepherd.fleet.cli.run` asks :func:`status_words` first; any
other words (``--help``, an unknown or repeated option, a missing value) go to
the typer app, which says what it always said. Both paths end in :func:`show`.
Standard library only at the top (docs/HOT_CORE.md).
"""

from __future__ import annotations

import contextlib
import os
import typing as t

from claude_shepherd.supervisor.env import FLEET_SOCKET_ENV

if t.TYPE_CHECKING:
    from claude_shepherd.fleet.output import Printer


class StatusWords(t.NamedTuple):
    layout: str | None
    socket: str | None
    as_json: bool


def status_words(words: t.Sequence[str], env: t.Mapping[str, str] | None = None) -> StatusWords | None:
    """``status [LAYOUT] [--json] [--socket|-L NAME]`` read as typer reads them; None for anything else."""
    if not words or words[0] != "status":
        return None
    layout: str | None = None
    socket: str | None = None
    as_json = False
    rest = list(words[1:])
    while rest:
        word = rest.pop(0)
        if word == "--json" and not as_json:
            as_json = True
        elif word in ("--socket", "-L") and socket is None and rest and not rest[0].startswith("-"):
            socket = rest.pop(0)
        elif word.startswith("--socket=") and socket is None and len(word) > len("--socket="):
            socket = word.removeprefix("--socket=")
        elif layout is None and word and (word == "-" or not word.startswith("-")):
            layout = word
        else:
            return None  # typer's to say what is wrong (or to show --help)
    if socket is None:
        socket = (os.environ if env is None else env).get(FLEET_SOCKET_ENV) or None
    return StatusWords(layout, socket, as_json)


def show(out: Printer, layout: str | None, socket: str | None, as_json: bool) -> int:
    """``fleet status``: the report, shown; the run's exit status (a failure is raised)."""
    with _without_pydantic_plugins():  # the layout's models are made as these import
        from claude_shepherd.fleet.resolve import resolve
    from claude_shepherd.supervisor.errors import ShepherdError

    try:
        report = resolve(out, layout, socket, verb="status").status()
    except ShepherdError as exc:
        if not as_json:
            raise
        # --json always prints JSON: a script reading it needs no second parser for errors.
        out.document_line({"error": str(exc), "exit_code": exc.exit_code})
        return exc.exit_code
    out.status(report, as_json)
    failure = report.failure()
    if (
        failure is not None
    ):  # after --json rows, the error's line goes to stderr only: a script reads one document
        raise failure
    return 0


@contextlib.contextmanager
def _without_pydantic_plugins() -> t.Iterator[None]:
    """No search of every installed package for pydantic plugins (importlib.metadata, about 9 ms) while
    the layout's models are made, as typer does while it makes its own; the environment is restored."""
    before = os.environ.get("PYDANTIC_DISABLE_PLUGINS")
    os.environ["PYDANTIC_DISABLE_PLUGINS"] = "1"
    try:
        yield
    finally:
        if before is None:
            del os.environ["PYDANTIC_DISABLE_PLUGINS"]
        else:
            os.environ["PYDANTIC_DISABLE_PLUGINS"] = before
