"""What ``claude-run`` tells the fleet pane it runs in: how often it relaunched Claude.

``fleet status`` and ``fleet watch`` read it from the pane option
:data:`RESTARTS_OPTION` (the hooks publish the pane's state, context and cost
the same way), so a crash-looping agent shows without reading its screen.
Outside a fleet pane nothing is done.
"""

from __future__ import annotations

import typing as t

from claude_shepherd.supervisor.session.identity import fleet_socket
from claude_shepherd.supervisor.session.programs import run_tmux

RESTARTS_OPTION = "@pane_restarts"


def publish_restarts(count: int, env: t.Mapping[str, str]) -> bool:
    """Set this pane's restart count (0 at the first launch: a respawned pane keeps its options)."""
    socket = fleet_socket(env)
    if socket is None:
        return False
    done = run_tmux(socket, ["set-option", "-p", "-t", env["TMUX_PANE"], RESTARTS_OPTION, str(count)], env)
    return done is not None and done.returncode == 0
