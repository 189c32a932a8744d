"""A usage limit is not a crash: claude-run waits for the window to reopen, then goes on in its turn.

What claude-run can tell, with the real CLI (docs/USAGE_WINDOWS.md):

* ``claude -p`` at a usage limit exits 1 at once (one request, under OAuth). Its StopFailure hook,
  installed behind ``setsid -f``, outlives it and marks the agent ``limited`` with the reset
  (supervisor.session.usage_windows); claude-run waits a moment for that mark after an exit 1.
  Without it, the credential's last reading at 100 % says the same.
* An interactive Claude does not exit at a usage limit: it waits and continues by itself (the
  UserPromptSubmit hook staggers that: hooks.usage_turn). Should it exit meanwhile, the mark is
  there, and the relaunch waits for the reset and its slot like any other.

Before any launch, a window of the agent's credential at or above the wait threshold
(``$CLAUDE_USAGE_WAIT_PERCENT``, 95 %) makes claude-run wait for its reset instead of spending
what is left (``--ignore-usage-limits`` / ``CLAUDE_USAGE_IGNORE=1`` start at once).
"""

from __future__ import annotations

import time
from pathlib import Path

from claude_shepherd.supervisor.session import pane_records, resume_slots
from claude_shepherd.supervisor.session import usage_windows as uw
from claude_shepherd.supervisor.session.credentials import credential_of, shown_credential, windowless
from claude_shepherd.supervisor.session.records import Record

TYPE_CHECKING = False
if TYPE_CHECKING:  # claude-run runs beside every agent: no typing at run time (docs/HOT_CORE.md)
    import typing as t

RETRY_LATER = 5 * 60.0
"""Seconds to wait when the reset is unknown, or was already past and the limit stopped Claude again."""
LOOK_EVERY = 5.0
"""Seconds between two looks, while waiting, at whether the wait still stands: a person may clear it
(``fleet usage --clear``), and usage may come back before the reset (another agent reads it)."""
MARK_WAIT = 1.5
"""Seconds claude-run waits after an exit for the detached StopFailure hook's mark."""
CONTINUE_PROMPT = (
    "Your usage limit has reset. Continue the task you were working on when the limit was reached; "
    "do not repeat work that is already complete."
)


class Wait(Record):
    """Why and until when a launch waits."""

    __slots__ = ("until", "go_at", "window", "why")
    until: float
    """When the window reopens (epoch seconds)."""
    go_at: float
    """When this agent goes on: *until*, or its slot after the others parked by the same window."""
    window: str
    why: str

    def __init__(self, until: float, go_at: float, window: str, why: str) -> None:
        self.until = until
        self.go_at = go_at
        self.window = window
        self.why = why


