"""Pane status at a glance: a hook marks its own fleet pane working / needs-you / done / error.

A pane whose process ended is marked ``exited`` (or ``stopped``, when ``fleet stop``
ended it) by tmux's ``pane-died`` hook (:mod:`claude_shepherd.hooks.pane_died`).

The state goes into the pane option ``@pane_notify`` and the most urgent state
of the window into the window option ``@window_notify``; the pane border and
the window tab (set up by ``fleet start``) colour themselves from those
options, so a person scanning the fleet sees at once which agent needs them.

Rules the bash original broke:

* only a pane of a *fleet* socket (``fleet``/``fleet-*``) is ever touched,
  found through ``$TMUX``/``$TMUX_PANE`` — an agent in the user's own tmux
  never recolours a fleet pane with the same ``%id`` (B10);
* options only: no ``select-pane``, no focus change, nothing a user's own
  keystrokes could race with (R8);
* throttled: a repeat of the same state within :data:`THROTTLE_SECONDS`
  costs one ``stat`` and no tmux call at all.

One tmux call does it all: tmux itself works out the window's aggregate from
its panes' options (:data:`WINDOW_AGGREGATE`) right after the pane's option
is set, in the same command list, so two panes of one window changing at
once cannot leave the tab showing a stale state. Standard library only, and
nothing beyond ``os`` is imported outside a fleet pane — this runs inside
hooks on every tool call.
"""

from __future__ import annotations

import os
import sys
import time

from claude_shepherd.supervisor.session.identity import fleet_socket
from claude_shepherd.supervisor.session.numbers import parse_decimal
from claude_shepherd.supervisor.tmux_names import (
    ALERTED_OPTION,
    ALERTING,
    CONTEXT_OPTION,
    COST_OPTION,
    ERROR,
    EXITED,
    FIELD_SEP,
    FLEET_NOTIFY_OPTION,
    HOOK_STATES,
    LABEL_OPTION,
    NEEDS_YOU,
    PANE_OPTION,
    PAUSED,
    PRIORITY,
    STATES,
    one_line_field,
    state_commands,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

THROTTLE_SECONDS = 2.0
ALERT_COOLDOWN = 60.0
"""Seconds during which a pane entering the same alerting state again alerts no more (an agent
flapping between error and working would otherwise page the person on every tool call). The record
is the pane's own tmux option (:data:`ALERTED_OPTION`), never a file: a file an agent's tools could
write would let one agent silence another's alerts."""

_SEP = FIELD_SEP
_PREVIOUS = _SEP * 3
ALERT_FIELDS = (
    PANE_OPTION,
    ALERTED_OPTION,
    "session_name",
    "window_name",
    LABEL_OPTION,
    "pane_id",
    "pane_tty",
    FLEET_NOTIFY_OPTION,
)
"""The pane's fields an alert needs (its state first), read in the same tmux call as the change."""


def run_dir(env: t.Mapping[str, str] | None = None) -> str:
    """Where the hooks keep their bookkeeping: ``$XDG_RUNTIME_DIR/claude-shepherd``, else
    ``/tmp/claude-shepherd-UID`` (the write gate keeps the file tools out of both)."""
    runtime = (os.environ if env is None else env).get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isabs(runtime):
        return os.path.join(runtime, "claude-shepherd")
    return f"/tmp/claude-shepherd-{os.getuid()}"


def _stamp_dir() -> str | None:
    """A private directory for throttle stamps, or None when none can be trusted (another user's
    folder, or a symlink: neither trusted nor fed)."""
    from claude_shepherd.supervisor.session.private_dir import is_private_dir

    base = run_dir()
    path = os.path.join(base, "pane-notify")
    # Each folder on its own: $XDG_RUNTIME_DIR itself is not ours to make.
    return path if is_private_dir(base) and is_private_dir(path) else None


def _stamp_path(socket: str, pane: str, part: str) -> str | None:
    directory = _stamp_dir()
    if directory is None:
        return None
    import binascii  # a small extension module: no import cost worth measuring

    return os.path.join(directory, f"{binascii.crc32(socket.encode()):08x}-{pane.lstrip('%')}.{part}")


def _recent(stamp: str | None, value: str, now: float, within: float = THROTTLE_SECONDS) -> bool:
    """Was *value* stamped within *within* seconds? Only a regular file of ours with mode 0600 (as
    :func:`_remember` leaves it) counts as a stamp: not what a file tool would create."""
    if stamp is None:
        return False
    from claude_shepherd.supervisor.session import safe_fs

    try:
        content = safe_fs.read_bytes(stamp, limit=64)  # no link, no FIFO, a regular file of a few bytes
        info = os.stat(stamp, follow_symlinks=False)
    except (OSError, safe_fs.UnsafeFileError):
        return False
    if info.st_mode & 0o7777 != 0o600 or info.st_uid != os.getuid():
        return False
    return now - info.st_mtime <= within and content == value.encode()


def _remember(stamp: str | None, value: str) -> None:
    if stamp is None:
        return
    from claude_shepherd.supervisor.session import safe_fs

    tmp = os.path.join(os.path.dirname(stamp), f".{os.path.basename(stamp)}.{os.getpid()}")
    try:
        try:
            os.unlink(tmp)  # a leftover of a process that had our pid: start it afresh
        except FileNotFoundError:
            pass
        fd = safe_fs.open_append(tmp)
    except (OSError, safe_fs.UnsafeFileError):
        return
    try:
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, value.encode())
        finally:
            os.close(fd)
        os.replace(tmp, stamp)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _tmux(socket: str, args: list[str]) -> t.Any:
    """``tmux -S SOCKET ARGS`` with a deadline; None when tmux did not answer (or none is trusted)."""
    from claude_shepherd.supervisor.session.programs import run_tmux

    return run_tmux(socket, args)


