"""``fleet status`` in one process, in parts: run by profile_status.py in a fleet's project folder.

    python bench/status_parts.py status LAYOUT --socket SOCKET OUT

Prints one JSON object of CPU seconds (user + system, waited-for children
included): importing the CLI, the first call (with the verb's lazy imports),
the call again (everything imported). Given a file OUT (not ``-``), also the
work in sections, each timed alone (wall seconds, the best of 5), and writes
a cProfile of one more call to OUT.
"""

from __future__ import annotations

import io
import json
import resource
import sys
import time
import typing as t


def cpu() -> float:
    own, waited = (resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + waited.ru_utime + waited.ru_stime


began = cpu()
from claude_shepherd.fleet.cli import run  # noqa: E402 (its import is what is timed)

times: dict[str, t.Any] = {"cli_import": cpu() - began}
argv, out = sys.argv[1:-1], sys.argv[-1]


def once() -> None:
    shown, sys.stdout = sys.stdout, io.StringIO()
    try:
        status = run(list(argv))  # not main(): a read-only verb ends its process there (os._exit)
    finally:
        sys.stdout = shown
    if status:
        raise SystemExit(status)


def best(work: t.Callable[[t.Any], object], prepare: t.Callable[[], t.Any] = lambda: None) -> float:
    """The least wall seconds of 5 runs of *work* (given what *prepare* made, untimed)."""
    samples = []
    for _ in range(5):
        ready = prepare()
        began = time.perf_counter()
        work(ready)
        samples.append(time.perf_counter() - began)
    return min(samples)


def sections(layout: str, socket: str) -> dict[str, float]:
    """The work of ``fleet status``, once imported, in the steps commands/status.py takes."""
    from claude_shepherd.fleet import procs, status, status_table, target
    from claude_shepherd.fleet.output import Printer
    from claude_shepherd.fleet.resolve import resolve
    from claude_shepherd.fleet.tmux import list_panes

    where = target.resolve(layout, socket)
    server = where.server()
    panes = list_panes(server)
    rows = status.pane_rows(server.socket_file(), panes, procs.snapshot(with_env=False))

    def render(_: object) -> None:
        shown, sys.stdout = sys.stdout, io.StringIO()
        try:
            status_table.render(rows)
        finally:
            sys.stdout = shown

    return {
        "resolve the fleet (reads the layout file once)": best(
            lambda _: resolve(Printer(), layout, socket, verb="status")
        ),
        "tmux list-sessions (running_sessions)": best(lambda _: where.running_sessions(server)),
        "tmux display-message (socket_file)": best(lambda _: server.socket_file()),
        "tmux list-panes (list_panes)": best(lambda _: list_panes(server)),
        "process table: every process of the user": best(lambda _: procs.snapshot(with_env=False)),
        "rows: /proc environ+cwd, session state": best(
            lambda table: status.pane_rows(None, panes, table), lambda: procs.snapshot(with_env=False)
        ),
        "the table (rich)": best(render),
    }


began = cpu()
once()
times["first"] = cpu() - began
began = cpu()
once()
times["warm"] = cpu() - began
if out != "-":
    import cProfile

    times["sections"] = sections(argv[1], argv[3])
    cProfile.run("once()", out)
print(json.dumps(times))
