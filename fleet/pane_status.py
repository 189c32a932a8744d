"""A row of ``fleet status``: one pane, its agent, its spend and budget, its usage windows, its worktree.

Another host sends its rows as JSON (:meth:`PaneStatus.from_json`): each field is believed only
of its type and within bounds, so a broken or hostile host costs its own rows, never the table.
"""

from __future__ import annotations

import math
import typing as t
from dataclasses import asdict, dataclass

from claude_shepherd.supervisor.session.numbers import PID_MAX

MAX_AMOUNT = 1e9
"""Larger percents or dollars in a pane option are not believed (shown as unknown)."""
SPEND_SOURCES = ("measured", "estimated")
"""What the spend ledger says its figure is: Claude's own, or partly replies priced from transcripts."""


@dataclass(frozen=True)
class PaneStatus:
    session: str
    window: str
    label: str
    pane: str
    pane_id: str | None
    state: str
    supervisor_pid: int | None
    supervisor_alive: bool
    claude_pid: int | None
    session_dir: str | None
    skill: str | None
    phase: str | None
    lifecycle: str | None
    overflowed: bool | None
    context_usage: float | None
    cost_usd: float | None
    restarts: int | None
    started_at: float | None
    """When the pane's supervisor started (epoch seconds): its uptime."""
    agent: bool = False
    """``fleet start`` made the pane to run an agent (so its death is an agent's death)."""
    spend_source: str = "unknown"
    """Where ``cost_usd`` came from: the agent's spend ledger, ``measured`` (Claude's own figures) or
    ``estimated`` (replies priced from the transcript that no figure of Claude's covers yet); else ``unknown``."""
    budget_usd: float | None = None
    """The budget closest to being reached of those the agent is held to (its pane's, window's, fleet's)."""
    budget_per: str | None = None
    budget_scope: str | None = None
    budget_spent: float | None = None
    """What was measured against that budget (over its period; a window's or fleet's: all their agents)."""
    paused: bool = False
    """The agent reached a budget and is paused until it is raised (``fleet budget``)."""
    credential: str | None = None
    """The Claude config directory the pane's agent uses (its login; supervisor.session.usage_windows)."""
    usage_windows: dict[str, dict[str, float]] | None = None
    """The credential's latest reading of each usage window: ``{name: {used_percentage, resets_at, seen_at}}``."""
    limited_until: float | None = None
    """The agent stopped at a usage limit: when the window reopens (epoch seconds)."""
    limited_window: str | None = None
    resume_at: float | None = None
    """After the reset, when this parked agent goes on (its turn among the others)."""
    worktree: str | None = None
    """The git worktree its Claude runs in (``claude -w NAME``), if any."""
    branch: str | None = None
    """That worktree's branch (None: detached, or not known)."""
    unsaved: str | None = None
    """What in that worktree is not committed (``""``: nothing); None when not known in time."""
    waiting: str | None = None
    """The dialog of Claude Code's its Claude waits at before it starts (state ``dialog``), as its screen
    shows it: ``trust dialog for /path`` (:mod:`claude_shepherd.fleet.dialogs`)."""

    def as_json(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: t.Mapping[str, object]) -> PaneStatus:
        """A row another host's ``fleet status --json`` sent: each field of its type, else empty."""

        def text(key: str) -> str | None:
            value = data.get(key)
            return value if isinstance(value, str) else None

        def number(key: str, kind: type = float, most: float = MAX_AMOUNT) -> t.Any:
            value = data.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                return None
            if not math.isfinite(value) or not 0 <= value <= most:
                return None
            return kind(value) if kind is float or isinstance(value, int) else None

        def flag(key: str) -> bool | None:
            value = data.get(key)
            return value if isinstance(value, bool) else None

        return cls(
            session=text("session") or "",
            window=text("window") or "",
            label=text("label") or "",
            pane=text("pane") or "",
            pane_id=text("pane_id"),
            state=text("state") or "",
            supervisor_pid=number("supervisor_pid", int, PID_MAX),
            supervisor_alive=flag("supervisor_alive") or False,
            claude_pid=number("claude_pid", int, PID_MAX),
            session_dir=text("session_dir"),
            skill=text("skill"),
            phase=text("phase"),
            lifecycle=text("lifecycle"),
            overflowed=flag("overflowed"),
            context_usage=number("context_usage"),
            cost_usd=number("cost_usd"),
            restarts=number("restarts", int, 2**31),
            started_at=number("started_at", float, 2**40),  # epoch seconds
            agent=flag("agent") or False,
            spend_source=source if (source := data.get("spend_source")) in SPEND_SOURCES else "unknown",
            budget_usd=number("budget_usd"),
            budget_per=text("budget_per") if data.get("budget_per") in ("life", "day", "week") else None,
            budget_scope=text("budget_scope"),
            budget_spent=number("budget_spent"),
            paused=flag("paused") or False,
            credential=text("credential"),
            usage_windows=checked_windows(data.get("usage_windows")),
            limited_until=number("limited_until", float, 2**40),
            limited_window=text("limited_window"),
            resume_at=number("resume_at", float, 2**40),
            worktree=text("worktree"),
            branch=text("branch"),
            unsaved=text("unsaved"),
            waiting=text("waiting"),
        )


WINDOW_FIELDS = {"used_percentage": 100.0, "resets_at": 2.0**40, "seen_at": 2.0**40}
"""A usage window's numbers and the most each may be."""


def checked_windows(value: object) -> dict[str, dict[str, float]] | None:
    """Usage windows another host sent (or a record read here): at most 16, each its known numbers within
    bounds, named in at most 40 characters; anything else is left out."""
    if not isinstance(value, dict):
        return None
    out = {}
    for name, window in list(value.items())[:16]:
        if isinstance(name, str) and len(name) <= 40 and isinstance(window, dict):
            fields = {k: float(v) for k, most in WINDOW_FIELDS.items() if isinstance(v := window.get(k), (int, float))
                      and not isinstance(v, bool) and math.isfinite(v) and 0 <= v <= most}  # fmt: skip
            if "used_percentage" in fields and "resets_at" in fields:
                out[name] = fields
    return out
