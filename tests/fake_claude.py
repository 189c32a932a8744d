#!/usr/bin/env python3
"""A stand-in for the ``claude`` executable, for tests of claude-run and the fleet.

It records what it was started with and then does what a per-invocation script
tells it to, so tests can play an agent: call ``session`` commands, request a
restart, ignore SIGTERM, leave grandchildren behind, crash, or just wait.
Standard library only; run it with any Python 3.9+ (tests use a two-line
``claude`` wrapper that execs this file, so process listings show
``fake_claude``).

Environment
-----------
``FAKE_CLAUDE_LOG``
    JSON-lines log, appended to (under ``flock``) by every invocation.
``FAKE_CLAUDE_SCRIPT``
    JSON file with the plans: a list (plan *n* for invocation *n*, counted
    from 0 by the ``start`` events already in the log), or an object
    ``{"invocations": [...], "default": PLAN}``. Invocations beyond the list
    use ``default`` (or exit 0).

A PLAN is a list of steps, or ``{"resume": "check"|"refuse"|"accept",
"steps": [...]}``. With ``--resume ID`` the stand-in behaves like Claude Code:
``check`` (the default) refuses when ``$CLAUDE_CONFIG_DIR`` (else
``~/.claude``) has no ``projects/<cwd with / → ->/ID.jsonl``, ``refuse`` always
refuses — both print ``No conversation found with session ID: ID`` to stderr
and exit 1 — and ``accept`` never does. After the last step it exits 0.

Steps (one key each, plus options)
----------------------------------
``{"session": [ARGS], "stdin": "...", "env": {...}}``
    run ``session ARGS`` (from ``PATH``, as an agent's Bash tool would); an
    ``env`` value of ``null`` removes that variable (``{"WATCHDOG_PID": null}``
    asks for a restart without signalling the watchdog).
``{"run": [ARGV], "stdin": ..., "env": ...}``
    run any command the same way (hooks, the status line); ``"stdin": null``
    gives it our own stdin (the terminal) instead of a pipe.
``{"exit": CODE}``
    exit now.
``{"wait": SECONDS}`` / ``{"wait": null}``
    sleep, or wait until a signal ends us.
``{"on_signal": {"TERM": "ignore" | "exit" | CODE | "log"}}``
    what a signal does. By default, as Claude: TERM exits 143, HUP 129, INT 0;
    every signal received is logged first.
``{"spawn": {"setsid": true, "ignore_term": true, "depth": 1}}``
    start a long-lived helper (this file with ``--fake-claude-helper``), in its
    own session like Claude's Bash tool when ``setsid``; ``depth`` > 1 makes it
    start a child of its own, and so on. Logs ``spawned`` with its PID.
    ``"daemon": true`` double-forks it instead, like ``setsid cmd &`` from a
    Bash tool: a short-lived parent starts it in its own session and exits, so
    it is nobody's descendant (``setsid`` and ``depth`` do not apply).
``{"state": {"dir": D, "set": {...}, "delete": [...]}}``
    edit ``D/.state.json`` directly, without the lock (a racy writer, e.g. a
    status line resurrecting ``sessionId``).
``{"transcript": ID}``
    create the transcript of conversation ID for the current directory.
``{"print": TEXT, "stream": "stdout" | "stderr"}``
``{"mark": NAME}``
    log a named time stamp.
``{"wait_file": PATH, "timeout": SECONDS}``
    wait until PATH exists (a sync point with the test).
``{"read_keys": {"timeout": SECONDS}}``
    read the terminal's keys as Claude's TUI does (raw mode: no echo, no line editing of the
    terminal's; Ctrl-U clears what was typed) until Enter, then log ``keys`` with the text (``null``
    after SECONDS without an Enter) and give the terminal its mode back.

``FAKE_CLAUDE_TRUST=check`` in the environment makes an interactive start (stdin a terminal, no
``-p``) in a folder that neither it nor a parent has trusted (``projects[PATH].hasTrustDialogAccepted``
in ``$CLAUDE_CONFIG_DIR/.claude.json``, else ``~/.claude.json``) show Claude Code's trust dialog as
2.1.328 words it, and wait: Enter (its default, "No, exit") or Esc exits 1 as Claude Code does, after
logging ``dialog``; Down then Enter trusts the folder (written to that file) and goes on.

``--version`` alone answers as Claude Code does (``2.1.332 (Claude Code)``, or
``$FAKE_CLAUDE_VERSION``), logs ``version`` and is no invocation: it takes no
plan (``claude-hook install`` asks it which hook events it has).

``-w NAME`` / ``--worktree NAME`` does what Claude Code does (tests/e2e/test_worktrees_cli.py pins
it): in a git repository, ``.claude/worktrees/NAME`` of its top on a new branch ``worktree-NAME``
from HEAD (``git worktree add``; a ``worktree-NAME`` left without its worktree is reset to HEAD, as
Claude Code does), locked (``git worktree lock``); the same NAME again finds it; then
it runs there (``cwd`` in the log, transcripts under that folder). Outside a repository it exits 1.

Log events: ``start`` (n, pid, ppid, pgid, sid, foreground — whether we own
the terminal —, echo — whether the terminal echoes —, argv, env, cwd, t), ``version`` (argv, cwd),
``refused``, ``session``/``run`` (args, rc, stdout, stderr), ``spawned``
(child), ``signal`` (sig, t), ``state``, ``mark``, ``exit`` (code, t). ``t`` is ``time.monotonic()``, comparable between processes.
"""

