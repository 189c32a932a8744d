"""End to end: a pane's budget pauses the real Claude Code CLI within one more model request, kills
nothing, and ``fleet budget --add`` lets the same conversation go on — in a real tmux fleet, our hooks
and status line installed, the spend measured from what the CLI's status line reports and, where
requests outrun it, from the replies the hooks price. A headless ``claude-run --budget-usd -- -p``
ends at its budget, however many launches it takes.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
import typing as t

import psutil
import pytest
from support.claude_run import PANE_WRAPPER
from support.waiting import wait_until

from .cli import MODEL, Tmux
from .mock_api import MockAPI, Turn
from .test_fleet import BIN, SESSION, Fleet
from .test_headless import install_hooks
from .test_interactive import PROMPT_READY

pytestmark = pytest.mark.slow

PRICEY = {"input_tokens": 10_000, "output_tokens": 2_000}
"""$0.06 a reply at the model's list price (tests/e2e/test_limits.py measures it)."""


SUBAGENT_MARK = "SUBAGENT-MARK do it"
"""The prompt the scripted main agent gives its sub-agents: their requests start with it."""


FOREGROUND_TASK = {"description": "x", "prompt": SUBAGENT_MARK, "subagent_type": "general-purpose",
                   "run_in_background": False}  # fmt: skip
"""A sub-agent call the scripted main agent makes, in the foreground."""


def is_subagent(body: dict[str, t.Any]) -> bool:
    """A sub-agent's request: its conversation starts with the prompt it was given."""
    return SUBAGENT_MARK in json.dumps(body.get("messages", [])[:1])


def status(fleet: Fleet) -> dict[str, t.Any]:
    done = fleet.fleet("status", "--json")
    rows = json.loads(done.stdout) if done.stdout.strip().startswith("[") else []
    return next((row for row in rows if row["label"] == "A"), {})


def fleet_with_budget(world, env_for, usd: float) -> t.Iterator[Fleet]:
    """A fleet whose pane A has a budget of *usd*; stopped afterwards."""
    env = env_for()
    running = Fleet(world, env, install_hooks(world, env))
    text = running.layout.read_text()
    command = text.split("        - A: ", 1)[1].rstrip("\n")
    running.layout.write_text(
        text.split("        - A: ", 1)[0]
        + f"        - A:\n            budget: {usd}\n            commands: {command}\n"
    )
    yield running
    running.close()


def spend_to_the_pause(fleet: Fleet, settle: float = 5.0) -> None:
    """Start the fleet, prompt pane A, wait for its pause, then *settle* seconds for any request that
    would follow."""
    started = fleet.fleet("start", "--no-attach")
    assert started.returncode == 0, started.stdout + started.stderr
    fleet.ready()
    fleet.type("spend some money")
    wait_until(lambda: status(fleet).get("paused") or None, 60, "the pause")
    fleet.tmux("run-shell", f"sleep {settle:g}")


@pytest.fixture
def budget_fleet(world, env_for) -> t.Iterator[Fleet]:
    """A fleet whose pane A has a $0.10 budget."""
    yield from fleet_with_budget(world, env_for, 0.1)


