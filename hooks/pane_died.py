"""``claude-hook pane-died PANE PID STATUS``: a fleet pane's process ended — mark the pane and alert.

``fleet start`` sets the fleet server's ``pane-died`` hook
(:func:`claude_shepherd.fleet.style.pane_died_hook`) to run this, so an agent's
death is seen by tmux itself, whatever killed the agent (``kill -9``, a
crash-loop give-up, the OOM killer, a quit): nothing of the dead agent has to
be alive to report it. tmux passes only format values it owns (pane id, pane
pid, exit status); everything else is read back from tmux here.

The pane becomes ``exited`` — and alerts once per transition, with the same
alert and cooldown as needs-you — unless ``fleet stop`` marked it first
(``@pane_stopping`` holding the dying process's pid): then it becomes
``stopped`` and nobody is paged. The state is set only while the pane is still
that dead process's (a pane respawned meanwhile is left alone). Standard
library only.
"""

from __future__ import annotations

import os
import re
import time

from claude_shepherd.supervisor.pane_notify import ALERT_FIELDS, alert_once
from claude_shepherd.supervisor.session.identity import fleet_socket
from claude_shepherd.supervisor.session.numbers import parse_pid
from claude_shepherd.supervisor.tmux_names import (
    EXITED,
    FIELD_SEP,
    LABEL_OPTION,
    PANE_OPTION,
    RESTARTS_OPTION,
    STOPPED,
    STOPPING_OPTION,
    one_line_field,
    state_commands,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

COMMAND = "pane-died"
USAGE = "usage: claude-hook pane-died %PANE PID [STATUS]  (run by the fleet server's pane-died hook)"
_SEP = FIELD_SEP
_FIELDS = ("pane_dead", "pane_pid", "pane_current_path", STOPPING_OPTION, RESTARTS_OPTION, *ALERT_FIELDS)
_PANE = re.compile(r"%[0-9]{1,9}")


def _tmux(socket: str, args: list[str], env: t.Mapping[str, str]) -> t.Any:
    from claude_shepherd.supervisor.session.programs import run_tmux

    return run_tmux(socket, args, env)


def _read(socket: str, pane: str, env: t.Mapping[str, str]) -> dict[str, str] | None:
    out = _tmux(
        socket, ["display-message", "-p", "-t", pane, _SEP.join(one_line_field(f) for f in _FIELDS)], env
    )
    if out is None or out.returncode != 0:
        return None  # the pane (or its session) is gone: nothing left to show
    values = out.stdout.rstrip("\n").split(_SEP)
    return dict(zip(_FIELDS, values)) if len(values) == len(_FIELDS) else None


def set_if_still_dead(pane: str, pid: str, state: str) -> list[str]:
    """tmux arguments that set *state* on *pane* only while it is still *pid*'s, dead (one command)."""
    commands = " ".join(a if a == ";" or " " not in a else f'"{a}"' for a in state_commands(pane, state))
    still = f"#{{&&:#{{pane_dead}},#{{==:#{{pane_pid}},{pid}}}}}"
    return ["if-shell", "-F", "-t", pane, still, commands]


def record(
    socket: str, pane: str, pid: str, env: t.Mapping[str, str], now: float | None = None
) -> str | None:
    """Mark *pane* (whose process *pid* died) ``exited`` or ``stopped``; the state set, or None."""
    row = _read(socket, pane, env)
    if row is None or row["pane_dead"] != "1" or row["pane_pid"] != pid:
        return None  # respawned since: the new process is not the one that died
    state = STOPPED if row[STOPPING_OPTION] == pid else EXITED
    done = _tmux(socket, set_if_still_dead(pane, pid, state), env)
    if done is None or done.returncode != 0:
        return None
    agent = bool(row[LABEL_OPTION] or row[RESTARTS_OPTION])  # a layout's plain shell pane is not an agent
    if state == EXITED and agent and row[PANE_OPTION] != EXITED:
        try:  # the notify command's {session} is looked up from the pane's project
            os.chdir(row["pane_current_path"])
        except OSError:
            pass
        alert_once(
            EXITED, socket, pane, {f: row[f] for f in ALERT_FIELDS}, env, time.time() if now is None else now
        )
    return state


def main(args: list[str], env: t.Mapping[str, str] | None = None) -> int:
    """Validate what tmux passed (only our own format values), then :func:`record`."""
    env = os.environ if env is None else env
    if len(args) not in (2, 3) or not _PANE.fullmatch(args[0]) or parse_pid(args[1]) is None:
        import sys

        sys.stderr.write(USAGE + "\n")
        return 2
    socket = fleet_socket({"TMUX": env.get("TMUX", ""), "TMUX_PANE": args[0]})  # tmux's job: $TMUX, no pane
    if socket is None:
        return 0  # not a fleet server's job: nothing of ours to mark
    record(socket, args[0], args[1], env)
    return 0
