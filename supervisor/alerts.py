"""Tell the person when a fleet agent needs them: once per transition, never slowing the hook.

What needs a person (needs-you, paused, error, exited, a budget nearly spent) pages only when the
attention queue (:mod:`claude_shepherd.supervisor.attention`) takes it as news: the same agent in
the same trouble again within a minute of its last change is one entry with a count, and an entry
the person snoozed stays quiet. Any other state (done) does not alert again within
:data:`~claude_shepherd.supervisor.pane_notify.ALERT_COOLDOWN` seconds of the pane's last alert on it.

:mod:`claude_shepherd.supervisor.pane_notify` reads a pane's previous state in the
same tmux call that sets the new one (tmux runs one client's command list
without interleaving another's, so two hooks of one pane cannot both see the
change). When the state *changed into* one the fleet alerts on (needs-you,
error and exited — see :mod:`claude_shepherd.hooks.pane_died` — by default;
done when asked), :func:`dispatch` starts a process of its own
(``claude-hook alert``, in its own session) and returns; that process

* shows ``LABEL needs you`` (or ``LABEL: error``, ``LABEL exited``, ``LABEL is
  done``) on every client attached to the fleet (``display-message``) and rings the pane's
  bell, so tmux marks the window and passes the bell to the terminal (a dead
  pane has no terminal left: its bell rings on each attached client's);
* runs the fleet's notify command, if there is one, with ``{fleet}``
  ``{label}`` ``{state}`` ``{session}`` ``{host}`` substituted inside its arguments —
  each value stays inside its own argument, never through a shell — detached,
  and killed after :data:`TIMEOUT` seconds (``$FLEET_NOTIFY_TIMEOUT``).

What to do is the fleet's tmux session option ``@fleet_notify``, which
``fleet start`` writes from the layout's ``notify`` / ``notify_on`` (or
``$FLEET_NOTIFY_COMMAND``) with :func:`encode`. Standard library only; this
module is imported only when a transition happened.
"""

from __future__ import annotations

import json
import os
import re

from claude_shepherd.supervisor.env import FLEET_NOTIFY_TIMEOUT_ENV
from claude_shepherd.supervisor.printable import printable
from claude_shepherd.supervisor.session.numbers import parse_decimal
from claude_shepherd.supervisor.tmux_names import ALERT_STATES, DEFAULT_ALERT_ON

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t

DEFAULT_ON = DEFAULT_ALERT_ON
PLACEHOLDERS = ("fleet", "label", "state", "session", "host")
HERE = "local"
"""``{host}`` of an alert of this machine's own pane (what ``fleet`` calls this machine wherever it lists
hosts); :mod:`claude_shepherd.fleet.hosts.relay` gives another host's name."""
TIMEOUT = 10.0
START_DELAY = 0.1
"""Seconds between the hook and the alert's interpreter starting (a person does not notice them)."""
MESSAGE_MS = 5000
_PLACEHOLDER = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")


class Config:
    """What the fleet asked for: a command (or none), the states that alert, tmux message and bell."""

    __slots__ = ("command", "on", "tmux")

    def __init__(
        self, command: tuple[str, ...] | None = None, on: tuple[str, ...] = DEFAULT_ON, tmux: bool = True
    ) -> None:
        self.command = command
        self.on = on
        self.tmux = tmux

    @property
    def silent(self) -> bool:
        return not self.tmux and not self.command


def encode(command: t.Sequence[str] | None, on: t.Sequence[str] = DEFAULT_ON, *, tmux: bool = True) -> str:
    """The option's value (``fleet start`` writes it; :func:`decode` reads it)."""
    return json.dumps({"command": list(command) if command else None, "on": list(on), "tmux": tmux},
                      separators=(",", ":"))  # fmt: skip


def decode(raw: str) -> Config:
    """The option's value as a :class:`Config`; unset or unreadable means the defaults (no command)."""
    try:
        data = json.loads(raw) if raw.strip() else {}
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    command = data.get("command")
    if not (isinstance(command, list) and command and all(isinstance(a, str) for a in command)):
        command = None
    on = data.get("on")
    states = tuple(s for s in on if s in ALERT_STATES) if isinstance(on, list) else DEFAULT_ON
    return Config(tuple(command) if command else None, states, data.get("tmux", True) is not False)


