"""Where a fleet of this machine runs, as ``fleet start`` and ``fleet stop`` tell the person: the folders
it starts in, why there and not here (a relative root is read from where it first started), and its
layout's agents running on under a renamed session, out of reach of its verbs.
"""

from __future__ import annotations

from pathlib import Path

from claude_shepherd.fleet.layout import Layout
from claude_shepherd.fleet.target import Target
from claude_shepherd.fleet.tmux import FleetServer


def where_it_runs(spec: Layout) -> str:
    """The folder (or folders) the layout's windows of this machine start in, as a start says it."""
    roots = list(dict.fromkeys(str(w.root) for w in spec.windows if w.host is None))
    return ", ".join(roots) if roots else str(spec.root)


def relative_root(spec: Layout) -> bool:
    """Is the layout's root relative (or unset): read from the folder the layout was read in?"""
    return not Path(spec.root_text or ".").expanduser().is_absolute()


def not_moved(spec: Layout) -> str:
    """Why the fleet starts where it first started rather than in this folder (its layout's root is
    relative: :func:`claude_shepherd.fleet.known.where_it_ran`), and how to move it; "" when it would
    start in the same place from here."""
    if spec.base is None or not relative_root(spec):
        return ""
    try:
        here = Path.cwd()
    except OSError:  # this folder is gone: the record's folder is all there is
        here = None
    if here is None or here == spec.base:
        return ""
    return (
        f"  root: {spec.root_text or '.'} is read from {spec.base}, where fleet {spec.name!r} first started, not from "
        f"{here}; to move it: fleet stop {spec.name}, fleet forget {spec.name}, then start it there"
    )


def agents_elsewhere(where: Target, server: FleetServer, done: str) -> str:
    """Not "nothing to stop" (or "nothing is left") while the layout's agents run on, their session
    renamed, say: the failure's words (empty: none runs on)."""
    from claude_shepherd.fleet.elsewhere import look_alikes, running_elsewhere  # not for `fleet stop --pane`

    layout = where.layout
    if layout is None:
        return ""
    renamed = look_alikes(layout, server)
    elsewhere = running_elsewhere(layout, server, layout.pane_ids())
    if not (renamed or elsewhere):
        return ""
    what = (
        f"session {', '.join(map(repr, renamed))} has its windows, labels and sessions"
        if renamed
        else f"the agents of {', '.join(sorted(elsewhere))} still run"
    )
    return (
        f"{done}, but {what} (was its session renamed? `fleet status --socket {where.socket}` lists every "
        f"session); rename it back (tmux -L {where.socket} rename-session -t OLD {layout.name}) and stop again"
    )
