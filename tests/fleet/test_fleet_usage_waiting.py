"""The waiting line of ``fleet status`` and ``fleet watch`` under a usage limit: who goes on when.

Before the reset no agent has a slot (Claude's own auto-continue takes one, 30-90 s after the reset,
in any order), so the line gives the spacing, never two agents going on at the same minute.
"""

from __future__ import annotations

import dataclasses
import time

import pytest

from claude_shepherd.fleet.pane_status import PaneStatus
from claude_shepherd.fleet.status_table import shown_state, usage_lines
from claude_shepherd.supervisor.session.usage_windows import clock

BLANK = PaneStatus(
    session="duo", window="agents", label="A", pane="%1", pane_id="duo:agents:A", state="limited",
    supervisor_pid=None, supervisor_alive=True, claude_pid=None, session_dir=None, skill=None, phase=None,
    lifecycle=None, overflowed=None, context_usage=None, cost_usd=None, restarts=None, started_at=None,
)  # fmt: skip
RESET = (time.time() // 3600 + 2) * 3600  # on the hour: the minutes below are exact


def parked(label: str, resume_at: float | None = None) -> PaneStatus:
    return dataclasses.replace(BLANK, label=label, limited_until=RESET, resume_at=resume_at)


def test_before_the_reset_the_line_gives_the_spacing_not_the_same_time_for_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CLAUDE_USAGE_RESUME_INTERVAL", raising=False)
    (line,) = usage_lines([parked("SDK"), parked("API")])
    assert line == (
        f"  waiting: 2 agent(s) at a usage limit until {clock(RESET)}; they go on one at a time "
        f"from {clock(RESET)}, 60 s apart, in the order Claude asks: SDK, API"
    )


def test_agents_with_a_slot_have_their_time_and_the_others_follow(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_USAGE_RESUME_INTERVAL", "120")
    (line,) = usage_lines([parked("SDK"), parked("API", RESET + 60), parked("Docs", RESET)])
    assert line == (
        f"  waiting: 3 agent(s) at a usage limit until {clock(RESET)}; they go on one at a time: "
        f"Docs {clock(RESET)}, API {clock(RESET + 60)}, then SDK, 120 s apart, in the order Claude asks"
    )


def test_once_the_window_reopened_nothing_says_until_a_time_gone_by() -> None:
    before, after = RESET - 60, RESET + 30
    assert shown_state(parked("SDK"), now=before) == f"limited until {clock(RESET)}"
    assert shown_state(parked("SDK", RESET + 60), now=before) == (
        f"limited until {clock(RESET)}, goes on {clock(RESET + 60)}"
    )
    assert shown_state(parked("SDK", RESET + 60), now=after) == (
        f"limited, reopened {clock(RESET)}, goes on {clock(RESET + 60)}"
    )
    assert shown_state(parked("SDK"), now=after) == f"limited, reopened {clock(RESET)}, waiting for its turn"
    past = dataclasses.replace(parked("SDK"), limited_until=time.time() - 120)
    (line,) = usage_lines([past])
    assert f"at a usage limit that reopened at {clock(past.limited_until or 0)};" in line, line