def substitute(argv: t.Sequence[str], values: t.Mapping[str, str]) -> list[str]:
    """Each ``{name}`` of :data:`PLACEHOLDERS` replaced in one pass: a value is never substituted again,
    carries no escapes to wherever the command shows it, and cannot turn an argument into an option.

    An agent can rename its pane or its tmux session, so a value that would begin an argument with
    ``-`` begins with U+2010 (‐, which reads the same) instead.
    """
    out = []
    for arg in argv:
        done = _PLACEHOLDER.sub(lambda m: printable(values.get(m.group(1), "")), arg)
        out.append("\u2010" + done[1:] if done.startswith("-") and not arg.startswith("-") else done)
    return out


def words(state: str, label: str) -> str:
    """What the alert says: ``LABEL needs you``, ``LABEL: error``, ``LABEL exited``, ``LABEL is done``."""
    text = {"needs-you": f"{label} needs you", "done": f"{label} is done", "exited": f"{label} exited"}.get(
        state, f"{label}: {state}"
    )
    text = {"paused": f"{label} paused (budget)", "budget": f"{label} spent 80 % of a budget"}.get(
        state, text
    )
    return printable(text)


def message(state: str, label: str) -> str:
    """The line shown on the fleet's clients: ``#`` and ``%`` doubled, since tmux expands formats and
    strftime in it, and no escapes (an agent can relabel its pane)."""
    return "fleet: " + words(state, label).replace("#", "##").replace("%", "%%")


ALERT_COMMAND = "alert"
"""``claude-hook alert PAYLOAD``: internal; the process :func:`dispatch` starts."""


def dispatch(
    config: Config,
    *,
    state: str,
    socket: str,
    fleet: str,
    window: str,
    label: str,
    tty: str,
    env: t.Mapping[str, str],
    agent: str = "",
    pane: str = "",
) -> bool:
    """Start the alert in a process of its own and return at once (True when one was started).

    A new interpreter (spawned with posix_spawn, in its own session, its
    output nowhere) rather than a fork of the hook: a forked hook shares its pages
    with the child, and the hook's own exit would pay for copying them. The
    payload travels as one JSON argument; nothing in it reaches a shell. It
    is never waited for: the hook exits at once, and the orphan is reaped by
    ``claude-run`` (a child subreaper) or init.
    """
    if state not in config.on or config.silent:
        return False
    import sys

    from claude_shepherd.supervisor.session.programs import spawn_later

    payload = {"command": config.command, "tmux": config.tmux, "state": state, "socket": socket, "fleet": fleet,
               "window": window, "label": label, "tty": tty, "agent": agent, "pane": pane}  # fmt: skip
    # The interpreter starts after a short sleep: started at once, its start-up competes for the CPU
    # with the hook's own exit, which the agent waits for (measured in bench/bench_fleet.py).
    from claude_shepherd.supervisor.session.programs import HOOKS_MAIN

    argv = [sys.executable, "-I", "-S", HOOKS_MAIN, ALERT_COMMAND, json.dumps(payload)]
    return spawn_later(argv, env, START_DELAY) is not None


def main(args: list[str]) -> int:
    """The alert process: tmux message and bell, then the fleet's command (with its timeout)."""
    try:
        os.nice(10)  # behind the agent's own work
    except OSError:
        pass
    try:
        data = json.loads(args[0])
        command = data["command"]
        config = Config(tuple(command) if command else None, (data["state"],), bool(data["tmux"]))
        agent = data.get("agent") or f"{data['fleet']}:{data['window']}:{data['label']}"
        _alert(config, state=data["state"], socket=data["socket"], fleet=data["fleet"], window=data["window"],
               label=data["label"], tty=data["tty"], env=os.environ, agent=str(agent),
               pane=str(data.get("pane") or ""))  # fmt: skip
    except (IndexError, ValueError, KeyError, TypeError):
        return 2
    return 0


