"""What ``fleet start`` / ``restart`` say before starting agents into a nearly spent usage window.

The agents themselves wait (each claude-run holds its launch while a window of its credential is at
the wait threshold: supervisor.claude_run.usage_wait); this says so on the screen of the person who
started them, with the reset time and how to start anyway.
"""

from __future__ import annotations

import os
import time
import typing as t

from claude_shepherd.fleet.target import load
from claude_shepherd.supervisor.session import usage_windows as uw
from claude_shepherd.supervisor.session.credentials import credential_of, shown_credential
from claude_shepherd.supervisor.session.paths import sessions_root
from claude_shepherd.supervisor.session.usage_records import moment

if t.TYPE_CHECKING:
    from pathlib import Path

    from claude_shepherd.fleet.layout import Layout


def notice(spec: Layout, env: t.Mapping[str, str] | None = None) -> list[str]:
    """A line per window of this machine's credential at the wait threshold, for the layout's roots."""
    env = os.environ if env is None else env
    if uw.ignored(env):
        return []
    credential = credential_of(env)
    percent = uw.wait_percent(env)
    lines: list[str] = []
    roots = {sessions_root(cwd=str(w.root), env=env) for w in spec.windows if w.host is None}
    for root in sorted(roots):
        record = uw.read_credential(root, credential)
        worst = uw.closed(record["windows"] if record else {}, percent)
        if worst is None:
            continue
        name, used, until = worst
        line = (
            f"Usage window {name} of {shown_credential(credential)} is {used:g} % used (at most {percent:g} % "
            f"before waiting): the agents wait until it reopens at {uw.clock(until)}, then start one at a time "
            f"(`claude-run --ignore-usage-limits` as the panes' command in {spec.source} starts them anyway)"
        )
        if line not in lines:
            lines.append(line)
    return lines


def roots_of(layout_arg: str | None) -> list[Path]:
    """The sessions roots whose usage records ``fleet usage`` reads: the layout's (its windows on this
    machine), else the current directory's."""
    if layout_arg is None:
        return [sessions_root()]
    spec = load(layout_arg)
    return sorted({sessions_root(cwd=str(w.root)) for w in spec.windows if w.host is None})


def readings(roots: t.Sequence[Path], now: float | None = None) -> list[str]:
    """A line per credential recorded under *roots*: its windows (a reading past its reset says so) and
    the agents a usage limit holds."""
    now = time.time() if now is None else now
    lines: list[str] = []
    for root in roots:
        for record in uw.read_credentials(root):
            credential = record["credential"]
            shown = []
            for name, window in sorted(record["windows"].items()):
                used, resets = window.get("used_percentage"), moment(window.get("resets_at"))
                if not isinstance(used, (int, float)) or resets is None:
                    continue
                when = "resets" if resets > now else "reset at"
                shown.append(f"{name} {used:g}% ({when} {uw.clock(resets, now)})")
            held = [
                a for a in uw.read_agents(root) if a.get("credential") == credential and uw.limited_of(a, now)
            ]
            line = f"{shown_credential(credential)}: {', '.join(shown) or 'no window'}"
            if held:
                line += f"; holds {', '.join(str(a.get('agent')) for a in held)}"
            lines.append(line)
    return lines


def clear(roots: t.Sequence[Path], credential: str) -> tuple[list[str], int]:
    """Forget *credential*'s reading (``all``: every one) under *roots*, with the ``limited`` marks of
    its agents and its resume slots: the credentials cleared (as shown), and how many agents it held.

    A claude-run waiting for that window looks again within
    :data:`~claude_shepherd.supervisor.claude_run.usage_wait.LOOK_EVERY` seconds and goes on; an
    interactive Claude waiting out the limit by itself goes on when Claude does."""
    home = os.path.expanduser("~")
    cleared: list[str] = []
    held = 0
    for root in roots:
        names = [
            record["credential"]
            for record in uw.read_credentials(root)
            if credential in ("all", record["credential"], shown_credential(record["credential"], home))
        ]
        for agent in uw.read_agents(root):
            mine = agent.get("credential")
            if credential == "all" or mine in names or mine == credential:
                if isinstance(mine, str) and mine not in names:
                    names.append(mine)  # held by a mark though no reading is kept
                held += "limited" in agent
                uw.clear_limited(root, agent["agent"])
        for name in names:
            uw.forget_credential(root, name)
            cleared.append(shown_credential(name, home))
    return sorted(set(cleared)), held
