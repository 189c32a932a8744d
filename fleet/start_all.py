"""``fleet start --all``: every fleet started here that is meant to run, each started as ``fleet start``
starts it; what a person stopped is left stopped.

A fleet is meant to run from its start until a person's ``fleet stop``
(:attr:`claude_shepherd.fleet.known.Known.wanted`): a crash, a kill or a power
loss keeps it, so this is what a boot runs (``fleet boot enable``). Each fleet
is started through the one fleet handle, so its panes resume their own
conversations, a running fleet is only reconciled (no agent twice, whatever
survived) and usage windows are respected. A host that does not answer is
asked again, with a doubling pause, for up to ``$FLEET_START_ALL_RETRY``
seconds (a boot's network may come up late); one that still does not is
reported, never taken for stopped. Each run is recorded
(:func:`last_runs`) for ``fleet boot status``.
"""

from __future__ import annotations

import json
import os
import time
import typing as t
from dataclasses import dataclass
from pathlib import Path

from claude_shepherd.fleet import known
from claude_shepherd.fleet.output import FleetFailure, Printer, Say
from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.session.private_dir import private_dir
from claude_shepherd.supervisor.session.roots import registry_dir
from claude_shepherd.supervisor.session.store import write_atomic

RETRY_ENV = "FLEET_START_ALL_RETRY"
RETRY_DEFAULT = 120.0
"""Seconds a fleet across hosts is asked again while a host does not answer."""
FIRST_PAUSE = 2.0
KEEP_RUNS = 10
"""Runs kept in the record ``fleet boot status`` reads."""
USAGE_WINDOW = "Usage window "
"""How a start says the agents wait for a usage window's reset (:func:`claude_shepherd.fleet.usage.notice`)."""


@dataclass(frozen=True)
class FleetLine:
    """One fleet of a ``start --all``: what became of it, in one line."""

    name: str
    socket: str
    outcome: str
    """``running``, ``waiting`` (on a usage window), ``left stopped`` or ``failed``."""
    detail: str

    @property
    def ok(self) -> bool:
        return self.outcome != "failed"

    def line(self) -> str:
        return f"{self.name} (socket {self.socket}): {self.outcome}: {self.detail}"


@dataclass(frozen=True)
class AllReport:
    """``fleet start --all``: one line per fleet started here."""

    fleets: tuple[FleetLine, ...]
    verb: str = "start"

    def lines(self) -> list[str]:
        if not self.fleets:
            return ["No fleet has been started here; nothing to start."]
        return [f.line() for f in self.fleets]

    def failure(self) -> ShepherdError | None:
        failed = [f.name for f in self.fleets if not f.ok]
        if not failed:
            return None
        return FleetFailure(
            f"{len(failed)} fleet(s) not started: {', '.join(failed)} (see above); fix the cause and run "
            "`fleet start --all` again (it starts only what is not running)"
        )

    def as_json(self) -> dict[str, object]:
        return {"verb": self.verb, "fleets": [f.__dict__ for f in self.fleets]}


def start_all(say: Say, wait: float | None, env: t.Mapping[str, str] | None = None) -> AllReport:
    """Start every fleet meant to run, one after another, saying each one's line as it is known."""
    env = os.environ if env is None else env
    began = time.time()
    lines: list[FleetLine] = []
    for record in known.every():
        if record.wanted:
            line = _start_one(record, wait, _retry_budget(env), say)
        else:
            line = FleetLine(record.name, record.socket, "left stopped",
                             f"a person stopped it; `fleet start {record.name}` starts it")  # fmt: skip
        say(line.line())
        lines.append(line)
    report = AllReport(tuple(lines))
    if not lines:
        say(report.lines()[0])
    _keep_run(began, report, env)
    return report


def _retry_budget(env: t.Mapping[str, str]) -> float:
    try:
        return max(0.0, float(env.get(RETRY_ENV, "") or RETRY_DEFAULT))
    except ValueError:
        return RETRY_DEFAULT