from __future__ import annotations

import time

T0 = time.monotonic()

import fcntl  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

LOG_ENV = "FAKE_CLAUDE_LOG"
SCRIPT_ENV = "FAKE_CLAUDE_SCRIPT"
VERSION_ENV = "FAKE_CLAUDE_VERSION"
VERSION = "2.1.332"
DEFAULT_SIGNAL_EXIT = {"TERM": 143, "HUP": 129, "INT": 0}
HELPER_FLAG = "--fake-claude-helper"
DAEMON_FLAG = "--fake-claude-daemon"


def log(event: str, **fields: object) -> None:
    path = os.environ.get(LOG_ENV)
    if not path:
        return
    line = json.dumps({"event": event, "pid": os.getpid(), **fields}) + "\n"
    with open(path, "a", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.write(line)
        handle.flush()


def record_start(fields: dict) -> int:
    """Log the ``start`` event; returns how many invocations started before this one."""
    path = os.environ.get(LOG_ENV)
    if not path:
        return 0
    with open(path, "a+", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        count = sum(1 for line in handle if line.startswith('{"event": "start"'))
        handle.write(json.dumps({"event": "start", "n": count, "pid": os.getpid(), **fields}) + "\n")
        handle.flush()
    return count


def load_plan(n: int) -> dict:
    path = os.environ.get(SCRIPT_ENV)
    plan: object = []
    if path:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        invocations = data if isinstance(data, list) else data.get("invocations", [])
        default = [] if isinstance(data, list) else data.get("default", [])
        plan = invocations[n] if n < len(invocations) else default
    if isinstance(plan, list):
        plan = {"steps": plan}
    return plan  # type: ignore[return-value]


def config_dir() -> Path:
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(configured) if configured else Path.home() / ".claude"


def transcript_path(session_id: str) -> Path:
    return config_dir() / "projects" / os.getcwd().replace("/", "-") / f"{session_id}.jsonl"


def resume_id(argv: list[str]) -> str | None:
    for i, arg in enumerate(argv):
        if arg in ("--resume", "-r") and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--resume="):
            return arg.split("=", 1)[1]
    return None


def worktree_name(argv: list[str]) -> str | None:
    for i, arg in enumerate(argv):
        if arg in ("-w", "--worktree") and i + 1 < len(argv) and not argv[i + 1].startswith("-"):
            return argv[i + 1]
        if arg.startswith("--worktree="):
            return arg.split("=", 1)[1]
    return None


def enter_worktree(name: str) -> None:
    """Make (or find) worktree NAME as Claude Code does, and run there."""

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], capture_output=True, text=True)

    top = git("rev-parse", "--show-toplevel")
    if top.returncode != 0:
        print("Error: --worktree needs a git repository", file=sys.stderr, flush=True)
        finish(1)
    path = Path(top.stdout.strip()) / ".claude" / "worktrees" / name
    if not (path / ".git").exists():
        began = time.monotonic()
        # Claude Code (2.1.328 and 2.1.332) resets a kept ``worktree-NAME`` to HEAD when its worktree
        # is gone (tests/e2e/test_worktrees_cli.py pins it): -B, as it does.
        made = git("worktree", "add", "-B", f"worktree-{name}", str(path), "HEAD")
        if made.returncode != 0:
            print(f"Error: cannot create worktree {name}: {made.stderr.strip()}", file=sys.stderr, flush=True)
            log("worktree", name=name, error=made.stderr)
            finish(1)
        git("worktree", "lock", "--reason", "claude agent", str(path))
        log("worktree", name=name, path=str(path), created=True, began=began, ended=time.monotonic())
    os.chdir(path)


