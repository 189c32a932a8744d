"""What a host's ``fleet VERB - --json`` said: its envelope, checked field by field, and what the host says
it did, each line under the host's name, its problem in one phrase.

A host that did not answer, or answered another shape, is a problem of that host alone: the verb goes
on with the others.
"""

from __future__ import annotations

import typing as t

from claude_shepherd.fleet.handle import HostsReport
from claude_shepherd.fleet.hosts.span import Part, Span
from claude_shepherd.fleet.hosts.transport import HostError, Reply
from claude_shepherd.fleet.output import Say
from claude_shepherd.fleet.reports import AttachReport, HostOutcome


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


def outcome_of(part: Part, reply: Reply, *, not_done: str) -> HostOutcome:
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


def tell(say: Say, span: Span, part: Part, reply: Reply, *, not_done: str) -> str | None:
    """Say *reply*'s lines under its host; the problem in one phrase, None when it went well."""
    heard = outcome_of(part, reply, not_done=not_done)
    for line in heard.lines:
        say(f"{part.name:<{span.width}}  {line}")
    return heard.problem


def hosts_report(
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


def believed(reply: Reply) -> bool:
    """The host answered, with an envelope of ours (what it says it did may be believed)."""
    try:
        return reply.reached and envelope(reply) is not None
    except HostError:
        return False
