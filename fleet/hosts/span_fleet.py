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
import math
import os
import shlex
import sys
import time
import typing as t

from claude_shepherd.fleet import known
from claude_shepherd.fleet.handle import PAST, Agent, HostsReport, HostStatus, StatusReport
from claude_shepherd.fleet.hosts import LOCAL, answer
from claude_shepherd.fleet.hosts.part import STDIN
from claude_shepherd.fleet.hosts.span import Part, Span, keep, remember
from claude_shepherd.fleet.hosts.transport import HostError, Reply, SshHost, host_timeout
from claude_shepherd.fleet.layout import cents_share
from claude_shepherd.fleet.output import Printer, Say
from claude_shepherd.fleet.pane_status import PaneStatus
from claude_shepherd.fleet.reports import AttachReport, HostOutcome, LogsReport
from claude_shepherd.supervisor.errors import EXIT_NOT_RUNNING, ShepherdError, UsageError
from claude_shepherd.supervisor.printable import printable
from claude_shepherd.supervisor.tmux_names import NOT_RUNNING, UNKNOWN

SLACK = 30.0
"""Seconds a host gets beyond what the verb itself may take (a start's wait, a stop's grace)."""


class Envelope(t.NamedTuple):
    """What a host's ``fleet VERB --json`` said."""

    exit_code: int
    lines: list[str]
    error: str | None
    report: t.Any = None
    """Its report's document (see :mod:`claude_shepherd.fleet.reports`), when its verb returns one."""


def envelope(reply: Reply) -> Envelope:
    """The JSON object of a verb run with ``--json`` there, checked field by field."""
    data = reply.json()
    lines = data.get("lines") if isinstance(data, dict) else None
    code = data.get("exit_code") if isinstance(data, dict) else None
    if not isinstance(lines, list) or not isinstance(code, int) or isinstance(code, bool):
        raise HostError(f"{reply.host}: its fleet answered JSON of another shape; is it the same version?")
    error = data.get("error")
    report = data.get("report")
    return Envelope(
        code,
        [str(line) for line in lines],
        error if isinstance(error, str) else None,
        report if isinstance(report, dict) else None,
    )


def _heard(part: Part, reply: Reply, *, not_done: str) -> HostOutcome:
    """What *part*'s host said it did (its lines, its report) and the problem in one phrase, if any."""
    if not reply.reached:
        problem = f"{part.name} did not answer ({reply.problem})"
        return HostOutcome(part.name, (f"UNREACHABLE: {reply.problem}; {not_done}",), problem)
    try:
        answer = envelope(reply)
    except HostError as exc:
        return HostOutcome(part.name, (str(exc),), str(exc))
    if answer.exit_code:
        error = answer.error or f"exit status {answer.exit_code}"
        return HostOutcome(
            part.name, (*answer.lines, f"error: {error}"), f"{part.name}: {error}", answer.report
        )
    return HostOutcome(part.name, tuple(answer.lines), None, answer.report)


def _tell(say: Say, span: Span, part: Part, reply: Reply, *, not_done: str) -> str | None:
    """Say *reply*'s lines under its host; the problem in one phrase, None when it went well."""
    heard = _heard(part, reply, not_done=not_done)
    for line in heard.lines:
        say(f"{part.name:<{span.width}}  {line}")
    return heard.problem


def _hosts(
    verb: str,
    span: Span,
    heard: list[HostOutcome],
    after: t.Sequence[str] = (),
    then: AttachReport | None = None,
) -> HostsReport:
    """*verb*'s report across hosts: each host's lines under its name, then *after*."""
    said = [f"{h.host:<{span.width}}  {line}" for h in heard for line in h.lines]
    problems = [h.problem for h in heard if h.problem]
    return HostsReport([*said, *after], problems, tuple(heard), then, verb)