def context_percent(usage: float | None) -> str | None:
    """``contextUsage`` (0.0–1.0) as the whole percent shown on the border."""
    if usage is None or isinstance(usage, bool) or not isinstance(usage, (int, float)) or usage < 0:
        return None
    return str(round(min(float(usage), 9.99) * 100))


def cost_text(cost: float | None) -> str | None:
    """A cost in USD as the pane option holds it (``1.23``), or None when unknown."""
    if cost is None or isinstance(cost, bool) or not isinstance(cost, (int, float)) or not 0 <= cost < 1e9:
        return None
    return f"{float(cost):.2f}"


def notify(
    state: str | None,
    *,
    context: float | None = None,
    cost: float | None = None,
    env: t.Mapping[str, str] | None = None,
    now: float | None = None,
) -> bool:
    """Publish *state* (and/or the *context* usage and the *cost*) on the calling fleet pane.

    Returns True when tmux was updated; False outside a fleet, when throttled,
    or when tmux did not answer (a hook never fails because of the display).
    The state and the meters (context and cost) are throttled separately: the
    status line repeats the one, every tool call the other.
    """
    if state is not None and state not in PRIORITY:
        raise ValueError(f"unknown pane state {state!r}; use one of {', '.join(STATES)}")
    env = os.environ if env is None else env
    socket = fleet_socket(env)
    if socket is None:
        return False
    pane = env["TMUX_PANE"]
    now = time.time() if now is None else now
    percent = context_percent(context)
    dollars = cost_text(cost)
    meters = f"{percent or ''}/{dollars or ''}" if percent is not None or dollars is not None else None
    state_stamp = _stamp_path(socket, pane, "state") if state is not None else None
    meter_stamp = _stamp_path(socket, pane, "meters") if meters is not None else None
    if state is not None and _recent(state_stamp, state, now):
        state = None
    if meters is not None and _recent(meter_stamp, meters, now):
        meters = None
    if state is None and meters is None:
        return False
    args: list[str] = []
    if meters is not None:
        for option, value in ((CONTEXT_OPTION, percent), (COST_OPTION, dollars)):
            if value is not None:
                args += [";"] if args else []
                args += ["set-option", "-p", "-t", pane, option, value]
    if state is not None:
        args += [";"] if args else []
        args += [
            # Before the state is set: what it was (a transition alerts), and what an alert needs.
            "display-message", "-p", "-t", pane, _PREVIOUS + _SEP.join(one_line_field(f) for f in ALERT_FIELDS), ";",
            *state_commands(pane, state),
        ]  # fmt: skip
    out = _tmux(socket, args)
    if out is None or out.returncode != 0:
        return False  # the pane is gone, or tmux is busy: the display is best effort
    if meters is not None:
        _remember(meter_stamp, meters)
    if state is None:
        return True
    _remember(state_stamp, state)
    before: list[str] = []
    for line in out.stdout.splitlines():
        if line.startswith(_PREVIOUS):
            before = line[len(_PREVIOUS) :].split(_SEP)
    if len(before) == len(ALERT_FIELDS) and before[0] != state:
        alert_once(state, socket, pane, dict(zip(ALERT_FIELDS, before)), env, now)
    return True


QUEUED = frozenset({NEEDS_YOU, PAUSED, ERROR, EXITED})
"""Alerting states the attention queue holds (claude_shepherd.supervisor.attention.KINDS): their alert
process is always started, and the queue says whether it is news (a flap is one entry, counted)."""


def alert_once(
    state: str, socket: str, pane: str, fields: dict[str, str], env: t.Mapping[str, str], now: float
) -> bool:
    """*pane* changed into *state* (*fields*: :data:`ALERT_FIELDS` as read before the change): alert.

    A state of :data:`QUEUED` goes to the alert process, where the attention queue pages only for
    news. Any other (done) is dropped if this pane alerted on the same state within
    :data:`ALERT_COOLDOWN` seconds (as its own :data:`ALERTED_OPTION` says; then recorded there, one
    more tmux call only when alerting)."""
    if state not in ALERTING:
        return False
    if state in QUEUED:  # the attention queue decides, in the alert process: a flap is counted there
        return _alert(state, socket, fields, env)
    alerted: dict[str, str] = {}
    for entry in fields.get(ALERTED_OPTION, "").split()[: len(ALERTING)]:
        name, _, when = entry.partition("=")
        seconds = parse_decimal(when, maximum=1e12)
        if name in ALERTING and seconds is not None and 0 <= now - seconds <= ALERT_COOLDOWN:
            alerted[name] = when
    if state in alerted or not _alert(state, socket, fields, env):
        return False
    from claude_shepherd.supervisor.session.programs import run_tmux

    alerted[state] = f"{now:.3f}"
    record = " ".join(f"{name}={when}" for name, when in alerted.items())
    run_tmux(socket, ["set-option", "-p", "-t", pane, ALERTED_OPTION, record], env)
    return True


