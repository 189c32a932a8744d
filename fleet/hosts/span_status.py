"""``fleet status`` of a fleet across hosts: every host's rows at once; a host that does not answer has
its agents shown ``unknown`` (never ``stopped``: they may run on), each row of another host believed
field by field (:meth:`~claude_shepherd.fleet.pane_status.PaneStatus.from_json`).
"""

from __future__ import annotations

import typing as t

from claude_shepherd.fleet.handle import HostStatus
from claude_shepherd.fleet.hosts.part import STDIN
from claude_shepherd.fleet.hosts.span import Part, Span
from claude_shepherd.fleet.hosts.transport import HostError, Reply, host_timeout
from claude_shepherd.fleet.pane_status import PaneStatus
from claude_shepherd.supervisor.errors import EXIT_NOT_RUNNING
from claude_shepherd.supervisor.tmux_names import NOT_RUNNING, UNKNOWN


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
