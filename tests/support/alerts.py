"""The fleet's notify command in tests: a recorder that appends its argv, as JSON, to a file, and a wait
for the alerts that run it to be over."""

from __future__ import annotations

import json
import sys
import typing as t
from pathlib import Path

import psutil
from support.waiting import wait_until

from claude_shepherd.supervisor.alerts import ALERT_COMMAND

RECORDER = (
    "import json, sys, time\n"
    "out = sys.argv[1]\n"
    "open(out, 'a').write(json.dumps(sys.argv[2:]) + '\\n')\n"
    "if sys.argv[2:3] == ['slow']:\n"
    "    time.sleep(5)\n"
    "    open(out, 'a').write(json.dumps(['finished']) + '\\n')\n"
)
"""Records its arguments; given ``slow`` first, it records ``finished`` 5 s later (if still alive)."""


def recorder(base: Path) -> tuple[list[str], Path]:
    """The recorder's argv (its arguments follow) and the file it appends to."""
    script = base / "recorder.py"
    script.write_text(RECORDER)
    out = base / "alerts.jsonl"
    return [sys.executable, str(script), str(out)], out


def records(out: Path) -> list[list[str]]:
    try:
        return [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    except FileNotFoundError:
        return []


def processes(match: t.Callable[[list[str]], bool]) -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["cmdline"]) if match(p.info["cmdline"] or [])]


def alerting(out: Path) -> list[psutil.Process]:
    """The alerts still under way that record into *out*: the alert process (its payload holds the
    recorder's argv) from its spawn until its end, and the recorder it runs."""
    script = str(out.parent / "recorder.py")
    return processes(
        lambda argv: script in argv or (ALERT_COMMAND in argv and any(str(out) in arg for arg in argv))
    )


def settle(out: Path, count: int, timeout: float = 30) -> list[list[str]]:
    """*count* records, once every alert the hooks started has ended: an extra one would be a broken
    promise (a hook spawns its alert before it exits, so each one is seen)."""
    wait_until(lambda: len(records(out)) >= count or None, timeout, f"{count} alert(s) in {out}")
    wait_until(lambda: not alerting(out), timeout, f"the alerts recording into {out} to end")
    return records(out)
