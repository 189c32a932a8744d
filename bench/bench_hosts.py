"""Benchmark: ``fleet status`` of a fleet across hosts, with and without SSH connection reuse.

The other host is another account on 127.0.0.1 behind a real sshd (the test
harness, ``tests/support/sshd.py``: needs root and Debian's openssh-server),
with its own install made by ``fleet host add``. Every figure is the median
wall time of running ``fleet status LAYOUT`` (a new ``fleet`` process, as a
person runs it), measured in one run:

* local only: the same fleet's local part alone (no host named), the floor;
* 1 local + 1 SSH host: with the shared connection (OpenSSH ControlMaster,
  warm) and without it (``FLEET_SSH_REUSE=0``: a handshake per call);
* 1 local + k SSH hosts, k = 1, 2, 4, 8: the same account under k names
  (``remote-1`` … ``remote-8``), each asked at once, each answering for the
  fleet that runs there; with and without reuse.

Goal: the shared connection beats a handshake per call, and k hosts cost far
less than k times one (they are asked at once). Here every "host" is this
machine: the k remote ``fleet`` processes share its CPUs, so what grows with k
is CPU, not waiting on the network. Prints the figures; asserts nothing. Run
(as root):

    .venv/bin/python bench/bench_hosts.py [--rounds 10] [--hosts 1,2,4,8]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from fleet_world import (  # (it puts the test harness, support/, on the path)
    PLAN,
    fleet,
    private_tmux,
    stand_in,
)


def layout(name: str, hosts: list[str]) -> str:
    """One local pane, and one pane on each of *hosts* (a window each)."""
    text = f"name: {name}\nroot: .\nwindows:\n  - here:\n      panes:\n        - L{name}: claude-run\n"
    for n, host in enumerate(hosts):
        text += f"  - w{n}:\n      host: {host}\n      panes:\n        - R{n}{name}: claude-run\n"
    return text


def timed(env: dict[str, str], cwd: Path, layout_file: Path, rounds: int) -> float:
    """Median seconds of ``fleet status LAYOUT --json`` (after one call that is not counted)."""
    samples = []
    for n in range(rounds + 1):
        began = time.perf_counter()
        done = fleet(env, cwd, "status", str(layout_file), "--json")
        took = time.perf_counter() - began
        if done.returncode != 0:
            raise SystemExit(f"fleet status failed: {done.stderr.strip() or done.stdout[-300:]}")
        if n:
            samples.append(took)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--hosts", default="1,2,4,8", help="how many SSH hosts to measure, comma-separated")
    args = parser.parse_args()
    counts = [int(n) for n in args.hosts.split(",") if n.strip()]

    from support.sshd import SshHost, unavailable

    reason = unavailable()
    if reason is not None:
        print(f"bench_hosts: skipped: {reason}")
        return
    remote = SshHost.create()
    base = Path(tempfile.mkdtemp(prefix="bench-hosts-"))
    worlds = ExitStack()
    world = worlds.enter_context(private_tmux())
    project = base / "proj"
    (project / "sessions").mkdir(parents=True)
    (base / "home").mkdir()
    claude, plan = stand_in(base)
    remote_plan = remote.home / "plan.json"
    remote_plan.write_text(json.dumps(PLAN))
    remote_plan.chmod(0o644)
    env = world.env(base, claude, FLEET_SOCKET=world.socket, FLEET_START_SETTLE="0.5", **remote.env)
    try:
        began = time.perf_counter()
        added = fleet({**env, "FLEET_SSH_REUSE": "0"}, project, "host", "add", remote.alias, timeout=900)
        if added.returncode != 0:
            raise SystemExit(f"fleet host add failed: {added.stderr.strip()}")
        print(f"fleet host add: {time.perf_counter() - began:.1f} s (pip fetches the dependencies there)")
        pre = f"pre_window: export FAKE_CLAUDE_SCRIPT={plan}\n"
        remote_pre = f"export FAKE_CLAUDE_SCRIPT={remote_plan}"
        files: dict[int, Path] = {}
        for k in [0, *counts]:  # a fleet of its own for each count: a span is asked for all it runs
            text = layout(f"bench{k}", [f"remote-{n + 1}" for n in range(k)]).replace(
                "windows:\n", pre + "windows:\n", 1
            )
            text = text.replace("      host:", f"      pre: [{json.dumps(remote_pre)}]\n      host:")
            files[k] = project / f"bench{k}.yml"
            files[k].write_text(text)
            started = fleet(env, project, "start", str(files[k]), "--no-attach")
            if started.returncode != 0:
                raise SystemExit(f"fleet start failed:\n{started.stdout}{started.stderr}")

        floor = timed(env, project, files[0], args.rounds)
        print(f"fleet status, median of {args.rounds} (a new fleet process each):")
        print(f"  local only (no host named)            {floor * 1000:7.0f} ms   1.00x")
        for k in counts:
            for reuse in ("1", "0"):
                figure = timed({**env, "FLEET_SSH_REUSE": reuse}, project, files[k], args.rounds)
                how = "shared connection" if reuse == "1" else "a handshake per call"
                print(f"  1 local + {k} SSH host{'s' * (k != 1)}, {how:<20} {figure * 1000:7.0f} ms  "
                      f"{figure / floor:5.2f}x")  # fmt: skip
        for k, path in files.items():
            stopped = fleet(env, project, "stop", str(path), "--grace", "5")
            if stopped.returncode != 0:
                print(f"fleet stop of {k} failed:\n{stopped.stdout}{stopped.stderr}")
    finally:
        for ssh in Path(world.tmux_dir / f"tmux-{os.getuid()}" / "ssh").glob("*"):
            if ssh.is_socket():
                subprocess.run(["ssh", "-S", str(ssh), "-O", "exit", "x"], capture_output=True, timeout=10)
        worlds.close()  # its server killed, what it ran reaped
        remote.close()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