def foreground() -> bool | None:
    try:
        return os.tcgetpgrp(0) == os.getpgrp()
    except OSError:
        return None


def tty_echo() -> bool | None:
    """Is the terminal in its normal (echoing) mode?"""
    try:
        import termios

        return bool(termios.tcgetattr(0)[3] & termios.ECHO)
    except (ImportError, OSError, Exception):
        return None


def finish(code: int) -> None:
    log("exit", code=code, t=time.monotonic())
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


SIGNAL_ACTIONS: dict[str, object] = dict(DEFAULT_SIGNAL_EXIT)


def on_signal(signum: int, frame: object) -> None:
    name = signal.Signals(signum).name[3:]
    log("signal", sig=name, t=time.monotonic())
    action = SIGNAL_ACTIONS.get(name, "log")
    if action == "exit":
        finish(128 + signum)
    elif isinstance(action, int):
        finish(action)


def set_signal_actions(actions: dict[str, object]) -> None:
    for name, action in actions.items():
        SIGNAL_ACTIONS[name] = action
        sig = getattr(signal, "SIG" + name)
        signal.signal(sig, signal.SIG_IGN if action == "ignore" else on_signal)


def child_env(overrides: dict | None) -> dict[str, str]:
    env = dict(os.environ)
    for key, value in (overrides or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = str(value)
    return env


def run_command(kind: str, argv: list[str], step: dict) -> None:
    stdin = step.get("stdin", "")
    try:
        done = subprocess.run(
            argv,
            input=stdin,  # None: the command reads our stdin (the terminal)
            capture_output=True,
            text=True,
            env=child_env(step.get("env")),
            timeout=step.get("timeout", 30),
        )
        log(kind, args=argv, rc=done.returncode, stdout=done.stdout, stderr=done.stderr)
    except (OSError, subprocess.TimeoutExpired) as exc:
        log(kind, args=argv, rc=None, error=str(exc))


def spawn(options: dict) -> None:
    setsid = bool(options.get("setsid", True))
    ignore_term = bool(options.get("ignore_term"))
    if options.get("daemon"):
        log("spawned", child=start_daemon(ignore_term), setsid=True, ignore_term=ignore_term, daemon=True)
        return
    proc = start_helper(ignore_term, int(options.get("depth", 1)), setsid)
    log("spawned", child=proc.pid, setsid=setsid, ignore_term=ignore_term)


def start_daemon(ignore_term: bool) -> int:
    """Double-fork a helper; returns its PID once it runs and its parent has exited."""
    proc = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), DAEMON_FLAG, "1" if ignore_term else "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    pid = int(proc.stdout.readline())
    proc.stdout.close()
    proc.wait()
    return pid


