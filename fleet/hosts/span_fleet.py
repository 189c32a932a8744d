"""A fleet across hosts: every host's own ``fleet`` asked at once, each line under its host's name, a
host that does not answer reported as such (its agents ``unknown``, never ``stopped``) while the others
go on.

:class:`SpanFleet` is the :class:`~claude_shepherd.fleet.handle.Fleet` of a
layout whose windows name hosts: each host runs its part as its own
:class:`~claude_shepherd.fleet.local.LocalFleet` (``fleet VERB - --json``),
and answers with the JSON envelope of :mod:`claude_shepherd.fleet.output`.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import sys
import typing as t

from claude_shepherd.fleet import known
from claude_shepherd.fleet.handle import PAST, Agent, HostsReport, StatusReport
from claude_shepherd.fleet.hosts import LOCAL
from claude_shepherd.fleet.hosts.envelope import believed, envelope, hosts_report, outcome_of, tell
from claude_shepherd.fleet.hosts.part import STDIN
from claude_shepherd.fleet.hosts.span import Part, Span, keep, remember
from claude_shepherd.fleet.hosts.transport import SLACK, Reply, host_timeout
from claude_shepherd.fleet.layout import cents_share
from claude_shepherd.fleet.output import Printer, Say
from claude_shepherd.fleet.reports import AttachReport, LogsReport
from claude_shepherd.supervisor.errors import ShepherdError, UsageError
from claude_shepherd.supervisor.printable import printable


def _has_window(part: Part, window: str) -> bool:
    windows = part.document.get("windows") if isinstance(part.document, dict) else None
    return isinstance(windows, list) and any(isinstance(w, dict) and window in w for w in windows)


def _panes(part: Part) -> int:
    return len(part.labels)


class SpanFleet:
    """The fleet of *span*, as LAYOUT *layout_arg* named it; what it says goes to *out*."""

    def __init__(self, out: Printer, span: Span, layout_arg: str | None = None) -> None:
        self.out = out
        self.span = span
        self.layout_arg = layout_arg

    def _say(self, line: str = "") -> None:
        self.out.say(line)

    # ----------------------------------------------------------------------- start, stop, restart

    def start(self, *, wait: float | None, attach: bool) -> HostsReport:
        """Each host starts its own part; the span is recorded for the verbs that name no LAYOUT."""
        from claude_shepherd.fleet import readiness

        say, layout = self._say, self.span.layout
        span = Span.of(layout)
        parts = span.current
        say(
            f"Starting fleet {layout.name!r} (socket {layout.socket_name}) on {len(parts)} host{'s' * (len(parts) != 1)}: "
            + ", ".join(f"{p.name} ({_panes(p)} pane{'s' * (_panes(p) != 1)})" for p in parts)
        )
        for part in span.parts:
            if part.retired:
                say(
                    f"{part.name:<{span.width}}  no longer in the layout: its agents run on until "
                    f"`fleet stop {self.layout_arg or layout.name}` stops them"
                )
        args = ["start", STDIN, "--json", "--no-attach"]
        if wait is not None:
            args += ["--wait", f"{wait:g}"]
        budget = host_timeout() + (readiness.default_wait() if wait is None else wait) + SLACK
        replies = span.fleet(args, budget, parts)
        reached = {p.name for p, r in zip(parts, replies) if r.ran}  # what a start may have run, it records
        remember(
            span.with_parts(
                dataclasses.replace(p, started=p.started or p.name in reached) for p in span.parts
            )
        )
        known.remember(layout)
        not_done = "its agents may not have started"
        heard = [outcome_of(p, r, not_done=not_done) for p, r in zip(parts, replies)]
        wanted = layout.attach and attach and not self.out.machine
        return hosts_report("start", span, heard, then=self._attach(span, None, wanted))

    def drain(self, grace: float, deadline: float, dehydrate: bool) -> t.NoReturn:
        raise UsageError(
            "fleet drain drains this machine's fleets; on each host of a fleet across hosts run "
            "`fleet drain NAME --here` there"
        )

    def stop(self, grace: float, labels: t.Sequence[str] | None) -> HostsReport:
        """Each host stops its own part (or the panes labelled *labels*)."""
        say, span = self._say, self.span
        chosen = span.where(labels) if labels else {p.name: [] for p in span.parts}
        parts = [p for p in span.parts if p.name in chosen]
        say(f"Stopping fleet {span.layout.name!r} on {', '.join(p.name for p in parts)}...")

        def one(part: Part) -> Reply:
            args = ["stop", STDIN, "--json", "--grace", f"{grace:g}"]
            for label in chosen[part.name]:
                args += ["--pane", label]
            return part.fleet(args, host_timeout() + grace + SLACK)

        replies = span.each(one, parts)
        not_done = "its agents may still run (`fleet status` shows them once it answers)"
        heard = [outcome_of(p, r, not_done=not_done) for p, r in zip(parts, replies)]
        after = []
        if not labels:  # a host whose answer is believed has stopped its part; one never reached has none
            known.mark(
                span.layout.socket_name, span.layout.name, wanted=False
            )  # a person's stop: not back at boot
            answered = {p.name for p, r in zip(parts, replies) if believed(r)}
            left = span.with_parts(p for p in span.parts if p.name not in answered and p.started)
            keep(left)
            if not left.parts:
                span.each(lambda part: part.host.disconnect(), parts)  # nothing of the fleet is left running
            elif any(h.problem for h in heard):
                after.append(f"`fleet forget {span.layout.name} --host HOST` forgets a host gone for good")
        return hosts_report("stop", span, heard, after)

    def restart(self, grace: float, labels: t.Sequence[str] | None, wait: float | None) -> HostsReport:
        """Each host restarts its own part's agents (or those labelled *labels*), resuming their conversations."""
        from claude_shepherd.fleet import readiness

        span = self.span
        chosen = span.where(labels) if labels else {p.name: [] for p in span.current}
        parts = [p for p in span.current if p.name in chosen]

        def one(part: Part) -> Reply:
            args = ["restart", STDIN, "--json", "--grace", f"{grace:g}"]
            if wait is not None:
                args += ["--wait", f"{wait:g}"]
            for label in chosen[part.name]:
                args += ["--pane", label]
            budget = host_timeout() + grace + (readiness.default_wait() if wait is None else wait) + SLACK
            return part.fleet(args, budget)

        replies = span.each(one, parts)
        not_done = "what it was asked may still be going on there"
        return hosts_report(
            "restart", span, [outcome_of(p, r, not_done=not_done) for p, r in zip(parts, replies)]
        )

    # ----------------------------------------------------------------------- budgets

    def budget(
        self,
        window: str | None,
        pane: str | None,
        set_usd: float | None,
        add_usd: float | None,
        per: str | None,
        remove: bool = False,
    ) -> HostsReport:
        """Each host holds its part's budgets against the spend of its own agents (no host sees another's
        ledgers): a pane's or a window's budget is its host's alone, and of the fleet's budget each host
        holds its share by its labelled panes (:meth:`Layout.budget_share`). So a change goes to the
        host of the pane or window, or as its share to every host for the fleet's budget; each says its
        own budgets and spend, and resumes its own paused agents."""
        span = self.span
        parts = span.current
        if pane is not None:
            hosts = span.where([pane])
            parts = [p for p in parts if p.name in hosts]
            pane = pane.rpartition("/")[2]
        elif window is not None:
            parts = [p for p in parts if any(w == window for w, _ in p.labels) or _has_window(p, window)]
            if not parts:
                raise UsageError(f"no window {window!r} in fleet {span.layout.name!r}")
        whole = window is None and pane is None  # the fleet's: each host holds its share
        total = sum(len(p.labels) for p in span.current) or 1

        def one(part: Part) -> Reply:
            share = len(part.labels) / total if whole else 1.0
            args = ["budget", STDIN, "--json"]
            args += ["--window", window] if window is not None else []
            args += ["--pane", pane] if pane is not None else []
            args += ["--set", f"{cents_share(set_usd, share):.2f}"] if set_usd is not None else []
            args += ["--add", f"{cents_share(add_usd, share):.2f}"] if add_usd is not None else []
            args += ["--per", per] if per is not None else []
            args += ["--remove"] if remove else []
            return part.fleet(args, host_timeout() + SLACK)

        if whole:
            parts = [p for p in parts if p.labels]
        lines: list[str] = []
        replies = span.each(one, parts)
        problems = [
            tell(lines.append, span, p, r, not_done="its budgets may be unchanged")
            for p, r in zip(parts, replies)
        ]
        return HostsReport(lines, [p for p in problems if p], verb="budget")

    # ----------------------------------------------------------------------- status

    def status(self) -> StatusReport:
        from claude_shepherd.fleet.hosts.span_status import gather

        span = self.span
        hosts = gather(span)
        return StatusReport(
            f"Fleet {span.layout.name!r} (socket {span.layout.socket_name}) on {len(hosts)} host{'s' * (len(hosts) != 1)}",
            [row for h in hosts for row in h.rows],
            hosts,
            span.width,
            span.layout.name,
            span.layout.socket_name,
        )

    # ----------------------------------------------------------------------- one pane: logs, attach

    def logs(self, label: str, lines: int, follow: bool) -> LogsReport:
        """The pane's host says its log and screen (``-f`` keeps the channel open, each line said as it
        comes), and each line it says is shown here as a local pane's is (:meth:`Printer.say`): a host is
        no more trusted with the terminal than an agent, so no escape, C1 control or bidi mark of its
        output reaches it."""
        span = self.span
        part, bare = _one(span, label)
        args = [
            "logs",
            span.layout.name,
            "--here",
            "--socket",
            span.layout.socket_name,
            "--pane",
            bare,
            "-n",
            str(lines),
        ]
        if follow:
            args.append("-f")
        said: list[str] = []
        status = _shown(
            part.host.terminal(part.host.fleet_argv(args), tty=False), self._say if follow else said.append
        )
        return LogsReport(f"{part.name}/{bare}", said=tuple(said), status=status)

    def attach(self, label: str | None) -> AttachReport:
        return self._attach(self.span, label, True)

    def _attach(self, span: Span, label: str | None, wanted: bool) -> AttachReport:
        """How to attach this terminal to the pane's host's fleet (``ssh -t`` for another host), or, not
        *wanted* or without a terminal, what the person types to."""
        if label is not None:
            part, bare = _one(span, label)
        else:
            part = span.part(LOCAL) or span.parts[0]
            bare = None
        socket, session = span.layout.socket_name, span.layout.name
        if not wanted or not (os.isatty(0) and os.isatty(1)):
            return AttachReport(
                socket, session, label, hint=f"Attach with: {shlex.join(attach_hint(span, label))}"
            )
        args = ["attach", session, "--here", "--socket", socket]
        if bare:
            args += ["--pane", bare]
        argv = part.host.terminal(part.host.fleet_argv(args))
        return AttachReport(socket, session, label, argv=tuple(argv), takes_terminal=True)

    # ----------------------------------------------------------------------- doctor

    def doctor(self, fix: bool) -> HostsReport:
        """Each host: reachable, same version, tmux, clock; then its own doctor (hooks, orphans, bindings)."""
        from claude_shepherd.fleet.hosts.span_doctor import check_hosts

        return check_hosts(self.span, fix)

    # ----------------------------------------------------------------------- one agent, for the watch

    def _part(self, row: Agent) -> Part:
        part = self.span.part(row.host)
        assert part is not None  # resolved by the row's host (resolve.of_row)
        return part

    def attach_command(self, row: Agent, env: t.Mapping[str, str] | None = None) -> tuple[list[str], bool]:
        """``ssh -t`` to the agent's host's ``fleet attach``."""
        host = self._part(row).host
        return host.terminal(host.fleet_argv(_on_host(row, "attach"))), True

    def stop_agent(self, row: Agent, grace: float, *, told: Say, cancelled: t.Callable[[], bool]) -> str:
        return self._agent(row, "stop", grace)

    def restart_agent(self, row: Agent, grace: float, *, told: Say, cancelled: t.Callable[[], bool]) -> str:
        return self._agent(row, "restart", grace)

    def _agent(self, row: Agent, verb: str, grace: float) -> str:
        """``fleet stop|restart --pane`` on the agent's own host (which holds its own fleet's lock)."""
        reply = self._part(row).fleet(
            [*_on_host(row, verb, "--json", "--grace", f"{grace:g}")], host_timeout() + grace + SLACK
        )
        if not reply.reached:
            return f"{row.name} was not {PAST[verb]}: {row.host} did not answer ({reply.problem})"
        answer = envelope(reply)
        if answer.exit_code:
            return f"{row.name} was not {PAST[verb]}: {answer.error or f'exit status {answer.exit_code}'}"
        return f"{row.name}: {PAST[verb]} on {row.host}"

    def log_lines(self, row: Agent, count: int) -> list[str]:
        reply = self._part(row).fleet(_on_host(row, "logs", "-n", str(count)))
        if not reply.reached:
            raise ShepherdError(f"{row.where}: {row.host} did not answer ({reply.problem})")
        return [printable(line) for line in reply.stdout.splitlines()]


