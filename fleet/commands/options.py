"""What the ``fleet`` verbs share: their typer arguments and options, saying a line, the fleet's lock,
finding a pane by its label.

Only typer and small modules are imported here at module level: every verb module imports this,
and ``fleet --help`` imports every verb module.
"""

from __future__ import annotations

import typing as t

import typer

from claude_shepherd.supervisor.env import FLEET_SOCKET_ENV, FLEET_START_WAIT_ENV, FLEET_STOP_GRACE_ENV
from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.printable import printable

if t.TYPE_CHECKING:
    from claude_shepherd.fleet.target import Target
    from claude_shepherd.fleet.tmux import FleetServer, PaneInfo

PROG = "fleet"

LayoutArg = t.Annotated[
    str | None,
    typer.Argument(
        metavar="LAYOUT",
        help="A layout file, or a name in ./tmuxinator/, ~/.config/tmuxinator/, ~/.tmuxinator/ "
        "or of a fleet started here (fleet ls) (default: $FLEET_LAYOUT, else 'fleet'); - reads one "
        "host's part as JSON from stdin.",
        show_default=False,
    ),
]
GraceOpt = t.Annotated[
    float,
    typer.Option("--grace", envvar=FLEET_STOP_GRACE_ENV, metavar="S", min=0,
                 help="Seconds agents get to stop after SIGTERM before they are killed."),
]  # fmt: skip
PaneOpt = t.Annotated[
    list[str] | None,
    typer.Option("--pane", metavar="LABEL", help="Only the agent of this pane (repeatable)."),
]
WaitOpt = t.Annotated[
    float | None,
    typer.Option("--wait", envvar=FLEET_START_WAIT_ENV, metavar="S", min=0, show_default=False,
                 help="Seconds to wait for each started agent's supervisor and Claude to run (default 10; "
                      "0: do not check)."),
]  # fmt: skip
SocketOpt = t.Annotated[
    str | None,
    typer.Option("--socket", "-L", envvar=FLEET_SOCKET_ENV, metavar="NAME",
                 help="The fleet's tmux socket (fleet or fleet-NAME), instead of the layout's."),
]  # fmt: skip


HereOpt = t.Annotated[
    bool,
    typer.Option("--here", hidden=True, help="This machine's fleet of that name only, never the other hosts "
                                             "of a fleet that spans hosts (what they are asked with)."),
]  # fmt: skip
MachineOpt = t.Annotated[
    bool,
    typer.Option("--json", help="Say it as one JSON object (exit_code, lines, error): for scripts, and for "
                                "`fleet` on another host."),
]  # fmt: skip

_said: list[str] | None = None
"""The lines of a verb run with ``--json``, kept for its JSON object instead of printed."""


def say(line: str = "") -> None:
    """One line for the operator; what agents named in it (processes, folders) cannot carry escapes."""
    if _said is not None:
        _said.append(printable(line))
    else:
        typer.echo(printable(line))


def machine(on: bool) -> None:
    """With *on* (``--json``), keep every line said for :func:`envelope` instead of printing it."""
    global _said
    if on and _said is None:
        _said = []


def envelope(exit_code: int, error: str | None) -> str | None:
    """The JSON object of a verb run with ``--json`` (None when it was not): what another machine's
    ``fleet`` reads, never a screen."""
    if _said is None:
        return None
    import json

    return json.dumps({"exit_code": exit_code, "lines": _said, "error": error})


class FleetFailure(ShepherdError):
    """The command did its work but something must be reported as a failure."""


def locked(socket: str, verb: str) -> t.ContextManager[None]:
    """The fleet's lock for *verb*'s whole run (a second verb waits, saying for whom)."""
    from claude_shepherd.fleet.lock import fleet_lock  # lazy: keeps `fleet --help` fast

    return fleet_lock(socket, verb, waiting=say)


def labelled(
    where: Target, server: FleetServer, sessions: list[str], labels: t.Sequence[str]
) -> list[PaneInfo]:
    """The running fleet's pane for each of *labels*, or a one-line error.

    An agent can relabel its own pane, so a label on two panes is refused,
    naming both: no verb guesses which agent the person means.
    """
    from claude_shepherd.fleet.tmux import list_panes  # lazy: keeps `fleet --help` fast

    by_label: dict[str, list[PaneInfo]] = {}
    for info in list_panes(server):
        if info.session in sessions and info.label:
            by_label.setdefault(info.label, []).append(info)
    for label in labels:
        holders = by_label.get(label, [])
        if len(holders) > 1:
            raise ShepherdError(
                f"{len(holders)} panes ({', '.join(p.pane_id for p in holders)}) are labelled {label} in "
                f"{', '.join(sessions)}; an agent may have relabelled its pane: give the impostor its own "
                f"label (tmux -L {where.socket} set-option -p -t %N @pane_label NAME), then try again"
            )
    missing = sorted(set(labels) - set(by_label))
    if missing:
        raise ShepherdError(
            f"no pane labelled {', '.join(missing)} in {', '.join(sessions)} (socket {where.socket}); "
            f"labels: {', '.join(sorted(by_label)) or 'none'}"
        )
    return [by_label[label][0] for label in labels]


def pane_labelled(where: Target, server: FleetServer, sessions: list[str], label: str) -> PaneInfo:
    """The running fleet's pane labelled *label* (see :func:`labelled`)."""
    return labelled(where, server, sessions, [label])[0]