def daemonize(ignore_term: bool) -> None:
    """The short-lived parent of a daemon: start it in its own session, say its PID, exit."""
    helper_proc = start_helper(ignore_term, 1, setsid=True)
    print(helper_proc.pid, flush=True)
    os._exit(0)


def start_helper(ignore_term: bool, depth: int, setsid: bool) -> subprocess.Popen:
    """Start a helper and return once it and all its descendants are running."""
    proc = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), HELPER_FLAG, "1" if ignore_term else "0", str(depth)],
        start_new_session=setsid,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    proc.stdout.read(1)  # the helper's "ready"
    proc.stdout.close()
    return proc


def helper(ignore_term: bool, depth: int) -> None:
    """A long-lived descendant (what a Bash tool or an MCP server is to Claude)."""
    if ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if depth > 1:
        start_helper(ignore_term, depth - 1, setsid=False)
    os.write(1, b"r")
    os.close(1)
    time.sleep(600)


def edit_state(options: dict) -> None:
    path = Path(options["dir"]) / ".state.json"
    state = json.loads(path.read_text(encoding="utf-8"))
    state.update(options.get("set", {}))
    for key in options.get("delete", []):
        state.pop(key, None)
    tmp = path.with_name(f".fake-{os.getpid()}")
    tmp.write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    log("state", dir=str(path.parent), set=options.get("set", {}), delete=options.get("delete", []))


def wait_for_file(path: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.01)


TRUST_DIALOG = """\
{rule}
 Accessing workspace:

 {folder}

 Quick safety check: Is this a project you created or one you trust? (Like your own code, a well-known \
open source project, or work from your team). If not, take a moment to review what's in this folder first.

 Claude Code'll be able to read, edit, and execute files here.

 Security guide

 \u276f No, exit
   Yes, I trust this folder

 Enter to confirm \u00b7 Esc to cancel
"""
"""Claude Code 2.1.328's trust dialog (tests/e2e: a scratch HOME that does not trust the project)."""
NOT_TRUSTED = "Claude Code didn't start because this folder isn't trusted.\nRun claude again and choose Yes, or run it in another folder."


def global_config() -> Path:
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(configured) / ".claude.json" if configured else Path.home() / ".claude.json"


def trusted(folder: str) -> bool:
    try:
        projects = json.loads(global_config().read_text(encoding="utf-8")).get("projects", {})
    except (OSError, ValueError, AttributeError):
        return False
    here = Path(folder)
    return any(projects.get(str(p), {}).get("hasTrustDialogAccepted") for p in (here, *here.parents))


class RawKeys:
    """The terminal in raw mode while Claude's TUI reads it (restored after)."""

    def __enter__(self) -> RawKeys:
        import termios
        import tty

        self.saved = termios.tcgetattr(0)
        tty.setraw(0)
        return self

    def __exit__(self, *exc: object) -> None:
        import termios

        termios.tcsetattr(0, termios.TCSADRAIN, self.saved)

    @staticmethod
    def key(timeout: float) -> bytes | None:
        import select

        ready, _, _ = select.select([0], [], [], max(timeout, 0))
        return os.read(0, 64) if ready else None


def trust_dialog(argv: list[str]) -> None:
    """As Claude Code starts in a folder nobody trusted: the dialog, and what its answer does."""
    folder = os.getcwd()
    if os.environ.get("FAKE_CLAUDE_TRUST") != "check" or "-p" in argv or "--print" in argv:
        return
    if not os.isatty(0) or trusted(folder):
        return
    columns = os.get_terminal_size(1).columns if os.isatty(1) else 80
    sys.stdout.write(TRUST_DIALOG.format(rule="\u2500" * columns, folder=folder).replace("\n", "\r\n"))
    sys.stdout.flush()
    log("dialog", kind="trust", folder=folder)
    down = False
    with RawKeys() as keys:
        while True:
            key = keys.key(3600)
            if key is None or (key.startswith(b"\x1b") and not key.startswith(b"\x1b[")):
                break  # Esc: cancelled
            down = down or key == b"\x1b[B"
            if key in (b"\r", b"\n"):
                break
    if not down or key not in (b"\r", b"\n"):
        print(NOT_TRUSTED, flush=True)
        finish(1)
    config = global_config()
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    data.setdefault("projects", {}).setdefault(folder, {})["hasTrustDialogAccepted"] = True
    config.write_text(json.dumps(data), encoding="utf-8")
    log("trusted", folder=folder)


