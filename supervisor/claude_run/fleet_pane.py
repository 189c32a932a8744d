"""What ``claude-run`` tells the fleet pane it runs in: how often Claude was relaunched there.

``fleet status`` and ``fleet watch`` read it from the pane option
:data:`RESTARTS_OPTION` (the hooks publish the pane's state, context and cost
the same way), so a crash-looping agent shows without reading its screen. The
count belongs to the pane, not to one ``claude-run``: a respawned pane (``fleet
restart``, the watch's ``r``, ``fleet start`` bringing a dead agent back) keeps
its options, and its new ``claude-run`` counts on from there. Outside a fleet
pane nothing is done.
"""

from __future__ import annotations

from claude_shepherd.supervisor.session.identity import fleet_socket
from claude_shepherd.supervisor.session.numbers import parse_count
from claude_shepherd.supervisor.session.programs import run_tmux, spawn_later, tmux_argv, tmux_path
from claude_shepherd.supervisor.tmux_names import REAP_NUDGE, RESTARTS_OPTION

TYPE_CHECKING = False
if TYPE_CHECKING:  # claude-run runs beside every agent: no typing at run time (docs/HOT_CORE.md)
    import typing as t

MAX_RESTARTS = 999_999_999
"""A larger count is not one ``claude-run`` wrote (an agent can set its pane's options)."""


def restart_count(raw: str) -> int | None:
    """The pane option's value as a count: ASCII digits only, bounded; None for anything else."""
    return parse_count(raw.strip(), maximum=MAX_RESTARTS)


def restarts_before(env: t.Mapping[str, str]) -> int:
    """The relaunches this ``claude-run``'s first launch adds to: 0 in a new pane; the pane's count + 1
    in a pane that ran an agent before (garbage there counts as 0)."""
    socket = fleet_socket(env)
    if socket is None:
        return 0
    done = run_tmux(socket, ["show-options", "-p", "-v", "-t", env["TMUX_PANE"], RESTARTS_OPTION], env)
    if done is None or done.returncode != 0 or not done.stdout.strip():
        return 0
    return (restart_count(done.stdout) or 0) + 1


def publish_restarts(count: int, env: t.Mapping[str, str]) -> bool:
    """Set this pane's restart count."""
    socket = fleet_socket(env)
    if socket is None:
        return False
    done = run_tmux(socket, ["set-option", "-p", "-t", env["TMUX_PANE"], RESTARTS_OPTION, str(count)], env)
    return done is not None and done.returncode == 0


NUDGE_DELAY = 1.0
"""Seconds the detached nudge waits, so that this pane's process has exited by then."""


def nudge_reaping(env: t.Mapping[str, str], *, delay: float = NUDGE_DELAY) -> bool:
    """Make sure tmux learns that this pane's process ended, from a detached process that outlives it.

    tmux 3.3 at times misses the SIGCHLD of a pane's process: the pane shows dead with no exit status
    and its ``pane-died`` hook, the fleet's death alert, never runs. Any later child of tmux that
    ends makes it reap them all, so a ``run-shell -b true`` a moment after this process is gone
    settles the pane. Outside a fleet pane nothing is done.
    """
    socket = fleet_socket(env)
    tmux = tmux_path(env)
    if socket is None or tmux is None:
        return False
    return spawn_later(tmux_argv(tmux, socket, REAP_NUDGE), {"PATH": "/usr/bin:/bin"}, delay) is not None
