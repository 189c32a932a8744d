"""``fleet boot``: a systemd user unit (Linux) or a launchd agent (macOS) that runs ``fleet start --all``
at boot or login, through this installation's absolute paths.

The unit only starts fleets: it never owns the tmux servers it starts. Each
server daemonizes out of ``fleet``, but stays in the unit's cgroup, and
systemd's default ``KillMode=control-group`` kills everything in it when the
unit stops (or when its oneshot process ends): the fleet would go down with the
unit. So the unit is ``Type=oneshot`` with ``KillMode=process``: a stop of the
unit signals only a ``fleet start --all`` still running, never an agent or a
server. A server left in the unit's cgroup is no problem for the next run: it
is on its socket, and ``fleet start`` reconciles a running fleet (no agent
twice). launchd's equivalent is ``AbandonProcessGroup``.

The unit names this installation (the ``fleet`` script next to this
interpreter) and carries the environment a boot lacks (``PATH`` with tmux,
``HOME``, the ``XDG_*`` folders, Claude's and the fleet's settings) but no
secret: a variable whose name says key, token, secret or password is not
written. ``fleet boot status`` says when the unit names another installation.
"""

from __future__ import annotations

import os
import plistlib
import pwd
import re
import shlex
import shutil
import subprocess
import sys
import time
import typing as t
from dataclasses import dataclass
from pathlib import Path

from claude_shepherd.fleet.environment import AGENT_ROOT, scripts_dir
from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.session.store import write_atomic_at

UNIT = "claude-shepherd-fleets.service"
AGENT_LABEL = "com.claude-shepherd.fleets"
WANTS = "default.target.wants"
KEPT = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "TMUX_TMPDIR", "TMPDIR",
        "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME")  # fmt: skip
"""Variables a boot's environment lacks and a fleet reads, written into the unit as they are now."""
KEPT_PREFIXES = ("CLAUDE_", "FLEET_")
"""Our settings and Claude Code's (``CLAUDE_CONFIG_DIR``, ``CLAUDE_BIN``, ``FLEET_START_WAIT``...)."""
SECRET = re.compile(r"KEY|TOKEN|SECRET|PASS|PWD|CREDENTIAL|AUTH|COOKIE|BEARER|JWT", re.IGNORECASE)
NOT_KEPT = frozenset({"FLEET_SOCKET", "FLEET_LAYOUT", "CLAUDE_SUPERVISOR_PID", "CLAUDE_PID", "CLAUDECODE",
                      "CLAUDE_CODE_SESSION_ID", "CLAUDE_CODE_ENTRYPOINT", "SESSION_REQUIRED"})  # fmt: skip
"""Not the boot's: a fleet of its own, or an agent's identity (``boot enable`` run inside an agent)."""
LINGER = "loginctl enable-linger {user}"


class BootError(ShepherdError):
    """The boot unit could not be written or removed."""


@dataclass(frozen=True)
class Plan:
    """Where the unit goes and what it says."""

    kind: str
    """``systemd`` or ``launchd``."""
    path: Path
    text: str
    argv: tuple[str, ...]