class UsageGate:
    """The usage questions of one claude-run: its agent, credential and sessions root."""

    def __init__(
        self,
        root: Path,
        agent: str | None,
        env: t.Mapping[str, str],
        *,
        ignore: bool = False,
        wall: t.Callable[[], float] = time.time,
        sleep: t.Callable[[float], object] = time.sleep,
    ) -> None:
        self.root = root
        self.agent = agent
        self.credential = credential_of(env)
        self.env = env
        self.ignore = ignore or uw.ignored(env)
        self.wall = wall
        self.sleep = sleep

    @classmethod
    def of(cls, root: Path, pane: str | None, pid: int, token: str | None, env: t.Mapping[str, str], *,
           ignore: bool = False) -> UsageGate:  # fmt: skip
        where = pane_records.spot(pane, (pid, token))
        return cls(root, where[0] if where else None, env, ignore=ignore)

    def _windows(self) -> dict[str, dict[str, float]]:
        record = uw.read_credential(self.root, self.credential)
        return record["windows"] if record else {}

    def _slot(self, until: float) -> float:
        if self.agent is None:
            return until
        return resume_slots.take_slot(
            self.root, self.credential, self.agent, until, uw.resume_interval(self.env)
        )

    def after_exit(self, status: int, launched_at: float) -> Wait | None:
        """Did the Claude that exited with *status* (launched at wall time *launched_at*) stop at a
        usage limit? Then the wait before its relaunch; None: an ordinary exit."""
        if status == 0:
            return None
        deadline = self.wall() + (MARK_WAIT if status == 1 else 0.0)
        while True:
            mark = uw.limited_of(uw.read_agent(self.root, self.agent) if self.agent else None, self.wall())
            since = mark.get("since") if mark else None
            if mark is not None and isinstance(since, (int, float)) and since >= launched_at - 1:
                until = mark.get("until")
                window = str(mark.get("window") or "usage")
                if not isinstance(until, (int, float)) or until <= launched_at:
                    # Unknown, or a reset that had passed when this Claude started and still stopped
                    # it: the window is not open; look again a while later, never at once.
                    until = self.wall() + RETRY_LATER
                how = (
                    "the reset read from the credential"
                    if mark.get("source") == "reading"
                    else "the reset Claude printed"
                )
                return Wait(
                    until, self._slot(until), window, f"Claude stopped at the {window} usage limit ({how})"
                )
            if self.wall() >= deadline:
                break
            self.sleep(0.05)
        at_limit = uw.closed(self._windows(), 100.0, self.wall())
        if status == 1 and at_limit is not None:
            name, _, until = at_limit
            return Wait(until, self._slot(until), name, f"Claude exited 1 with the {name} window at 100 %")
        return None

    def before_launch(self) -> Wait | None:
        """A window of the credential at or above the wait threshold: wait for its reset (never for a
        credential of no windows: an API key is not held by a subscription's window)."""
        if self.ignore or windowless(self.credential):
            return None
        percent = uw.wait_percent(self.env)
        worst = uw.closed(self._windows(), percent, self.wall())
        if worst is None:
            return None
        name, used, until = worst
        return Wait(
            until,
            self._slot(until),
            name,
            f"the {name} window of {shown_credential(self.credential)} is {used:g} % used (waiting at {percent:g} %)",
        )

    def park(self, wait: Wait) -> None:
        """Mark the agent limited while it waits before a launch, so that ``fleet status``, the pane's
        border and ``fleet start`` say until when."""
        if self.agent is not None:
            uw.note_limited(self.root, self.agent, self.credential, wait.until, wait.window, "reading")
        from claude_shepherd.supervisor import pane_notify
        from claude_shepherd.supervisor.tmux_names import LIMITED

        pane_notify.publish(LIMITED, env=self.env)

    def still(self, wait: Wait, *, stopped: bool) -> bool:
        """Does *wait* still stand? Not once a person cleared it (the agent's mark, or the credential's
        reading, is gone), nor once a reading seen after the stop shows the window open again (usage
        came back before the reset)."""
        now = self.wall()
        if not stopped:  # once the window reopened, the agent waits for its turn
            return now >= wait.until or uw.closed(self._windows(), uw.wait_percent(self.env), now) is not None
        record = uw.read_agent(self.root, self.agent) if self.agent else None
        mark = record.get("limited") if record else None  # as written: its turn may come long after
        if self.agent is not None and not isinstance(mark, dict):
            return False
        since = mark.get("since") if isinstance(mark, dict) else None
        window = self._windows().get(wait.window)
        if isinstance(window, dict) and isinstance(since, (int, float)):
            seen = window.get("seen_at")
            used = window.get("used_percentage")
            if (
                isinstance(seen, (int, float))
                and seen > since
                and isinstance(used, (int, float))
                and used < 100
            ):
                return False
        return True

    def gone_on(self) -> None:
        """The wait is over: the mark goes, and the pane no longer shows ``limited`` (the next Claude's
        hooks say what it does; one idle at its prompt would show limited for good)."""
        if self.agent is not None:
            uw.clear_limited(self.root, self.agent)
        from claude_shepherd.supervisor.session.identity import fleet_socket
        from claude_shepherd.supervisor.session.programs import run_tmux
        from claude_shepherd.supervisor.tmux_names import state_commands

        socket = fleet_socket(self.env)
        if socket is not None:
            run_tmux(socket, state_commands(self.env["TMUX_PANE"], ""), self.env)

    def describe(self, wait: Wait, *, stopped: bool = False) -> str:
        """What claude-run says while it waits: after a usage-limit stop (*stopped*: the window is closed,
        nothing would start Claude sooner), or before a launch into a window at the threshold."""
        now = self.wall()
        text = f"{wait.why}; waiting until it reopens at {uw.clock(wait.until, now)}"
        if wait.go_at > wait.until + 0.5:
            text += f", then for this agent's turn at {time.strftime('%H:%M:%S', time.localtime(wait.go_at))}"
        if stopped:
            return text + " (not a crash)"
        return text + " (--ignore-usage-limits or CLAUDE_USAGE_IGNORE=1 starts it at once)"