def read_keys(options: dict) -> None:
    """Read a line of keys as Claude's input box does: raw, each key as it comes, Ctrl-U clears."""
    deadline = time.monotonic() + float(options.get("timeout", 30))
    typed = b""
    with RawKeys() as keys:
        while (key := keys.key(deadline - time.monotonic())) is not None:
            for byte in key:
                if byte in (0x0D, 0x0A):
                    log("keys", text=typed.decode("utf-8", "replace"), at=time.time())
                    return
                typed = b"" if byte == 0x15 else typed + bytes([byte])
    log("keys", text=None, pending=typed.decode("utf-8", "replace"))


def step(action: dict) -> None:
    if "session" in action:
        run_command("session", ["session", *action["session"]], action)
    elif "run" in action:
        run_command("run", list(action["run"]), action)
    elif "exit" in action:
        finish(int(action["exit"]))
    elif "wait" in action:
        seconds = action["wait"]
        if seconds is None:
            while True:
                signal.pause()
        deadline = time.monotonic() + float(seconds)
        while (left := deadline - time.monotonic()) > 0:
            time.sleep(left)
    elif "on_signal" in action:
        set_signal_actions(action["on_signal"])
    elif "spawn" in action:
        spawn(action["spawn"] or {})
    elif "state" in action:
        edit_state(action["state"])
    elif "transcript" in action:
        path = transcript_path(action["transcript"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('{"type":"summary"}\n', encoding="utf-8")
    elif "print" in action:
        stream = sys.stderr if action.get("stream") == "stderr" else sys.stdout
        print(action["print"], file=stream, flush=True)
    elif "mark" in action:
        log("mark", name=action["mark"], t=time.monotonic())
    elif "wait_file" in action:
        wait_for_file(action["wait_file"], float(action.get("timeout", 30)))
    elif "read_keys" in action:
        read_keys(action["read_keys"] or {})
    else:
        raise SystemExit(f"fake_claude: unknown step {action!r}")


def main() -> None:
    if sys.argv[1:2] == [HELPER_FLAG]:
        helper(sys.argv[2] == "1", int(sys.argv[3]))
        return
    if sys.argv[1:2] == [DAEMON_FLAG]:
        daemonize(sys.argv[2] == "1")
    argv = sys.argv[1:]
    if argv == ["--version"]:
        log("version", argv=argv, cwd=os.getcwd())
        print(f"{os.environ.get(VERSION_ENV, VERSION)} (Claude Code)", flush=True)
        return
    set_signal_actions(dict(DEFAULT_SIGNAL_EXIT))
    tree = worktree_name(argv)
    if tree:
        enter_worktree(tree)
    n = record_start(
        {
            "ppid": os.getppid(),
            "pgid": os.getpgrp(),
            "sid": os.getsid(0),
            "foreground": foreground(),
            "echo": tty_echo(),
            "argv": argv,
            "env": dict(os.environ),
            "cwd": os.getcwd(),
            "t": T0,
        }
    )
    plan = load_plan(n)
    wanted = resume_id(argv)
    mode = plan.get("resume", "check")
    if wanted and (mode == "refuse" or (mode == "check" and not transcript_path(wanted).is_file())):
        print(f"No conversation found with session ID: {wanted}", file=sys.stderr, flush=True)
        log("refused", session_id=wanted)
        finish(1)
    trust_dialog(argv)
    for action in plan.get("steps", []):
        step(action)
    finish(0)


if __name__ == "__main__":
    main()