def _believed(reply: Reply) -> bool:
    """The host answered, with an envelope of ours (what it says it did may be believed)."""
    try:
        return reply.reached and envelope(reply) is not None
    except HostError:
        return False


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
        heard = [_heard(p, r, not_done=not_done) for p, r in zip(parts, replies)]
        wanted = layout.attach and attach and not self.out.machine
        return _hosts("start", span, heard, then=self._attach(span, None, wanted))

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
        heard = [_heard(p, r, not_done=not_done) for p, r in zip(parts, replies)]
        after = []
        if not labels:  # a host whose answer is believed has stopped its part; one never reached has none
            known.mark(
                span.layout.socket_name, span.layout.name, wanted=False
            )  # a person's stop: not back at boot
            answered = {p.name for p, r in zip(parts, replies) if _believed(r)}
            left = span.with_parts(p for p in span.parts if p.name not in answered and p.started)
            keep(left)
            if not left.parts:
                span.each(lambda part: part.host.disconnect(), parts)  # nothing of the fleet is left running
            elif any(h.problem for h in heard):
                after.append(f"`fleet forget {span.layout.name} --host HOST` forgets a host gone for good")
        return _hosts("stop", span, heard, after)

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
        return _hosts("restart", span, [_heard(p, r, not_done=not_done) for p, r in zip(parts, replies)])

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
            _tell(lines.append, span, p, r, not_done="its budgets may be unchanged")
            for p, r in zip(parts, replies)
        ]
        return HostsReport(lines, [p for p in problems if p], verb="budget")

    # ----------------------------------------------------------------------- status

    def status(self) -> StatusReport:
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
        from claude_shepherd.fleet.hosts.install import RECORD, fingerprint
        from claude_shepherd.supervisor import __version__

        span = self.span
        said: list[str] = []
        say = said.append
        digest = fingerprint()

        def checks(part: Part) -> tuple[Reply, float, Reply | None]:
            fleet = part.host.fleet_argv(["--version"])
            installed_at = (
                part.host.home if isinstance(part.host, SshHost) else None
            )  # what host add recorded
            record = shlex.quote(f"{installed_at}/{RECORD}") if installed_at else "/dev/null"
            probe = (
                f"date +%s.%N; {shlex.join(fleet)} 2>&1; command -v tmux >/dev/null && tmux -V || echo 'tmux: missing'; "
                f"cat {record} 2>/dev/null || echo"
            )
            warm = part.host.run(["true"])  # the connection first: the clock's reading is then one round trip
            if not warm.reached:
                return warm, time.time(), None
            before = time.time()
            reply = part.host.run(["sh", "-c", probe])
            middle = (before + time.time()) / 2
            if not reply.reached:
                return reply, middle, None
            args = ["doctor", STDIN, "--json", *(["--fix"] if fix else [])]
            return reply, middle, part.fleet(args, host_timeout() + SLACK)

        problems: list[str | None] = []
        for part, (probe, when, own) in zip(span.parts, span.each(checks)):
            pad = f"{part.name:<{span.width}}  "
            if not probe.reached:
                say(f"{pad}unreachable: {probe.problem}; nothing checked or fixed there")
                problems.append(f"{part.name} unreachable")
                continue
            lines = probe.stdout.strip().splitlines()
            clock = _seconds(lines[0]) if lines else None
            version = _word(lines[1].removeprefix("fleet ")) if len(lines) > 1 else ""
            tmux = _word(lines[2]) if len(lines) > 2 else ""
            installed = _installed(lines[3] if len(lines) > 3 else "")
            found: list[str] = []
            if version != __version__:
                found.append(
                    f"claude-shepherd {version or 'is not installed'} there, {__version__} here; "
                    f"run `fleet host add {part.name}`"
                )
            elif part.name != LOCAL and installed is not None and installed != digest:
                found.append(
                    f"claude-shepherd {version} there is other code than here (installed from another tree); "
                    f"run `fleet host add {part.name}`"
                )
            if "missing" in tmux or not tmux.startswith("tmux"):
                found.append("tmux is missing there; install it")
            if clock is not None and abs(clock - when) > SKEW_LIMIT:
                found.append(f"its clock is {clock - when:+.1f} s off this machine's; run NTP on both")
            say(f"{pad}reachable ({probe.seconds * 1000:.0f} ms), claude-shepherd {version or '?'}, {tmux or 'no tmux'}"
                + (f", clock {clock - when:+.1f} s" if clock is not None else ""))  # fmt: skip
            for line in found:
                say(f"{pad}{line}")
            problems.append(f"{part.name}: {'; '.join(found)}" if found else None)
            if own is not None:
                problems.append(_tell(say, span, part, own, not_done="its doctor did not run"))
        return HostsReport(said, [p for p in problems if p])

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


# --------------------------------------------------------------------------- status


def gather(
    span: Span, parts: t.Sequence[Part] | None = None, timeout: float | None = None
) -> list[HostStatus]:
    """Every host's rows (of *parts*, else all) at once; an unreachable host's agents as ``unknown`` rows."""
    chosen = list(span.parts if parts is None else parts)
    replies = span.fleet(["status", STDIN, "--json"], host_timeout() if timeout is None else timeout, chosen)
    return [_host_status(part, reply) for part, reply in zip(chosen, replies)]


def _host_status(part: Part, reply: Reply) -> HostStatus:
    def placeholders(state: str) -> list[PaneStatus]:
        name = part.document["name"]
        return [_placeholder(name, window, label, state) for window, label in part.labels]

    if not reply.reached:
        return HostStatus(part, placeholders(UNKNOWN), f"did not answer: {reply.problem}", reply.seconds)
    try:
        data = reply.json()
    except HostError as exc:
        return HostStatus(part, placeholders(UNKNOWN), str(exc), reply.seconds)
    if isinstance(data, dict):
        error = str(data.get("error") or "its fleet failed")
        state = NOT_RUNNING if data.get("exit_code") == EXIT_NOT_RUNNING else UNKNOWN
        return HostStatus(part, placeholders(state), error, reply.seconds)
    if not isinstance(data, list):
        return HostStatus(
            part, placeholders(UNKNOWN), "its fleet answered JSON of another shape", reply.seconds
        )
    rows = [PaneStatus.from_json(row) for row in data if isinstance(row, dict)]
    return HostStatus(part, rows, None, reply.seconds)


def _placeholder(session: str, window: str, label: str, state: str) -> PaneStatus:
    return PaneStatus(
        session=session, window=window, label=label, pane="—", pane_id=f"{session}:{window}:{label}",
        state=state, supervisor_pid=None, supervisor_alive=False, claude_pid=None, session_dir=None,
        skill=None, phase=None, lifecycle=None, overflowed=None, context_usage=None, cost_usd=None,
        restarts=None, started_at=None, agent=True,
    )  # fmt: skip


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


# --------------------------------------------------------------------------- doctor

SKEW_LIMIT = 5.0
"""Seconds two hosts' clocks may differ before doctor says so (uptimes and cooldowns compare them)."""


def _installed(text: str) -> str | None:
    """The digest ``fleet host add`` recorded on a host (None when it recorded none)."""
    try:
        record = answer.parse(text)
    except ValueError:  # not JSON, or not within bounds
        return None
    digest = record.get("digest") if isinstance(record, dict) else None
    return digest if isinstance(digest, str) else None


def _seconds(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if 0 < value < math.inf else None


MAX_WORD = 64
"""Characters of a version or a tmux version a host says that are shown (it may say megabytes)."""


def _word(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MAX_WORD else text[: MAX_WORD - 1] + "…"
