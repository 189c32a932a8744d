"""What ``fleet start`` / ``restart`` say before starting agents into a nearly spent usage window.

The agents themselves wait (each claude-run holds its launch while a window of its credential is at
the wait threshold: supervisor.claude_run.usage_wait); this says so on the screen of the person who
started them, with the reset time and how to start anyway.
"""

from __future__ import annotations

import os
import typing as t

from claude_shepherd.supervisor.session import usage_windows as uw
from claude_shepherd.supervisor.session.paths import sessions_root

if t.TYPE_CHECKING:
    from claude_shepherd.fleet.layout import Layout


def notice(spec: Layout, env: t.Mapping[str, str] | None = None) -> list[str]:
    """A line per window of this machine's credential at the wait threshold, for the layout's roots."""
    env = os.environ if env is None else env
    if uw.ignored(env):
        return []
    credential = uw.credential_of(env)
    percent = uw.wait_percent(env)
    lines: list[str] = []
    roots = {sessions_root(cwd=str(w.root), env=env) for w in spec.windows if w.host is None}
    for root in sorted(roots):
        record = uw.read_credential(root, credential) or {}
        windows = record.get("windows")
        worst = uw.closed(windows if isinstance(windows, dict) else {}, percent)
        if worst is None:
            continue
        name, used, until = worst
        line = (
            f"Usage window {name} of {uw.shown_credential(credential)} is {used:g} % used (at most {percent:g} % "
            f"before waiting): the agents wait until it reopens at {uw.clock(until)}, then start one at a time "
            f"(`claude-run --ignore-usage-limits` as the panes' command in {spec.source} starts them anyway)"
        )
        if line not in lines:
            lines.append(line)
    return lines
