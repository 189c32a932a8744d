"""Benchmark: start and stop a 16-pane fleet of supervised (stand-in) Claudes.

* start: from running ``fleet start`` to every pane's Claude running (the
  stand-in's first line, logged with a monotonic time stamp);
* stop: from running ``fleet stop`` to no process of the fleet left (every
  process carries a tag in its environment; the check uses psutil);
* watch refresh: one gathering of ``fleet watch``'s rows (tmux, the process
  table, each pane's session) while the fleet runs; it happens once per
  refresh interval (1 s by default), in a worker thread;
* alerts: the installed Notification hook in a fleet pane, every call a
  transition (needs-you, then done, ...), with the fleet's alerts on (tmux
  bell and message, and a command) and off (``notify: false``), against the
  floor ``python -I -c 'import json'``, all in one run.

Each pane runs the real ``claude-run`` with ``CLAUDE_BIN`` pointing at
``tests/fake_claude.py`` on a private tmux socket (``fleet-bench-*`` in a
private ``TMUX_TMPDIR``). Prints the figures; asserts nothing. Run:

    .venv/bin/python bench/bench_fleet.py [--panes 16] [--rounds 3] [--grace 10]

Goals: start ≤ 3 s; stop ≤ grace + 1 s (in practice it is far below the
grace: every claude-run stops its Claude on SIGTERM). Starting 16 Python
supervisors (and their watchdogs and 16 stand-in Pythons) is most of the start
figure: the CPU one claude-run start-up costs is printed, with the floor it
puts under the start figure on this machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bytecode import compile_package  # bench/, this script's folder
from fleet_world import BIN, exit_on_sigterm, layout, private_tmux, stand_in, until_up


def watch_refresh(tmux_dir: Path, panes: int, times: int = 10) -> float:
    """Median seconds of one ``fleet watch`` refresh, gathered the way the watch does it."""
    from claude_shepherd.fleet import watch

    saved = os.environ.get("TMUX_TMPDIR")
    os.environ["TMUX_TMPDIR"] = str(tmux_dir)  # where the watch looks for fleet sockets
    try:
        samples = []
        for _ in range(times):
            began = time.perf_counter()
            rows = watch.gather().rows
            samples.append(time.perf_counter() - began)
        if len(rows) != panes:
            raise SystemExit(f"fleet watch saw {len(rows)} of {panes} panes")
        return statistics.median(samples)
    finally:
        if saved is None:
            os.environ.pop("TMUX_TMPDIR", None)
        else:
            os.environ["TMUX_TMPDIR"] = saved


def alert_cost(rounds: int) -> dict[str, float]:
    """p50 seconds of the Notification hook in a fleet pane with alerts on and off, and the floor."""
    import shlex

    from claude_shepherd.hooks.claude_settings import NOTIFICATION, hook_command
    from claude_shepherd.supervisor import alerts

    tmux_dir = Path(tempfile.mkdtemp(prefix="flb-", dir="/tmp"))
    socket = f"fleet-bench-{uuid.uuid4().hex[:12]}"
    tmux = shutil.which("tmux") or "tmux"
    server_env = {**os.environ, "TMUX_TMPDIR": str(tmux_dir)}

    def run_tmux(*args: str) -> str:
        return subprocess.run([tmux, "-L", socket, *args], env=server_env, check=True, capture_output=True,
                              text=True, timeout=10).stdout.strip()  # fmt: skip

    settings = {
        "alerts on (bell, message, command)": alerts.encode(["true", "{label}"], ["needs-you", "done"]),
        "alerts off (notify: false)": alerts.encode(None, ["needs-you", "done"], tmux=False),
    }
    try:
        (tmux_dir / "run").mkdir(mode=0o700)
        envs: dict[str, dict[str, str]] = {}
        for number, (name, value) in enumerate(settings.items()):
            # A fleet session per setting, so every call of each is a transition of its own pane.
            session = f"bench{number}"
            run_tmux("-f", "/dev/null", "new-session", "-d", "-s", session, "sleep 600")
            run_tmux(
                "new-window", "-d", "-t", f"{session}:", "sleep 600"
            )  # the bell is flagged on a window not shown
            run_tmux("set-option", "-p", "-t", f"{session}:0", "@pane_label", "A")
            run_tmux("set-option", "-t", f"{session}:", "@fleet_notify", value)
            pane = run_tmux("display-message", "-p", "-t", f"{session}:0", "#{pane_id}")
            path, pid = run_tmux("display-message", "-p", "#{socket_path} #{pid}").split()
            envs[name] = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmux_dir), "TMUX": f"{path},{pid},0",
                          "TMUX_PANE": pane, "XDG_RUNTIME_DIR": str(tmux_dir / "run"), "CLAUDE_SHEPHERD_TMUX": tmux}  # fmt: skip
        hook = shlex.split(hook_command(NOTIFICATION))
        asks = [b'{"notification_type": "permission_prompt"}', b'{"notification_type": "idle_prompt"}']
        floor = "floor: python -I -c 'import json'"
        times: dict[str, list[float]] = {floor: [], **{name: [] for name in settings}}
        for n in range(rounds + 4):  # every call changes its pane's state: a transition, never throttled
            for name in settings:
                time.sleep(0.3)  # transitions are minutes apart: the last alert's process has finished
                began = time.perf_counter()
                subprocess.run(hook, input=asks[n % 2], env=envs[name], check=True, stdout=subprocess.DEVNULL)
                if n >= 4:  # after warming up
                    times[name].append(time.perf_counter() - began)
            time.sleep(0.3)
            began = time.perf_counter()
            subprocess.run([sys.executable, "-I", "-c", "import json"], check=True)
            if n >= 4:
                times[floor].append(time.perf_counter() - began)
        return {name: statistics.median(samples) for name, samples in times.items()}
    finally:
        subprocess.run([tmux, "-L", socket, "kill-server"], env=server_env, capture_output=True, timeout=10)
        shutil.rmtree(tmux_dir, ignore_errors=True)


def one_round(base: Path, panes: int, grace: float) -> tuple[float, float, float, float]:
    with private_tmux() as world:
        logs = base / f"logs-{world.tag[:8]}"
        logs.mkdir()
        env = world.env(
            base, base / "claude", FAKE_CLAUDE_SCRIPT=str(base / "plan.json"), BENCH_DIR=str(logs)
        )
        fleet = [str(BIN / "fleet")]
        began = time.monotonic()
        subprocess.run([*fleet, "start", "bench", "--no-attach", "--socket", world.socket],
                       cwd=base / "proj", env=env, check=True, capture_output=True, timeout=60)  # fmt: skip
        cli_done = time.monotonic() - began
        start_time = until_up([logs / f"P{n:02d}.log" for n in range(panes)], began, 60)
        refresh = watch_refresh(world.tmux_dir, panes)

        began = time.monotonic()
        subprocess.run([*fleet, "stop", "bench", "--grace", str(grace), "--socket", world.socket],
                       cwd=base / "proj", env=env, check=True, capture_output=True, timeout=60)  # fmt: skip
        world.wait_gone(grace + 30, "fleet stop")
        stop_time = time.monotonic() - began
        return cli_done, start_time, stop_time, refresh


def cpu_per_start(argv: list[str], runs: int = 5) -> float:
    """CPU seconds (user + system) one start of *argv* costs: what 16 panes multiply."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(runs):
        subprocess.run(argv, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) / runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--panes", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--grace", type=float, default=10.0)
    args = parser.parse_args()
    exit_on_sigterm()
    compile_package()
    if shutil.which("tmux") is None:
        raise SystemExit("tmux is not installed")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / "proj" / "sessions").mkdir(parents=True)
        (base / "proj" / "tmuxinator").mkdir()
        (base / "proj" / "tmuxinator" / "bench.yml").write_text(layout(args.panes))
        (base / "home").mkdir()
        stand_in(base)
        results = [one_round(base, args.panes, args.grace) for _ in range(args.rounds)]
    cli, start, stop, refresh = (statistics.median(column) for column in zip(*results))
    print(f"fleet of {args.panes} panes, {args.rounds} rounds, median (min..max); {os.cpu_count()} CPUs")
    print(f"  fleet start returns            {cli:6.2f} s")
    print(
        f"  start -> every Claude running  {start:6.2f} s  ({min(r[1] for r in results):.2f}..{max(r[1] for r in results):.2f})"
        f"   goal <= 3 s"
    )
    print(
        f"  stop -> no process left        {stop:6.2f} s  ({min(r[2] for r in results):.2f}..{max(r[2] for r in results):.2f})"
        f"   goal <= grace + 1 = {args.grace + 1:g} s"
    )
    print(
        f"  fleet watch refresh            {refresh * 1000:6.1f} ms ({refresh * 100:.1f}% of its 1 s interval, "
        f"{refresh * 1000 / args.panes:.1f} ms per pane)"
    )
    supervisor = cpu_per_start([str(BIN / "claude-run"), "--help"])
    costs = alert_cost(max(args.rounds * 7, 10))
    floor = next(iter(costs.values()))
    print("  Notification hook in a fleet pane, each call a transition (p50):")
    for name, p50 in costs.items():
        print(f"    {name:38s} {p50 * 1000:6.1f} ms  {p50 / floor:5.2f}x the floor")
    on, off = list(costs.values())[1:]
    print(
        f"    alerts add {(on - off) * 1000:+.1f} ms to a transition ({on / off:.2f}x): one posix_spawn; the"
        f" transition itself is one tmux call (the floor runs site, the hook -S)"
    )
    interpreter = cpu_per_start([sys.executable, "-c", "pass"])
    cpus = os.cpu_count() or 1
    print(
        f"  CPU per claude-run start-up    {supervisor:6.3f} s  (python alone {interpreter:.3f} s); "
        f"{args.panes} panes need >= {args.panes * (supervisor + 2 * interpreter) / cpus:.2f} s on {cpus} CPU(s)"
    )


if __name__ == "__main__":
    main()