def _alert(state: str, socket: str, pane: dict[str, str], env: t.Mapping[str, str]) -> bool:
    """The pane changed into an alerting state: tell the person (from a detached process; see alerts)."""
    from claude_shepherd.supervisor import alerts

    return _alert_with(alerts.decode(pane[FLEET_NOTIFY_OPTION]), state, socket, pane, env)


def _alert_with(
    config: t.Any, state: str, socket: str, pane: dict[str, str], env: t.Mapping[str, str]
) -> bool:
    from claude_shepherd.supervisor import alerts

    return alerts.dispatch(
        config,
        state=state,
        socket=socket,
        fleet=pane["session_name"],
        window=pane["window_name"],
        label=pane[LABEL_OPTION] or pane["pane_id"],
        tty=pane["pane_tty"],
        env=env,
        agent=f"{pane['session_name']}:{pane['window_name']}:{pane[LABEL_OPTION]}"
        if pane[LABEL_OPTION]
        else pane["pane_id"],
        pane=pane["pane_id"],
    )


def _own_alert_fields(env: t.Mapping[str, str]) -> tuple[str, dict[str, str]] | None:
    """The calling fleet pane's socket and :data:`ALERT_FIELDS`, for an alert that is no state change;
    None outside a fleet pane or when tmux does not answer."""
    socket = fleet_socket(env)
    if socket is None:
        return None
    out = _tmux(
        socket,
        ["display-message", "-p", "-t", env["TMUX_PANE"], _SEP.join(one_line_field(f) for f in ALERT_FIELDS)],
    )
    fields = out.stdout.rstrip("\n").split(_SEP) if out is not None and out.returncode == 0 else []
    return (socket, dict(zip(ALERT_FIELDS, fields))) if len(fields) == len(ALERT_FIELDS) else None


def budget_alert(env: t.Mapping[str, str]) -> bool:
    """Alert that the calling fleet pane's agent spent 80 % of a budget (it is no state change: the
    agent works on), where the fleet alerts on ``paused``; True when an alert was started."""
    found = _own_alert_fields(env)
    if found is None:
        return False
    socket, pane_fields = found
    from claude_shepherd.supervisor import alerts
    from claude_shepherd.supervisor.tmux_names import BUDGET_ALERT, PAUSED

    config = alerts.decode(pane_fields[FLEET_NOTIFY_OPTION])
    if PAUSED not in config.on:
        return False
    config.on = (*config.on, BUDGET_ALERT)
    return _alert_with(config, BUDGET_ALERT, socket, pane_fields, env)


def publish(
    state: str | None,
    *,
    context: float | None = None,
    cost: float | None = None,
    env: t.Mapping[str, str] | None = None,
) -> None:
    """:func:`notify` for hooks: best effort, never raises (the display must not change a decision)."""
    try:
        notify(state, context=context, cost=cost, env=env)
    except Exception:
        pass


def usage_alert(
    window: str, percent: float, resets: float, credential: str, env: t.Mapping[str, str]
) -> bool:
    """A usage window of the pane's credential reached *percent*: alert through the fleet's alert path
    (message, bell, notify command with ``{state}`` = ``usage five_hour 95% …``), whatever states the
    layout alerts on; once per window per reset (the credential's record says which were sent)."""
    found = _own_alert_fields(env)
    if found is None:
        return False
    socket, pane_fields = found
    from claude_shepherd.supervisor import alerts
    from claude_shepherd.supervisor.session.usage_windows import clock

    config = alerts.decode(pane_fields[FLEET_NOTIFY_OPTION])
    state = f"usage {window} {percent:g}% ({credential}, resets {clock(resets)})"
    return _alert_with(alerts.Config(config.command, (state,), config.tmux), state, socket, pane_fields, env)


def main(argv: list[str] | None = None) -> int:
    """``python -m claude_shepherd.supervisor.pane_notify STATE [CONTEXT]``: for scripts and tmux key bindings."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] not in HOOK_STATES:
        sys.stderr.write(
            f"usage: python -m claude_shepherd.supervisor.pane_notify {{{'|'.join(HOOK_STATES)}}} [CONTEXT 0.0-1.0]\n"
        )
        return 2
    usage: float | None = None
    if len(args) > 1:
        usage = parse_decimal(args[1], maximum=1.0)
        if usage is None:
            sys.stderr.write(
                f"pane_notify: error: context {args[1]!r} is not a number from 0 to 1 like 0.42\n"
            )
            return 2
    notify(args[0], context=usage)
    return 0


if __name__ == "__main__":
    sys.exit(main())