def _start_one(record: known.Known, wait: float | None, budget: float, say: Say) -> FleetLine:
    """Start *record*'s fleet from the layout file it was started from; a host that did not answer is
    asked again (the start reconciles what already runs) until *budget* seconds have gone."""
    from claude_shepherd.fleet.handle import HostsReport
    from claude_shepherd.fleet.resolve import resolve

    if not record.digest:  # started by an earlier version, or drained before one started it here
        return FleetLine(record.name, record.socket, "failed",
                         f"nothing says which text of its layout file {record.layout} last ran; read it, then "
                         f"start it yourself once: fleet start {record.name}")  # fmt: skip
    deadline = time.monotonic() + budget
    pause = FIRST_PAUSE
    while True:
        quiet = Printer().use_json(True)  # its lines are summed up in one
        try:
            # Held to the text that last ran, checked on the bytes that are then parsed and run: no person
            # is there to see a layout an agent may have written.
            handle = resolve(
                quiet, str(record.layout), record.socket, verb="start", expect_digest=record.digest
            )
            report = handle.start(wait=wait, attach=False)
        except ShepherdError as exc:
            return FleetLine(record.name, record.socket, "failed", str(exc))
        if not isinstance(report, HostsReport):
            return _local_line(record, report, quiet.said)
        silent = [p for p in report.problems if "did not answer" in p]
        if not silent or time.monotonic() + pause > deadline:
            return _span_line(record, report, silent)
        say(f"{record.name} (socket {record.socket}): {'; '.join(silent)}; asking again in {pause:g}s")
        time.sleep(pause)
        pause *= 2


def _local_line(record: known.Known, report: t.Any, said: list[str]) -> FleetLine:
    failure = report.failure()
    running = sum(1 for p in report.panes if p.running or p.action == "running")
    resumed = sum(1 for p in report.panes if p.running)
    if failure is None:
        detail = f"{running} agent(s) running" + (
            f", {resumed} started again" if resumed else ", none started"
        )
        return FleetLine(record.name, record.socket, "running", detail)
    if any(line.startswith(USAGE_WINDOW) for line in said) and not report.left_alone:
        waiting = len(report.not_running)
        return FleetLine(record.name, record.socket, "waiting",
                         f"{running} agent(s) running, {waiting} waiting for a usage window to reopen")  # fmt: skip
    return FleetLine(record.name, record.socket, "failed", str(failure))


def _span_line(record: known.Known, report: t.Any, silent: list[str]) -> FleetLine:
    failure = report.failure()
    if failure is None:
        return FleetLine(record.name, record.socket, "running", f"started on {len(report.hosts)} host(s)")
    tried = " (asked again until the retry ran out; `fleet start --all` asks again)" if silent else ""
    return FleetLine(record.name, record.socket, "failed", f"{'; '.join(report.problems)}{tried}")


# --------------------------------------------------------------------------- the record of runs


def runs_path(env: t.Mapping[str, str] | None = None) -> str:
    return os.path.join(registry_dir(os.environ if env is None else env), "start-all.json")


def last_runs(env: t.Mapping[str, str] | None = None) -> list[dict[str, t.Any]]:
    """The recent runs of ``fleet start --all``, newest last (an unreadable record: none)."""
    try:
        with open(runs_path(env), "rb") as handle:
            runs = json.loads(handle.read(256 * 1024))
    except (OSError, ValueError):
        return []
    return [r for r in runs if isinstance(r, dict)] if isinstance(runs, list) else []


def _keep_run(began: float, report: AllReport, env: t.Mapping[str, str]) -> None:
    path = runs_path(env)
    try:
        private_dir(os.path.dirname(path), within=registry_dir(env))
        run = {"at": began, "pid": os.getpid(), "lines": report.lines(),
               "ok": report.failure() is None}  # fmt: skip
        write_atomic(Path(path), json.dumps([*last_runs(env), run][-KEEP_RUNS:]))
    except (OSError, ShepherdError):
        pass  # the record is for `fleet boot status`: a start is not failed for it
