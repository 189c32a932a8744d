"""A restart request: recorded in the session, then this agent's Claude is ended by its watchdog,
and claude-run starts a fresh one that continues the session."""

from __future__ import annotations

import json
import os
import signal
import sys

from claude_shepherd.supervisor.env import KILL_GRACE_DEFAULT, KILL_GRACE_ENV, WATCHDOG_PID_ENV
from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.session.identity import (
    ANCESTRY_DEPTH,
    is_watchdog,
    parent_pid,
    process_stat,
    start_token,
    supervisor_pid,
)
from claude_shepherd.supervisor.session.invocation import owned, say
from claude_shepherd.supervisor.session.numbers import parse_decimal, parse_pid

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds; session runs at every agent step
    import typing as t
    from pathlib import Path

RESTART_MARGIN = 2.0
"""Seconds beyond the watchdog's grace (SIGTERM to SIGKILL) that a restart waits for its Claude to be gone."""
GONE_POLL = 0.02


def watchdog() -> int | None:
    """This agent's watchdog, checked before anything is written; None when there is none (no claude-run)."""
    raw = os.environ.get(WATCHDOG_PID_ENV, "")
    if not raw.strip():
        return None
    pid = parse_pid(raw)
    if pid is None or not is_watchdog(pid):
        raise ShepherdError(
            f"WATCHDOG_PID={raw} is not a claude-run watchdog, so nothing was changed; "
            f"unset WATCHDOG_PID to record the restart without one, or exit Claude"
        )
    if parent_pid(pid) != supervisor_pid():  # only our own supervisor's: never another agent's Claude
        raise ShepherdError(
            f"WATCHDOG_PID={raw} is not this agent's watchdog, so nothing was changed; "
            f"unset WATCHDOG_PID to record the restart without one, or exit Claude"
        )
    return pid


def own_claude() -> tuple[int, str | None]:
    """The process the watchdog ends for us: our ancestor that is the supervisor's child (Claude)."""
    supervisor = supervisor_pid()
    current = os.getpid()
    for _ in range(ANCESTRY_DEPTH):
        parent = parent_pid(current)
        if parent is None or parent <= 1 or parent == supervisor:
            break
        current = parent
    return current, start_token(current)


def restart_wait(env: t.Mapping[str, str] | None = None) -> float:
    """Seconds a restart waits for its Claude to be gone: the PreToolUse hook refuses a Bash timeout below it."""
    env = os.environ if env is None else env
    grace = parse_decimal(env.get(KILL_GRACE_ENV, "").strip(), maximum=3600)
    return (KILL_GRACE_DEFAULT if grace is None else grace) + RESTART_MARGIN


def await_end(claude: tuple[int, str | None], limit: float) -> bool:
    """Wait until *claude* is gone (True), or *limit* seconds passed (False).

    When the watchdog acts it ends us too (we are in Claude's tree), so
    normally this never returns: nothing the model could read comes back.
    """
    import time

    deadline = time.monotonic() + limit
    pid, token = claude
    while time.monotonic() < deadline:
        stat = process_stat(pid)
        if token is None or stat is None or stat[0] in "ZX" or start_token(pid) != token:
            return True  # an exited Claude its supervisor has not reaped yet is gone too
        time.sleep(GONE_POLL)
    return False


def end_this_claude(watchdog: int | None, prompt: str) -> None:
    """Have the watchdog end this agent's Claude; return only when it is gone or did not go."""
    if watchdog is None:
        say("No watchdog active (WATCHDOG_PID not set): not running under claude-run.")
        say("The restart is recorded. To restart by hand, exit Claude and run:")
        say()
        say(f"  claude {json.dumps(prompt)}")
        return
    claude = own_claude()
    limit = restart_wait()
    say(f"Restart prepared. Signaling watchdog (PID {watchdog}) to kill Claude...")
    sys.stdout.flush()
    try:
        os.kill(watchdog, signal.SIGUSR1)
    except ProcessLookupError:
        raise ShepherdError(
            f"watchdog PID {watchdog} has exited; the restart is recorded, exit Claude to apply it"
        ) from None
    if not await_end(claude, limit):
        raise ShepherdError(
            f"the watchdog (PID {watchdog}) did not end Claude within {limit:g}s; the restart is recorded, "
            f"exit Claude and claude-run starts the fresh one"
        )


def request_restart(session_dir: Path, watchdog: int | None) -> None:
    """Record the request, then end this agent's Claude through its *watchdog* (see :func:`watchdog`).

    Only the session's own agent may ask: a supervisor takes requests only from
    sessions it owns, so a request on someone else's session would kill this
    Claude with nothing to restart — or, outside claude-run, plant a restart
    prompt in another agent's session.
    """
    from claude_shepherd.supervisor.session import restart_transitions

    end_this_claude(
        watchdog, owned(session_dir, lambda state: restart_transitions.request_restart(state, session_dir))
    )