def test_a_budget_reached_pauses_within_one_request_and_raising_it_goes_on(
    budget_fleet: Fleet, mock_api: MockAPI, world
) -> None:
    fleet = budget_fleet
    mock_api.script(
        Turn.bash(f"session activate {SESSION} implement", **PRICEY),
        # A tool that takes a while, as real work does: the status line reports each reply's cost
        # while it runs (a loop faster than the status line's renders outruns the measurement).
        Turn.bash("sleep 3; echo RAN >> ran.txt", times=6, **PRICEY),
        Turn.say("all done"),
    )
    started = fleet.fleet("start", "--no-attach")
    assert started.returncode == 0, started.stdout + started.stderr
    fleet.ready()
    fleet.type("spend some money")

    seen = wait_until(lambda: (status(fleet).get("budget_spent") or 0) >= 0.1 or None, 90, "the cap measured")
    assert seen
    at_cap = len(mock_api.main_requests())
    paused = wait_until(
        lambda: status(fleet).get("paused") or None,
        60,
        f"the agent paused: {at_cap} requests; {status(fleet)}; {fleet.screen()}",
    )
    assert paused
    row = status(fleet)
    assert row["state"] == "paused", row
    fleet.tmux("run-shell", "sleep 5")  # time for any request that would follow
    requests = mock_api.main_requests()
    assert len(requests) <= at_cap + 1, f"{len(requests)} requests, the cap seen at {at_cap}"
    assert "hook stopped Claude" in fleet.screen() or "budget" in fleet.screen(), fleet.screen()
    supervisor = fleet.supervisor_pid()
    claude = row["claude_pid"]
    assert claude and psutil.pid_exists(claude) and psutil.pid_exists(supervisor), "nothing is killed"

    raised = fleet.fleet("budget", "--pane", "A", "--add", "1")
    assert raised.returncode == 0, raised.stdout + raised.stderr
    assert "Resumed e2efleet:agents:A" in raised.stdout, raised.stdout
    wait_until(lambda: len(mock_api.main_requests()) > len(requests) or None, 60, "the resumed request")
    resumed = mock_api.requests[-1]
    assert (
        resumed["headers"]["X-Claude-Code-Session-Id"]
        == mock_api.requests[0]["headers"]["X-Claude-Code-Session-Id"]
    ), "the same conversation goes on"
    assert "Your budget was raised" in MockAPI.all_text(resumed["body"])
    assert status(fleet)["paused"] is False
    assert status(fleet)["claude_pid"] == claude, "the same Claude"


@pytest.fixture
def plain_fleet(world, env_for) -> t.Iterator[Fleet]:
    env = env_for()
    running = Fleet(world, env, install_hooks(world, env))
    yield running
    running.close()


def test_a_resumed_conversation_is_counted_once(plain_fleet: Fleet, mock_api: MockAPI) -> None:
    """The real CLI's ``total_cost_usd`` is the conversation's: after ``fleet stop`` and ``start`` the
    pane's Claude resumes it and its status line starts from the earlier total. What the agent spent
    is the growth: two replies of $0.06, $0.12 — not $0.18, which adding each Claude's figure gave."""
    fleet = plain_fleet
    mock_api.script(Turn.say("first", **PRICEY))
    started = fleet.fleet("start", "--no-attach")
    assert started.returncode == 0, started.stdout + started.stderr
    fleet.ready()
    fleet.type("one")
    wait_until(lambda: (status(fleet).get("cost_usd") or 0) >= 0.06 or None, 60, "the first reply measured")
    assert status(fleet)["cost_usd"] == pytest.approx(0.06)
    stopped = fleet.fleet("stop")
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    mock_api.script(Turn.say("second", **PRICEY))
    again = fleet.fleet("start", "--no-attach")
    assert again.returncode == 0, again.stdout + again.stderr
    fleet.ready()
    fleet.type("two")
    wait_until(lambda: mock_api.pending() == 0 or None, 60, "the second reply")
    first, second = mock_api.requests
    assert first["headers"]["X-Claude-Code-Session-Id"] == second["headers"]["X-Claude-Code-Session-Id"]
    wait_until(lambda: (status(fleet).get("cost_usd") or 0) >= 0.12 or None, 60, "the second reply measured")
    fleet.tmux("run-shell", "sleep 2")  # any later render of the status line
    assert status(fleet)["cost_usd"] == pytest.approx(0.12)


# ------------------------------------------------------- requests faster than the status line, and -p


@pytest.fixture
def quick_fleet(world, env_for) -> t.Iterator[Fleet]:
    """A fleet whose pane A has a $0.30 budget."""
    yield from fleet_with_budget(world, env_for, 0.3)