def command(env: t.Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The command the unit runs: this installation's ``fleet start --all``."""
    scripts = scripts_dir()
    if scripts is None or not os.access(scripts / "fleet", os.X_OK):
        raise BootError(
            "this installation has no `fleet` script next to its interpreter; reinstall it: pip install claude-shepherd"
        )
    return (str((scripts / "fleet").absolute()), "start", "--all")


def environment(env: t.Mapping[str, str] | None = None) -> dict[str, str]:
    """What the unit sets: :data:`KEPT` and our settings, as now, with tmux's folder on ``PATH``."""
    env = os.environ if env is None else env
    out = {k: v for k, v in env.items() if (k in KEPT or k.startswith(KEPT_PREFIXES)) and k not in NOT_KEPT
           and not SECRET.search(k) and "\n" not in v and "\0" not in v}  # fmt: skip
    if env.get("CLAUDE_SUPERVISOR_PID"):  # run by an agent: its sessions root is not the boot's
        out.pop(AGENT_ROOT, None)
    out.setdefault("HOME", os.path.expanduser("~"))
    path = out.get("PATH", "/usr/local/bin:/usr/bin:/bin")
    tmux = shutil.which("tmux", path=path) or shutil.which("tmux")
    if tmux is None:
        raise BootError(
            "tmux is not on PATH; install it (e.g. apt install tmux), then run fleet boot enable again"
        )
    folder = str(Path(tmux).parent)
    if folder not in path.split(os.pathsep):
        path = f"{path}{os.pathsep}{folder}"
    out["PATH"] = path
    return dict(sorted(out.items()))


def kind_here() -> str:
    return "launchd" if sys.platform == "darwin" else "systemd"


def plan(kind: str | None = None, env: t.Mapping[str, str] | None = None) -> Plan:
    """The unit for this installation (of *kind*, else this platform's)."""
    env = os.environ if env is None else env
    kind = kind or kind_here()
    argv, variables = command(env), environment(env)
    if kind == "launchd":
        return Plan(kind, launchd_path(env), launchd_text(argv, variables, env), argv)
    return Plan(kind, unit_path(env), unit_text(argv, variables), argv)


def unit_path(env: t.Mapping[str, str]) -> Path:
    config = env.get("XDG_CONFIG_HOME", "")
    base = (
        Path(config)
        if os.path.isabs(config)
        else Path(env.get("HOME") or os.path.expanduser("~")) / ".config"
    )
    return base / "systemd" / "user" / UNIT


def launchd_path(env: t.Mapping[str, str]) -> Path:
    return (
        Path(env.get("HOME") or os.path.expanduser("~")) / "Library" / "LaunchAgents" / f"{AGENT_LABEL}.plist"
    )


def _escape(value: str, *, command: bool = False) -> str:
    """A value in a systemd unit: ``%`` specifiers off, quotes and backslashes escaped, and in a command
    ``$`` expansion off (``Environment=`` expands no ``$``: there ``$$`` would stay two)."""
    value = value.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    return value.replace("$", "$$") if command else value


def unit_text(argv: t.Sequence[str], variables: t.Mapping[str, str]) -> str:
    """The systemd user unit: see the module docstring for why each setting."""
    if any(c in argv[0] for c in '\\"'):
        raise BootError(
            f"{argv[0]}: a systemd unit cannot run a program whose path holds a backslash or a quote; "
            "install claude-shepherd in a folder without them"
        )
    exec_start = " ".join(f'"{_escape(word, command=True)}"' for word in argv)
    lines = [
        "# Written by `fleet boot enable`; `fleet boot status` checks it, `fleet boot disable` removes it.",
        "[Unit]",
        "Description=claude-shepherd: start every fleet that was running (fleet start --all)",
        "",
        "[Service]",
        "# A oneshot that starts fleets and ends; it never owns the tmux servers it starts.",
        "Type=oneshot",
        "RemainAfterExit=no",
        "# KillMode=process: the default (control-group) would kill every tmux server and agent this unit",
        "# started when the unit stops or its process ends. With process, a `systemctl --user stop` signals",
        "# only a `fleet start --all` still running; a server left behind is reconciled by the next start.",
        "KillMode=process",
        "TimeoutStartSec=30min",
        *(f'Environment="{_escape(k)}={_escape(v)}"' for k, v in variables.items()),
        f"ExecStart={exec_start}",
        "",
        "[Install]",
        "WantedBy=default.target",
        "",
    ]
    return "\n".join(lines)


def launchd_text(argv: t.Sequence[str], variables: t.Mapping[str, str], env: t.Mapping[str, str]) -> str:
    """The launchd agent: run once at login; ``AbandonProcessGroup`` keeps the tmux servers it starts
    (launchd otherwise kills the job's process group when it exits)."""
    from claude_shepherd.supervisor.session.roots import registry_dir

    log = str(Path(registry_dir(env)) / "start-all.log")
    document = {
        "Label": AGENT_LABEL,
        "ProgramArguments": list(argv),
        "EnvironmentVariables": dict(variables),
        "RunAtLoad": True,
        "KeepAlive": False,
        "AbandonProcessGroup": True,
        "ProcessType": "Background",
        "StandardOutPath": log,
        "StandardErrorPath": log,
    }
    return plistlib.dumps(document).decode()


# --------------------------------------------------------------------------- enable, disable, status


def user_manager() -> str | None:
    """None when a user systemd answers; else why not (a container, no login session)."""
    if shutil.which("systemctl") is None:
        return "systemctl is not installed"
    try:
        done = subprocess.run(["systemctl", "--user", "show-environment"], capture_output=True, text=True,
                              timeout=10, stdin=subprocess.DEVNULL, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode == 0:
        return None
    return (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]


def _user() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return os.environ.get("USER") or str(os.getuid())


def linger_line() -> str:
    user = _user()
    if Path("/var/lib/systemd/linger", user).exists():
        return f"Linger is on for {user}: the fleets start at boot, before anyone logs in."
    return f"Without linger the fleets start when {user} logs in; for a start at boot: {LINGER.format(user=user)}"


def enable(say: t.Callable[[str], object], kind: str | None = None) -> Plan:
    """Write the unit (again: an old one is replaced, so it names this installation) and enable it."""
    unit = plan(kind)
    try:
        unit.path.parent.mkdir(parents=True, exist_ok=True)
        folder = os.open(unit.path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:  # private (it carries the environment), never written through a planted link
            write_atomic_at(folder, unit.path.name, unit.text, mode=0o600, keep_mode=True)
        finally:
            os.close(folder)
    except OSError as exc:
        raise BootError(
            f"cannot write {unit.path}: {exc.strerror or exc}; check that folder, then enable again"
        ) from None
    say(
        f"Wrote {unit.path}: at {'login' if unit.kind == 'launchd' else 'boot'} it runs {shlex.join(unit.argv)}"
    )
    if unit.kind == "launchd":
        _launchctl(unit, say)
        return unit
    wants = unit.path.parent / WANTS / UNIT
    try:
        wants.parent.mkdir(exist_ok=True)
        if not (wants.is_symlink() and os.readlink(wants) == str(Path("..") / UNIT)):
            wants.unlink(missing_ok=True)  # a link elsewhere (or a file) would run something else
            wants.symlink_to(
                Path("..") / UNIT
            )  # what `systemctl --user enable` makes: works without a manager
    except OSError as exc:
        raise BootError(
            f"cannot enable it ({wants}: {exc.strerror or exc}); run: systemctl --user enable {UNIT}"
        ) from None
    why_not = user_manager()
    if why_not is None:
        subprocess.run(["systemctl", "--user", "daemon-reload"], capture_output=True, timeout=30, check=False)
        say(
            f"Enabled: the user systemd runs it at each start of {_user()}'s manager (`systemctl --user start {UNIT}` runs it now)."
        )
    else:
        say(f"Enabled for the next boot; no user systemd runs here now ({why_not}), so nothing was started.")
    say(linger_line())
    return unit


def _launchctl(unit: Plan, say: t.Callable[[str], object]) -> None:
    """Load the agent anew (``bootout`` then ``bootstrap``: ``kickstart`` would keep the old program)."""
    if sys.platform != "darwin":
        say("Not macOS: launchctl was not asked to load it.")
        return
    domain = f"gui/{os.getuid()}"
    subprocess.run(
        ["launchctl", "bootout", domain, str(unit.path)], capture_output=True, timeout=30, check=False
    )
    done = subprocess.run(["launchctl", "bootstrap", domain, str(unit.path)], capture_output=True, text=True,
                          timeout=30, check=False)  # fmt: skip
    if done.returncode != 0:
        raise BootError(
            f"launchctl bootstrap failed: {done.stderr.strip()}; run: launchctl bootstrap {domain} {unit.path}"
        )
    say("Loaded: launchd runs it at each login.")


def disable(say: t.Callable[[str], object], kind: str | None = None) -> None:
    """Remove the unit (and its enabling link); the fleets running now are left alone."""
    kind = kind or kind_here()
    path = launchd_path(os.environ) if kind == "launchd" else unit_path(os.environ)
    wants = path.parent / WANTS / UNIT
    if not path.exists() and not wants.is_symlink():
        say("Boot start is not enabled; nothing to remove.")
        return
    if kind == "launchd" and sys.platform == "darwin":
        subprocess.run(["launchctl", "bootout", f"gui/{os.getuid()}", str(path)], capture_output=True, timeout=30,
                       check=False)  # fmt: skip
    if kind == "systemd":
        wants.unlink(missing_ok=True)
    path.unlink(missing_ok=True)
    if kind == "systemd" and user_manager() is None:
        subprocess.run(["systemctl", "--user", "daemon-reload"], capture_output=True, timeout=30, check=False)
    say(f"Removed {path}: no fleet starts at boot. The fleets running now are left alone.")


def exec_start(text: str) -> tuple[str, ...] | None:
    """The command a unit's (or agent's) text runs, as written in it."""
    if text.lstrip().startswith("<?xml"):
        try:
            args = plistlib.loads(text.encode()).get("ProgramArguments")
        except (ValueError, AttributeError):
            return None
        return tuple(str(a) for a in args) if isinstance(args, list) else None
    for line in text.splitlines():
        if line.startswith("ExecStart="):
            try:
                words = shlex.split(line.removeprefix("ExecStart="))
            except ValueError:
                return None
            return tuple(w.replace("%%", "%").replace("$$", "$") for w in words)
    return None


WRITTEN = ("Description", "Type", "RemainAfterExit", "KillMode", "TimeoutStartSec", "Environment", "ExecStart",
           "WantedBy")  # fmt: skip
"""The directives `fleet boot enable` writes into the unit: any other (``ExecStartPre=``…) was added."""


def _foreign_lines(text: str) -> list[str]:
    """The unit's directives enable does not write, and the variables it does not set (``LD_PRELOAD``…)."""
    found = []
    for line in text.splitlines():
        key, eq, value = line.partition("=")
        if not eq or line.startswith(("#", ";", "[")):
            continue
        if key.strip() not in WRITTEN:
            found.append(key.strip() + "=")
        elif key.strip() == "Environment":
            name = value.strip().strip('"').split("=", 1)[0]
            if not (name in KEPT or name.startswith(KEPT_PREFIXES)) or name in NOT_KEPT:
                found.append(f"Environment={name}")
    return found


def status_lines(kind: str | None = None, now: float | None = None) -> list[str]:
    """Whether boot start is enabled, what it runs (this installation or not), and its last runs."""
    from claude_shepherd.fleet.start_all import last_runs

    kind = kind or kind_here()
    path = launchd_path(os.environ) if kind == "launchd" else unit_path(os.environ)
    try:
        text = path.read_text()
    except OSError:
        return [f"Boot start is not enabled ({path} does not exist); enable it: fleet boot enable"]
    enabled = kind == "launchd" or (path.parent / WANTS / UNIT).is_symlink()
    lines = [f"Boot start is {'enabled' if enabled else 'written but not enabled'}: {path}"]
    if not enabled:
        lines[0] += "; enable it: fleet boot enable"
    runs, here = exec_start(text), command()
    foreign = _foreign_lines(text) if kind == "systemd" else []
    if foreign:
        lines.append(
            f"It has lines `fleet boot enable` does not write ({', '.join(foreign[:3])}): it may run more than "
            "this installation at boot; read it, then rewrite it: fleet boot enable"
        )
    if runs is None:
        lines.append("It names no command this version can read; rewrite it: fleet boot enable")
    elif runs != here and runs[0] == here[0]:
        lines.append(f"It runs {shlex.join(runs)}, not {shlex.join(here)}; rewrite it: fleet boot enable")
    elif runs[0] != here[0]:
        gone = "" if os.access(runs[0], os.X_OK) else ", which no longer exists"
        lines.append(
            f"It runs another installation: {runs[0]}{gone}, not this one ({here[0]}); rewrite it: fleet boot enable"
        )
    else:
        lines.append(f"It runs this installation: {shlex.join(runs)}")
    if kind == "systemd":
        lines.append(linger_line())
    past = last_runs()
    if not past:
        lines.append("`fleet start --all` has not run yet.")
        return lines
    last = past[-1]
    ago = max(0.0, (time.time() if now is None else now) - float(last.get("at", 0)))
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(last.get("at", 0))))
    lines.append(
        f"Last `fleet start --all`: {when} ({_ago(ago)} ago), {'ok' if last.get('ok') else 'FAILED'}:"
    )
    lines += [f"  {line}" for line in last.get("lines", []) if isinstance(line, str)]
    return lines


def _ago(seconds: float) -> str:
    for size, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"
