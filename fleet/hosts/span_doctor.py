"""``fleet doctor`` of a fleet across hosts: each host reachable, running our version and code, with tmux
and a clock near this machine's; then each host's own doctor on its part."""

from __future__ import annotations

import math
import shlex
import time

from claude_shepherd.fleet.handle import HostsReport
from claude_shepherd.fleet.hosts import LOCAL, answer
from claude_shepherd.fleet.hosts.envelope import tell
from claude_shepherd.fleet.hosts.install import RECORD, fingerprint
from claude_shepherd.fleet.hosts.part import STDIN
from claude_shepherd.fleet.hosts.span import Part, Span
from claude_shepherd.fleet.hosts.transport import SLACK, Reply, SshHost, host_timeout
from claude_shepherd.supervisor import __version__

SKEW_LIMIT = 5.0
"""Seconds two hosts' clocks may differ before doctor says so (uptimes and cooldowns compare them)."""


def check_hosts(span: Span, fix: bool) -> HostsReport:
    """Each host: reachable, same version, tmux, clock; then its own doctor (hooks, orphans, bindings),
    which repairs with *fix*."""
    said: list[str] = []
    say = said.append
    digest = fingerprint()

    def checks(part: Part) -> tuple[Reply, float, Reply | None]:
        fleet = part.host.fleet_argv(["--version"])
        installed_at = part.host.home if isinstance(part.host, SshHost) else None  # what host add recorded
        record = shlex.quote(f"{installed_at}/{RECORD}") if installed_at else "/dev/null"
        probe = (
            f"date +%s.%N; {shlex.join(fleet)} 2>&1; command -v tmux >/dev/null && tmux -V || echo 'tmux: missing'; "
            f"cat {record} 2>/dev/null || echo"
        )
        warm = part.host.run(["true"])  # the connection first: the clock's reading is then one round trip
        if not warm.reached:
            return warm, time.time(), None
        before = time.time()
        reply = part.host.run(["sh", "-c", probe])
        middle = (before + time.time()) / 2
        if not reply.reached:
            return reply, middle, None
        args = ["doctor", STDIN, "--json", *(["--fix"] if fix else [])]
        return reply, middle, part.fleet(args, host_timeout() + SLACK)

    problems: list[str | None] = []
    for part, (probe, when, own) in zip(span.parts, span.each(checks)):
        pad = f"{part.name:<{span.width}}  "
        if not probe.reached:
            say(f"{pad}unreachable: {probe.problem}; nothing checked or fixed there")
            problems.append(f"{part.name} unreachable")
            continue
        lines = probe.stdout.strip().splitlines()
        clock = _seconds(lines[0]) if lines else None
        version = _word(lines[1].removeprefix("fleet ")) if len(lines) > 1 else ""
        tmux = _word(lines[2]) if len(lines) > 2 else ""
        installed = _installed(lines[3] if len(lines) > 3 else "")
        found: list[str] = []
        if version != __version__:
            found.append(
                f"claude-shepherd {version or 'is not installed'} there, {__version__} here; "
                f"run `fleet host add {part.name}`"
            )
        elif part.name != LOCAL and installed is not None and installed != digest:
            found.append(
                f"claude-shepherd {version} there is other code than here (installed from another tree); "
                f"run `fleet host add {part.name}`"
            )
        if "missing" in tmux or not tmux.startswith("tmux"):
            found.append("tmux is missing there; install it")
        if clock is not None and abs(clock - when) > SKEW_LIMIT:
            found.append(f"its clock is {clock - when:+.1f} s off this machine's; run NTP on both")
        say(f"{pad}reachable ({probe.seconds * 1000:.0f} ms), claude-shepherd {version or '?'}, {tmux or 'no tmux'}"
            + (f", clock {clock - when:+.1f} s" if clock is not None else ""))  # fmt: skip
        for line in found:
            say(f"{pad}{line}")
        problems.append(f"{part.name}: {'; '.join(found)}" if found else None)
        if own is not None:
            problems.append(tell(say, span, part, own, not_done="its doctor did not run"))
    return HostsReport(said, [p for p in problems if p])


def _installed(text: str) -> str | None:
    """The digest ``fleet host add`` recorded on a host (None when it recorded none)."""
    try:
        record = answer.parse(text)
    except ValueError:  # not JSON, or not within bounds
        return None
    digest = record.get("digest") if isinstance(record, dict) else None
    return digest if isinstance(digest, str) else None


def _seconds(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if 0 < value < math.inf else None


MAX_WORD = 64
"""Characters of a version or a tmux version a host says that are shown (it may say megabytes)."""


def _word(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MAX_WORD else text[: MAX_WORD - 1] + "…"