def _alert(
    config: Config,
    *,
    state: str,
    socket: str,
    fleet: str,
    window: str,
    label: str,
    tty: str,
    env: t.Mapping[str, str],
    agent: str = "",
    pane: str = "",
) -> None:
    from claude_shepherd.supervisor.session.programs import run_tmux

    if not news(state, socket, fleet, agent or f"{fleet}:{window}:{label}", label, env, pane):
        return  # the attention queue has it already (a flap), or the person snoozed it: quiet everywhere
    if config.tmux:
        if state != "exited":
            ring_bell(tty)
        listed = run_tmux(
            socket, ["list-clients", "-t", f"={fleet}", "-F", "#{client_name}\x1f#{client_tty}"], env
        )
        for line in listed.stdout.splitlines() if listed is not None and listed.returncode == 0 else []:
            client, _, client_tty = line.partition("\x1f")
            if state == "exited":  # a dead pane's terminal is closed: ring the person's own terminal
                ring_bell(client_tty)
            run_tmux(
                socket, ["display-message", "-c", client, "-d", str(MESSAGE_MS), message(state, label)], env
            )
    if config.command:
        values = {
            "fleet": fleet,
            "label": label,
            "state": state,
            "session": session_of(fleet, window, label, env),
            "host": HERE,
        }
        run_command(substitute(config.command, values), timeout(env))


def news(
    state: str, socket: str, fleet: str, agent: str, label: str, env: t.Mapping[str, str], pane: str = ""
) -> bool:
    """Is this change worth a page? The attention queue's word for the states it holds
    (:meth:`~claude_shepherd.supervisor.attention.Queue.occurred`); True for any other state, and when
    the queue cannot be kept (a page too many, never one lost)."""
    from claude_shepherd.supervisor import attention

    if state not in attention.KINDS:
        return True
    ref = attention.AgentRef(HERE, os.path.basename(socket), agent, label, fleet, pane)
    try:
        return attention.Queue(env).occurred(ref, state)
    except Exception:
        return True


def ring_bell(tty: str) -> bool:
    """Write BEL to the pane's terminal, as a program in it would: only our own character device."""
    from claude_shepherd.supervisor.session.safe_fs import UnsafeFileError, open_terminal

    try:
        fd = open_terminal(tty)
    except (OSError, UnsafeFileError):
        return False
    try:
        return os.write(fd, b"\a") == 1
    except OSError:
        return False
    finally:
        os.close(fd)


def session_of(fleet: str, window: str, label: str, env: t.Mapping[str, str]) -> str:
    """The name of the session the pane's agent has active, or "" when none."""
    from claude_shepherd.supervisor.session.lookup import sessions_on_pane
    from claude_shepherd.supervisor.session.paths import display_name, sessions_root

    try:
        found = sessions_on_pane(sessions_root(env=env), f"{fleet}:{window}:{label}")
    except Exception:
        return ""
    name = display_name(found[0].session_dir) if found else ""
    return "" if name.startswith("-") else name  # a folder made by hand: it must not read as an option


def timeout(env: t.Mapping[str, str]) -> float:
    value = parse_decimal(env.get(FLEET_NOTIFY_TIMEOUT_ENV, ""), maximum=3600)
    return value if value else TIMEOUT


def run_command(
    argv: list[str],
    limit: float,
    *,
    clock: t.Callable[[], float] | None = None,
    sleep: t.Callable[[float], object] | None = None,
) -> int | None:
    """Run the notify command in its own process group; end the group after *limit* seconds at most.

    What the command starts in the background (a sound, a second notifier)
    may run until the deadline, never beyond it: the group is killed then, or
    as soon as it is empty. *clock* and *sleep* (``time.monotonic`` and
    ``time.sleep`` by default) measure the wait for the background.
    """
    import signal
    import subprocess
    import time

    clock = clock or time.monotonic
    sleep = sleep or time.sleep
    deadline = clock() + limit
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)  # fmt: skip
    except OSError:
        return None
    try:
        code: int | None = proc.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        code = None
    while code is not None and _group_alive(proc.pid) and clock() < deadline:
        sleep(0.1)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    proc.wait()
    return code


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True
