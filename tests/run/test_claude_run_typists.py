"""The hooks' typists end with their claude-run, and type only where its Claude reads the keys.

A typist (``claude-hook budget-renews``/``resume-at``) waits, detached, to type a resume prompt into a
fleet pane later. Through the real ``fleet``, ``claude-run`` and ``claude-hook`` in real tmux panes,
with the stand-in Claude leaving a typist as the hooks do (``setsid -f``, so claude-run adopts it) and
reading the pane's keys as Claude's TUI does (``read_keys``).
"""

from __future__ import annotations

import os
import signal
import sys
import time
import typing as t
from pathlib import Path

import psutil
from support.claude_run import FakeClaude, FleetTmux
from support.fleet import FleetWorld
from support.waiting import wait_until

import claude_shepherd.hooks
from claude_shepherd.hooks import budget_renewal
from claude_shepherd.supervisor.session import budget_records, budgets

PROMPT = budgets.resume_prompt("day")


def leave_typist(root: Path, agent: str, delay: float) -> dict[str, t.Any]:
    """The stand-in Claude's step that leaves a budget renewal's typist due in *delay* seconds for this
    pane, as the budget gate does (detached: its parent exits, claude-run adopts it)."""
    code = (
        "import os, time\n"
        "from claude_shepherd.hooks import budget_renewal, pane_typing\n"
        "socket, pane = os.environ['TMUX'].split(',')[0], os.environ['TMUX_PANE']\n"
        f"args = [socket, pane, str(int(time.time() + {delay:g})), {str(root)!r}, {agent!r}, 'day']\n"
        "pane_typing.spawn(budget_renewal.COMMAND, args, dict(os.environ))\n"
    )
    return {"run": [sys.executable, "-c", code]}


def paused(root: Path, agent: str) -> None:
    """*agent* paused at its day's budget: what its typist resumes."""
    paused = {"scope": "pane", "name": "A", "usd": 1.0, "per": "day", "spent": 1.0, "raise": "fleet budget F --add 1",
              "since": 0.0}  # fmt: skip
    assert budget_records.pause(root, agent, paused)