def test_quick_tool_calls_pause_at_the_request_that_crossed_the_budget(
    quick_fleet: Fleet, mock_api: MockAPI, world
) -> None:
    """Instant tool calls come faster than the status line is redrawn (it let 11 requests past a $0.30
    budget): the PreToolUse hook prices the reply asking for its call from the transcript, so the
    reply that crossed the budget is the last request — the fifth at $0.06 each."""
    fleet = quick_fleet
    quick = Turn.bash("echo RAN >> ran.txt", times=20, **PRICEY)
    mock_api.script(Turn.bash(f"session activate {SESSION} implement", **PRICEY), quick, Turn.say("all done"))
    spend_to_the_pause(fleet)
    assert len(mock_api.main_requests()) == 5, f"$0.30 is crossed by the fifth reply: {status(fleet)}"
    assert (world.project / "ran.txt").read_text().split() == ["RAN"] * 3, (
        "the fifth reply's call did not run"
    )
    row = status(fleet)
    assert row["state"] == "paused" and row["budget_spent"] >= 0.3, row


def claude_run_headless(
    world, env: dict[str, str], settings, *args: str, claude: t.Sequence[str] = ()
) -> subprocess.CompletedProcess[str]:
    """``claude-run ARGS -- -p … CLAUDE spend``, run to its end; on a timeout it and every process under
    it are killed (a Claude and its tools left running would outlive the test)."""
    argv = [str(BIN / "claude-run"), *args, "--", "-p", "--dangerously-skip-permissions", "--model", MODEL,
            "--settings", str(settings), *claude, "spend"]  # fmt: skip
    run = subprocess.Popen(
        argv, env=env, cwd=world.project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        out, err = run.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        top = psutil.Process(run.pid)
        for proc in [*top.children(recursive=True), top]:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        out, err = run.communicate()
    return subprocess.CompletedProcess(argv, run.returncode, out, err)


@pytest.mark.parametrize("apart", [1.0, 3.0], ids=["1s_apart", "3s_apart"])
def test_a_headless_run_ends_at_its_budget_with_one_line_and_exit_4(
    world, mock_api: MockAPI, env_for, apart: float
) -> None:
    """``claude -p`` stops at Claude's own --max-budget-usd with status 1, which claude-run took for a
    crash: every relaunch got the whole budget again (10 requests for $0.10; replies seconds apart
    never trip the crash limit). The budget is the run's: the reply that crossed it is the last."""
    env = env_for()
    settings = install_hooks(world, env)
    mock_api.script(Turn.bash("echo RAN >> ran.txt", times=-1, delay=apart, **PRICEY))
    began = time.monotonic()
    run = claude_run_headless(world, env, settings, "--budget-usd", "0.10")
    assert run.returncode == 4, run.stdout + run.stderr
    assert len(mock_api.main_requests()) == 2, "$0.10 is crossed by the second reply; nothing is sent after"
    last = run.stderr.strip().splitlines()[-1]
    assert last == "claude-run: the budget of $0.10 is spent ($0.12 measured); nothing more is sent", (
        run.stderr
    )
    assert "crash" not in run.stderr, run.stderr
    assert time.monotonic() - began < 60


def test_sub_agents_asked_for_together_run_one_at_a_time_under_a_budget(
    world, mock_api: MockAPI, env_for
) -> None:
    """Eight sub-agents asked for in one reply, each reply of theirs 3 s in coming and $0.06: they would
    all spend before any reply is priced (an attack measured $0.46 on a $0.10 budget). Held to a budget,
    the agent runs the first alone; the others are refused, and the cap holds within one reply."""
    env = env_for()
    settings = install_hooks(world, env)

    task = FOREGROUND_TASK
    mock_api.script(
        Turn.bash(f"session activate {SESSION} implement"),
        Turn.call("Agent", task, copies=8),
        Turn.say("sub done", when=is_subagent, times=8, delay=3, **PRICEY),
        Turn.say("all done"),
    )
    run = claude_run_headless(world, env, settings, "--budget-usd", "0.10")
    subs = [body for body in mock_api.main_requests() if is_subagent(body)]
    assert len(subs) == 1, f"{len(subs)} sub-agents sent requests; {run.stdout}{run.stderr}"
    assert run.returncode in (0, 4), run.stdout + run.stderr


def test_a_sub_agent_the_cli_would_run_in_the_background_is_refused_under_a_budget(
    world, mock_api: MockAPI, env_for
) -> None:
    """Claude Code runs the main agent's sub-agents in the background unless asked not to: one per reply,
    each reply asking for another, they would spend together. Held to a budget, none runs so."""
    env = env_for()
    settings = install_hooks(world, env)

    task = {"description": "x", "prompt": SUBAGENT_MARK, "subagent_type": "general-purpose"}
    mock_api.script(
        Turn.bash(f"session activate {SESSION} implement"),
        Turn.call("Agent", task, times=4),
        Turn.say("sub done", when=is_subagent, times=4, delay=3, **PRICEY),
        Turn.say("all done"),
    )
    run = claude_run_headless(world, env, settings, "--budget-usd", "0.10")
    subs = [body for body in mock_api.main_requests() if is_subagent(body)]
    assert subs == [], f"{len(subs)} sub-agents ran in the background; {run.stdout}{run.stderr}"


def test_a_background_definition_named_apart_from_its_file_is_refused_under_a_budget(
    world, mock_api: MockAPI, env_for
) -> None:
    """Claude Code knows an agent definition by its ``name:``, not its file: ``helper.md`` saying
    ``name: spender`` and ``background: true`` ran eight sub-agents in the background headless ($0.52 on
    $0.10, an attack). Held to a budget, none runs."""
    env = env_for()
    settings = install_hooks(world, env)
    agents = world.project / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "helper.md").write_text(
        "---\nname: spender\ndescription: spends\nbackground: true\n---\nSpend.\n"
    )
    task = {
        "description": "x",
        "prompt": SUBAGENT_MARK,
        "subagent_type": "spender",
        "run_in_background": False,
    }
    mock_api.script(
        Turn.bash(f"session activate {SESSION} implement"),
        Turn.call("Agent", task, times=8),
        Turn.say("sub done", when=is_subagent, times=8, delay=3, **PRICEY),
        Turn.say("all done", times=-1),
    )
    run = claude_run_headless(world, env, settings, "--budget-usd", "0.10", claude=["--max-budget-usd", "5"])
    subs = [body for body in mock_api.main_requests() if is_subagent(body)]
    assert subs == [], f"{len(subs)} sub-agents ran in the background; {run.stdout}{run.stderr}"