def _on_host(row: Agent, verb: str, *extra: str) -> list[str]:
    """``fleet VERB`` of *row*'s pane, as its host's fleet takes it."""
    return [verb, row.fleet, "--here", "--socket", row.socket, "--pane", row.status.label, *extra]


# --------------------------------------------------------------------------- one pane


def _one(span: Span, label: str) -> tuple[Part, str]:
    ((host, (bare, *_)),) = span.where([label]).items()
    part = span.part(host)
    assert part is not None
    return part, bare


MAX_LINE = 64 * 1024
"""Bytes of one line a host says shown at most as one line; a longer one is shown in pieces."""


def _shown(argv: list[str], say: Say) -> int:
    """Run *argv*, showing each line it says on stdout and stderr as *say* shows ours; its status."""
    import subprocess
    import threading

    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None

    def each_line(pipe: t.IO[bytes], show: t.Callable[[str], None]) -> None:
        for raw in iter(lambda: pipe.readline(MAX_LINE), b""):
            show(raw.decode(errors="replace").removesuffix("\n").removesuffix("\r"))

    errors = threading.Thread(target=each_line, args=(proc.stderr, _say_on_stderr), daemon=True)
    errors.start()
    try:
        each_line(proc.stdout, say)
    finally:
        if proc.poll() is None:
            proc.terminate()  # interrupted here: the host's logs -f ends with its channel
        status = proc.wait()
        errors.join(5)
    return status


def _say_on_stderr(line: str) -> None:
    sys.stderr.write(printable(line) + "\n")
    sys.stderr.flush()


def attach_hint(span: Span, label: str | None) -> list[str]:
    """What a person types in a terminal to attach: this ``fleet`` by the fleet's name (remembered
    here), never the ssh command line it would run, which needs the terminal the hint lacks."""
    return ["fleet", "attach", span.layout.name, *(["--pane", label] if label else [])]