def typists(root: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        argv = proc.info["cmdline"] or []
        if budget_renewal.COMMAND in argv and str(root) in argv:
            found.append(proc)
    return found


def test_claude_run_exiting_for_good_ends_its_typist_which_never_types_into_the_shell_after_it(
    world: FleetWorld,
) -> None:
    """The pane falls back to a shell once claude-run ends: the typist claude-run adopted is
    ended with it, and the shell reads nothing."""
    typed = world.dir / "typed.txt"
    reader = f"timeout --foreground 12 head -n 1 > {typed}.part; mv {typed}.part {typed}"  # as a shell reads
    world.layout("crew", f"  - agents:\n      panes:\n        - A: [claude-run, {reader!r}]\n")
    root, agent = world.project / "sessions", "crew:agents:A"
    paused(root, agent)
    world.plan("A", [leave_typist(root, agent, 4), {"mark": "left"}, {"wait": 1}, {"exit": 0}])

    started = world.fleet("start", "crew", "--no-attach")
    assert started.returncode == 0, started.stdout + started.stderr
    world.wait_event("A", "exit", code=0)
    # Claude quit while its agent is paused: claude-run says so, and how to go on, instead of Goodbye
    wait_until(lambda: "Paused at its budget" in world.capture("A") or None, 15, "claude-run to end, paused")
    ended = "Ended 1 process of the hooks that waited to type into this pane."
    wait_until(lambda: ended in world.capture("A") or None, 15, f"{ended!r}:\n{world.capture('A')}")
    assert typists(root) == [], "claude-run exited, and left its typist running"
    wait_until(typed.exists, 30, "the shell's read to end")
    assert typed.read_text() == "", "the typist typed into the shell the pane fell back to"
    assert PROMPT[:40] not in world.capture("A")


def test_a_typist_whose_claude_run_is_gone_ends_by_itself(
    fake: FakeClaude, start_run: t.Callable[..., t.Any], fleet_tmux: FleetTmux, workdir: Path
) -> None:
    """claude-run and its watchdog killed at once (nothing left to end the typist): it ends by itself
    within seconds, not at its moment an hour later."""
    root = workdir / "sessions"
    paused(root, fleet_tmux.pane_id)
    fake.plan([leave_typist(root, fleet_tmux.pane_id, 3600), {"mark": "left"}, {"wait": None}])
    run = start_run(pane=fleet_tmux)
    fake.wait_event("mark", name="left")
    (typist,) = wait_until(lambda: typists(root) or None, 15, "the typist")
    wait_until(lambda: typist.ppid() == run.pid or None, 15, "claude-run to adopt the typist")
    watchdog = next(p for p in psutil.Process(run.pid).children() if p.name() == "claude-watchdog")
    watchdog.kill()
    os.kill(run.pid, signal.SIGKILL)
    began = time.monotonic()
    typist.wait(timeout=10)
    assert time.monotonic() - began < 5


def test_a_typist_waits_for_the_next_claude_to_read_the_keys_and_types_only_to_it(
    fake: FakeClaude, start_run: t.Callable[..., t.Any], fleet_tmux: FleetTmux, workdir: Path
) -> None:
    """The moment comes while claude-run backs off from a crash (no Claude reads the pane's keys; the
    terminal would echo them and keep them for whatever reads next): the typist waits, and types once
    the next Claude reads the keys."""
    root = workdir / "sessions"
    paused(root, fleet_tmux.pane_id)
    fake.plan(
        [leave_typist(root, fleet_tmux.pane_id, 2), {"mark": "left"}, {"wait": 1}, {"exit": 1}],
        [{"mark": "second"}, {"read_keys": {"timeout": 30}}, {"wait": None}],
    )
    run = start_run(pane=fleet_tmux, env={"CLAUDE_RUN_BACKOFF": "6"})
    fake.wait_event("mark", name="left")
    fake.wait_event("mark", name="second", timeout=30)
    keys = fake.wait_event("keys", timeout=30)
    assert keys["text"] == PROMPT
    assert PROMPT[:40] not in run.text, f"typed while no Claude read the keys:\n{run.text}"
    os.kill(run.pid, signal.SIGTERM)  # as fleet stop does
    assert run.wait() == 143


def test_a_process_that_only_looks_like_a_typist_is_ended_with_claudes_other_leftovers(
    fake: FakeClaude, start_run: t.Callable[..., t.Any], fleet_tmux: FleetTmux, workdir: Path
) -> None:
    """A command line proves nothing: a process with a typist's command line that no hook recorded (an
    agent's code can write its own, or be started so) is ended when Claude is relaunched, as anything
    else Claude's tree left."""
    root = workdir / "sessions"
    paused(root, fleet_tmux.pane_id)
    main = claude_shepherd.hooks.MAIN
    unrecorded = (
        f'exec setsid -f "{sys.executable}" -I -S "{main}" {budget_renewal.COMMAND} "${{TMUX%%,*}}" "$TMUX_PANE" '
        f'"$(( $(date +%s) + 3600 ))" "{root}" "{fleet_tmux.pane_id}" day </dev/null >/dev/null 2>&1'
    )
    fake.plan(
        [{"run": ["sh", "-c", unrecorded]}, {"mark": "left"}, {"wait": 1}, {"exit": 3}],
        [{"mark": "second"}, {"wait": None}],
    )
    run = start_run(pane=fleet_tmux, env={"CLAUDE_RUN_BACKOFF": "1"})
    fake.wait_event("mark", name="left")
    (look_alike,) = wait_until(lambda: typists(root) or None, 15, "the look-alike")
    fake.wait_event("mark", name="second", timeout=30)
    look_alike.wait(timeout=15)
    assert "Ended 1 leftover process of Claude's." in run.text, run.text
    os.kill(run.pid, signal.SIGTERM)
    assert run.wait() == 143
