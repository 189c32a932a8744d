"""Showing a person a fleet's tmux: the one code path of ``fleet attach``, ``fleet start`` and the watch's Enter.

Inside the fleet's own tmux it is ``switch-client`` (the caller keeps its
pane); anywhere else, another tmux included, ``attach-session``, which returns
when the person detaches. From inside another tmux that attach is nested: the
person asked for it, so ``TMUX`` is dropped for it (tmux refuses to nest
otherwise) and the fleet's client runs in the caller's pane.
"""

from __future__ import annotations

import os
import sys
import typing as t
from pathlib import Path

from claude_shepherd.supervisor.session.programs import tmux_argv

if t.TYPE_CHECKING:
    from claude_shepherd.fleet.reports import AttachReport


def inside_socket(env: t.Mapping[str, str]) -> str | None:
    """The socket name of the tmux the caller runs in, if any."""
    raw = env.get("TMUX", "").split(",", 1)[0]
    return Path(raw).name if raw else None


def attach_command(
    tmux_bin: str, socket: str, session: str, pane: str | None = None, env: t.Mapping[str, str] | None = None
) -> tuple[list[str], bool]:
    """The tmux command that shows *session* (at *pane*, ``%N``, when given), and whether it takes the terminal."""
    env = os.environ if env is None else env
    if inside_socket(env) == socket:
        return tmux_argv(tmux_bin, socket, ["switch-client", "-t", pane or f"={session}"]), False
    return tmux_argv(tmux_bin, socket, ["attach-session", "-t", f"={session}"]), True


def attach_env(env: t.Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of an attaching client: without the caller's own tmux, so a nested attach works."""
    env = os.environ if env is None else env
    return {k: v for k, v in env.items() if k not in ("TMUX", "TMUX_PANE")}


def nested_hint(socket: str, env: t.Mapping[str, str] | None = None) -> str | None:
    """What a person attaching inside another tmux needs to know to get back out; None when not nested."""
    env = os.environ if env is None else env
    outer = inside_socket(env)
    if outer is None or outer == socket:
        return None
    return (
        f"Attaching to the fleet inside your tmux ({outer}): keys go to your tmux first; "
        "press its prefix twice to reach the fleet's (C-b C-b d detaches)"
    )


def hand_over(report: AttachReport) -> None:
    """Run *report*'s command in place of this process (the person's terminal is the fleet's now);
    nothing when it has none (its hint was said)."""
    if not report.argv:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    argv = list(report.argv)
    if not report.program:
        os.execvp(argv[0], argv)
    if report.takes_terminal:
        os.execve(report.program, argv, attach_env())
    os.execv(report.program, argv)