@pytest.mark.parametrize("apart", [0.0, 2.0], ids=["instant", "2s_apart"])
def test_a_sub_agent_that_keeps_calling_tools_is_held_to_the_budget(
    world, mock_api: MockAPI, env_for, apart: float
) -> None:
    """A sub-agent's replies are written to a transcript of its own, not the main one: a foreground
    sub-agent calling tool after tool would spend on unpriced until it ended. Its calls are priced from
    its own transcript, and the reply that crossed the budget is the last any agent sends."""
    env = env_for()
    settings = install_hooks(world, env)

    task = FOREGROUND_TASK
    mock_api.script(
        Turn.bash(f"session activate {SESSION} implement"),
        Turn.call("Agent", task),
        Turn.bash("echo SUB >> sub.txt", when=is_subagent, times=-1, delay=apart, **PRICEY),
        Turn.say("all done", times=-1),
    )
    run = claude_run_headless(world, env, settings, "--budget-usd", "0.10")
    subs = [body for body in mock_api.main_requests() if is_subagent(body)]
    assert len(subs) == 2, f"$0.10 is crossed by the sub-agent's second reply: {len(subs)} sent; {run.stderr}"
    assert run.returncode == 4, run.stdout + run.stderr


@pytest.mark.parametrize("how", ["agent", "forked_skill"])
def test_a_sub_agent_in_a_fleet_pane_that_keeps_calling_tools_is_held_to_the_budget(
    quick_fleet: Fleet, mock_api: MockAPI, world, how: str
) -> None:
    """In a terminal Claude Code runs every sub-agent in the background and offers no
    ``run_in_background``; claude-run starts a Claude a budget holds with background tasks off, so the
    sub-agent runs in the foreground. Its replies go to a transcript of its own, and the status line is
    not redrawn while the main agent waits for it (it drew $0.01 while the sub-agent spent dollars): its
    calls are priced from its own transcript, and the reply that crossed the budget is the last."""
    fleet = quick_fleet

    if how == "agent":
        ask = Turn.call(
            "Agent", {"description": "x", "prompt": SUBAGENT_MARK, "subagent_type": "general-purpose"}
        )
    else:  # a skill that runs in a sub-agent of its own
        skill = world.project / ".claude" / "skills" / "spender" / "SKILL.md"
        skill.parent.mkdir(parents=True)
        skill.write_text(f"---\nname: spender\ndescription: spends\ncontext: fork\n---\n{SUBAGENT_MARK}\n")
        ask = Turn.call("Skill", {"skill": "spender"})
    mock_api.script(
        Turn.bash(f"session activate {SESSION} implement"),
        ask,
        Turn.bash("echo SUB >> sub.txt", when=is_subagent, times=-1, **PRICEY),
        Turn.say("all done", times=-1),
    )
    spend_to_the_pause(fleet)
    subs = [body for body in mock_api.main_requests() if is_subagent(body)]
    assert len(subs) == 5, f"$0.30 is crossed by the sub-agent's fifth reply: {len(subs)}; {fleet.screen()}"
    assert (world.project / "sub.txt").read_text().split() == ["SUB"] * 4, (
        "the fifth reply's call did not run"
    )
    after = len(mock_api.main_requests()) - 2 - len(subs)
    assert after == 0, f"{after} requests after the one that crossed the budget"


@pytest.mark.parametrize("bad", ["unknown_tool", "bad_input"])
def test_calls_claude_refuses_before_any_hook_still_stop_at_the_budget(
    quick_fleet: Fleet, mock_api: MockAPI, world, bad: str
) -> None:
    """Claude refuses an unknown tool, or input that fails its own check, before any PreToolUse runs:
    the model asked fifteen times and spent $0.91 on a $0.30 budget. PostToolBatch runs before the next
    request whatever became of the calls: the reply that crossed the budget is the last."""
    fleet = quick_fleet
    tool, tool_input = ("NoSuchTool", {"x": 1}) if bad == "unknown_tool" else ("Read", {"bogus": 1})
    mock_api.script(
        Turn.bash(f"session activate {SESSION} implement"),
        Turn.call(tool, tool_input, times=15, **PRICEY),
        Turn.say("all done", times=-1),
    )
    spend_to_the_pause(fleet)
    assert len(mock_api.main_requests()) == 6, f"$0.30 is crossed by the sixth request: {status(fleet)}"


@pytest.mark.parametrize(("apart", "size"), [(2.0, 0), (2.0, 300_000)], ids=["2s_apart", "300kB_reply"])
def test_a_reply_cut_off_at_its_output_limit_is_not_followed_past_the_budget(
    quick_fleet: Fleet, mock_api: MockAPI, world, apart: float, size: int
) -> None:
    """A reply cut off at its output limit (``max_tokens``) asks for no tool: Claude Code follows it up
    by itself, up to three times, with no hook in between. The status line sees the budget spent after
    such a reply and interrupts Claude: the follow-up in flight is cut, and no other request is sent —
    however long the reply's line (runs of spaces are few tokens and many bytes: an attack's 300 kB
    reply was not seen)."""
    fleet = quick_fleet
    text = ("word " + " " * 59) * (size // 64) or "LONG"
    mock_api.script(
        Turn.bash(f"session activate {SESSION} implement"),
        Turn.bash("echo RAN >> ran.txt", times=4, **PRICEY),  # $0.2533 spent: just under the budget
        Turn.say(text, times=15, stop_reason="max_tokens", delay=apart, **PRICEY),
        Turn.say("all done", times=-1),
    )
    spend_to_the_pause(fleet, settle=apart * 3 + 3)
    answered = len(mock_api.main_requests()) - mock_api.cut()
    assert answered == 6, f"$0.30 is crossed by the sixth request: {answered} answered, {status(fleet)}"
    assert len(mock_api.main_requests()) <= 7, f"one follow-up at most, cut: {fleet.screen()}"


def test_a_lone_claude_run_stops_a_cut_off_reply_at_its_budget_and_says_how_to_go_on(
    tmux: Tmux, world, env_for, mock_api: MockAPI, tmp_path
) -> None:
    """Outside a fleet pane nothing can press Escape: the status line ends Claude (SIGINT) once a reply
    cut off at its output limit spent the budget, and claude-run says how to go on in the same
    conversation, exit 4."""
    env = env_for()
    mock_api.script(
        Turn.bash(f"session activate {SESSION} implement"),
        Turn.bash("echo RAN >> ran.txt", times=4, **PRICEY),
        Turn.say("LONG", times=15, stop_reason="max_tokens", delay=2.0, **PRICEY),
        Turn.say("all done", times=-1),
    )
    status_file = tmp_path / "status"  # tmux may reap the pane's process late: a parent of ours tells
    argv = [sys.executable, "-c", PANE_WRAPPER, str(status_file), str(BIN / "claude-run"), "--budget-usd", "0.3",
            "--", "--dangerously-skip-permissions", "--model", MODEL, "--settings", str(install_hooks(world, env))]  # fmt: skip
    pane = tmux.start(argv, env, world.project)
    tmux.wait_for(pane, PROMPT_READY, timeout=60)
    tmux.type(pane, "spend some money")
    try:
        exit_status = wait_until(
            lambda: status_file.exists() and status_file.read_text(), 60, "claude-run's end"
        )
    except AssertionError:
        raise AssertionError(tmux.screen(pane)) from None
    screen = tmux.screen(pane)
    answered = len(mock_api.main_requests()) - mock_api.cut()
    assert answered == 6, f"$0.30 is crossed by the sixth request: {answered} answered\n{screen}"
    assert len(mock_api.main_requests()) <= 7, screen
    assert "Paused at its budget ($0.30 of $0.30)" in screen, screen
    assert "To go on: claude-run --budget-usd 0.3 -- --resume" in screen, screen
    assert exit_status == "4", screen


def watchers(world) -> list[psutil.Process]:
    """The sub-agent watchers the hooks left for this test's project."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        line = proc.info["cmdline"] or []
        if "watch-subagent" in line and str(world.project) in line:
            found.append(proc)
    return found


def test_a_sub_agent_s_reply_cut_off_at_its_output_limit_is_not_followed_past_the_budget_in_a_pane(
    quick_fleet: Fleet, mock_api: MockAPI, world
) -> None:
    """No status line is drawn while a sub-agent runs, and Claude follows its cut-off reply up by itself
    (an attack: three requests past a $0.30 budget). The hooks watch an admitted sub-agent's transcript:
    at the budget its follow-up in flight is cut, and nothing more is sent."""
    fleet = quick_fleet
    task = {"description": "x", "prompt": SUBAGENT_MARK, "subagent_type": "general-purpose"}
    mock_api.script(
        Turn.bash(f"session activate {SESSION} implement"),
        Turn.call("Agent", task, when=lambda body: not is_subagent(body)),
        Turn.bash("echo SUB >> sub.txt", when=is_subagent, times=4, **PRICEY),  # $0.24
        Turn.say("LONG", when=is_subagent, times=8, stop_reason="max_tokens", delay=2, **PRICEY),
        Turn.say("all done", times=-1),
    )
    spend_to_the_pause(fleet, settle=4)
    answered = len(mock_api.main_requests()) - mock_api.cut()
    assert answered == 7, (
        f"the sub-agent's first cut-off reply crosses $0.30: {answered} answered, {status(fleet)}"
    )
    assert len(mock_api.main_requests()) <= 8, f"one follow-up at most, cut: {fleet.screen()}"
    wait_until(lambda: not watchers(world), 10, "the watcher to end once the sub-agent's call was answered")


def test_a_headless_sub_agent_s_cut_off_reply_is_not_followed_past_the_budget(
    world, mock_api: MockAPI, env_for
) -> None:
    """Headless, Claude's own cap does not hold a sub-agent's follow-ups (an attack: two past a $0.10
    budget with the person's own --max-budget-usd): the watcher ends Claude at the budget, exit 4."""
    env = env_for()
    settings = install_hooks(world, env)
    task = FOREGROUND_TASK
    mock_api.script(
        Turn.bash(f"session activate {SESSION} implement"),
        Turn.call("Agent", task, when=lambda body: not is_subagent(body)),
        Turn.say("LONG", when=is_subagent, times=8, stop_reason="max_tokens", delay=2, **PRICEY),
        Turn.say("all done", times=-1),
    )
    run = claude_run_headless(world, env, settings, "--budget-usd", "0.10", claude=["--max-budget-usd", "5"])
    answered = len(mock_api.main_requests()) - mock_api.cut()
    assert answered == 4, f"the sub-agent's second reply crosses $0.10: {answered} answered; {run.stderr}"
    assert run.returncode == 4, run.stdout + run.stderr
    assert not watchers(world)


def test_a_forked_skill_s_reply_cut_off_at_its_output_limit_is_not_followed_past_the_budget(
    quick_fleet: Fleet, mock_api: MockAPI, world
) -> None:
    """A skill with ``context: fork`` runs in a sub-agent through the Skill tool, not Agent: it was not
    watched, and its cut-off reply's follow-ups went three requests past $0.30 (an attack). Watched now."""
    fleet = quick_fleet
    skill = world.project / ".claude" / "skills" / "spender" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text(f"---\nname: spender\ndescription: spends\ncontext: fork\n---\n{SUBAGENT_MARK}\n")
    mock_api.script(
        Turn.bash(f"session activate {SESSION} implement"),
        Turn.call("Skill", {"skill": "spender"}, when=lambda body: not is_subagent(body)),
        Turn.bash("echo SUB >> sub.txt", when=is_subagent, times=4, **PRICEY),  # $0.24
        Turn.say("LONG", when=is_subagent, times=8, stop_reason="max_tokens", delay=2, **PRICEY),
        Turn.say("all done", times=-1),
    )
    spend_to_the_pause(fleet, settle=5)
    answered = len(mock_api.main_requests()) - mock_api.cut()
    assert answered == 7, (
        f"the skill's first cut-off reply crosses $0.30: {answered} answered, {status(fleet)}"
    )


def test_a_pane_put_back_in_line_mode_still_has_its_claude_stopped_at_the_budget(
    quick_fleet: Fleet, mock_api: MockAPI, world
) -> None:
    """An agent's Bash put its pane's terminal in line mode (``stty icanon``): Escape then waits for an
    Enter, and was not sent at all; the follow-ups of a cut-off reply went three past $0.30 (an attack).
    Where Escape cannot reach Claude it gets SIGINT: it ends, paused, and claude-run says how to go on."""
    fleet = quick_fleet
    cook = ("p=$$; for i in 1 2 3 4 5 6 7 8; do t=$(readlink /proc/$p/fd/0); case $t in /dev/pts/*) break;; "
            "esac; p=$(awk '{print $4}' /proc/$p/stat); done; stty -F $t icanon")  # fmt: skip
    mock_api.script(
        Turn.bash(f"session activate {SESSION} implement"),
        Turn.bash(cook),
        Turn.bash("echo RAN >> ran.txt", times=4, **PRICEY),
        Turn.say("LONG", times=8, stop_reason="max_tokens", delay=2, **PRICEY),
        Turn.say("all done", times=-1),
    )
    spend_to_the_pause(fleet, settle=5)
    answered = len(mock_api.main_requests()) - mock_api.cut()
    assert answered == 7, f"$0.30 is crossed by the seventh request: {answered} answered, {fleet.screen()}"
    assert "Paused at its budget" in fleet.screen(), fleet.screen()


def test_compact_typed_while_paused_sends_nothing(quick_fleet: Fleet, mock_api: MockAPI, world) -> None:
    """``/compact`` sends the whole conversation, and it is no prompt: no UserPromptSubmit sees it (an
    attack: two requests past $0.30, typed three times). The PreCompact hook blocks it at the budget."""
    fleet = quick_fleet
    mock_api.script(
        Turn.bash(f"session activate {SESSION} implement"),
        Turn.bash("echo RAN >> ran.txt", times=5, **PRICEY),
        Turn.say("<summary>spent</summary>", times=-1, **PRICEY),
    )
    spend_to_the_pause(fleet)
    before = len(mock_api.requests)
    fleet.type("/compact")
    wait_until(lambda: "Compaction blocked" in fleet.screen() or None, 30, "the blocked compaction")
    fleet.tmux("run-shell", "sleep 3")
    assert len(mock_api.requests) == before, f"a request after the pause: {fleet.screen()}"
