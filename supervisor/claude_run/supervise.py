"""The supervisor loop: launch Claude, classify its exit, decide the next launch.

Each exit is one of (checked in this order, so a pending restart request is
never lost to the other rules — the original's 5-second "stale resume"
heuristic ran first and dropped them, G5/R5):

1. **stopped** — SIGTERM/SIGHUP reached the supervisor: exit with Claude's status;
2. **requested restart** — a session we own has ``killRequested`` and a
   ``restartPrompt``: relaunch fresh with that prompt (S4, S6);
3. **budget spent** — a headless run (``-p``) under ``--budget-usd`` spent it, this launch and the
   ones before together (Claude's own ``--max-budget-usd`` stop, status 1, or our hook's, 0): not a
   crash and never relaunched; exit :data:`~.run_budget.EXIT_BUDGET_SPENT` (supervisor.claude_run.run_budget);
4. **refused to start** — Claude exited 1 saying why on its standard error, for a reason no
   retry fixes (supervisor.claude_run.refusals): end with that line, status 78;
5. **usage limit** — Claude stopped at the account's usage window (its StopFailure hook marked the
   agent ``limited``, or ``-p`` exited 1 with the window at 100 %): not a crash; wait for the reset
   and the agent's turn, then go on in the same conversation (supervisor.claude_run.usage_wait);
6. **resume refused** — the launch used ``--resume`` and Claude exited 1 within
   ``resume_window`` seconds (``No conversation found with session ID``):
   relaunch once, fresh;
7. **user quit** — exit 0: ``Goodbye.``, exit 0;
8. **crash** — anything else: relaunch after a back-off, resuming our own
   conversation when safe, or give up after too many crashes in a row.

The process side (spawning, signals, the watchdog) is behind the *runner*
seam and the clock is injectable, so the policy is testable without processes.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

from claude_shepherd.supervisor.claude_run import launch_plan as lp
from claude_shepherd.supervisor.claude_run.claude_args import ClaudeArgs, launch_argv
from claude_shepherd.supervisor.claude_run.crashloop import CrashPolicy, CrashTracker, RestartBudget
from claude_shepherd.supervisor.claude_run.foreground import Outcome
from claude_shepherd.supervisor.claude_run.launch_decision import Plan, short
from claude_shepherd.supervisor.claude_run.refusals import REFUSED_STATUS, refusal_in
from claude_shepherd.supervisor.claude_run.run_budget import EXIT_BUDGET_SPENT, RunBudget, launch_env
from claude_shepherd.supervisor.claude_run.usage_wait import CONTINUE_PROMPT, LOOK_EVERY, UsageGate, Wait
from claude_shepherd.supervisor.claude_run.worktree import Worktree, creating
from claude_shepherd.supervisor.session.records import Record

TYPE_CHECKING = False
if TYPE_CHECKING:  # claude-run runs beside every agent: no typing at run time (docs/HOT_CORE.md)
    import typing as t

    class Runner(t.Protocol):
        """What runs Claude for the supervisor (:class:`~claude_shepherd.supervisor.claude_run.foreground.ForegroundRunner`)."""

        stop_signal: int | None

        def run(self, path: str, argv: list[str], env: t.Mapping[str, str]) -> Outcome: ...

        def pause(self, seconds: float) -> bool: ...


RESUME_REFUSED_STATUS = 1
DEFAULT_RESUME_WINDOW = 10.0


class Settings(Record):
    __slots__ = (
        "claude", "user_args", "system_prompt", "root", "cwd", "env", "policy", "resume_window", "ignore_usage",
        "worktree", "budget",
    )  # fmt: skip
    claude: str
    user_args: ClaudeArgs
    system_prompt: str | None
    root: Path
    cwd: Path | tuple[Path, ...]
    """Where Claude runs, whose project keeps its conversations: its worktree, then the checkout (Claude
    moves a worktree's conversations back there when it removes the worktree at an exit)."""
    env: dict[str, str]
    """Claude's environment (the contract of :mod:`claude_shepherd.supervisor.claude_run.agent_env` applied)."""
    policy: CrashPolicy
    resume_window: float
    ignore_usage: bool
    """Launch even while a usage window of the credential is at the wait threshold."""
    worktree: Worktree | None
    """The worktree Claude runs in (``--worktree NAME`` is among the user's arguments then); ``cwd`` is its path."""
    budget: RunBudget | None
    """A headless run's ``--budget-usd``: every launch's spend counts against it."""

    def __init__(
        self,
        claude: str,
        user_args: ClaudeArgs,
        system_prompt: str | None,
        root: Path,
        cwd: Path | tuple[Path, ...],
        env: dict[str, str],
        policy: CrashPolicy,
        resume_window: float = DEFAULT_RESUME_WINDOW,
        ignore_usage: bool = False,
        worktree: Worktree | None = None,
        budget: RunBudget | None = None,
    ) -> None:
        self.claude = claude
        self.user_args = user_args
        self.system_prompt = system_prompt
        self.root = root
        self.cwd = cwd
        self.env = env
        self.policy = policy
        self.resume_window = resume_window
        self.ignore_usage = ignore_usage
        self.worktree = worktree
        self.budget = budget


class GiveUp(Record):
    __slots__ = ("status", "message")
    status: int
    message: str

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        self.message = message


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class Supervisor:
    def __init__(
        self,
        settings: Settings,
        runner: Runner,
        *,
        me: lp.Owner,
        pane_of: t.Callable[[], str | None],
        say: t.Callable[[str], None],
        banner: str = "Starting...",
        clock: t.Callable[[], float] = time.monotonic,
        on_launch: t.Callable[[int], object] = lambda restarts: None,
    ) -> None:
        self.s = settings
        self.runner = runner
        self.me = me
        self.pane_of = pane_of
        self.say = say
        self.banner = banner
        self.on_launch = on_launch
        self.launches = 0
        self.tracker = CrashTracker(settings.policy, clock)
        self.restarts = RestartBudget(settings.policy, clock)
        self.start_pane: str | None = None
        self.give_up: GiveUp | None = None
        self.spent_out = False
        """A headless run's budget is spent: nothing more is launched."""
        self.recorded_at_launch: str | None = None
        self.usage: UsageGate | None = None
        self.refused: set[str] = set()
        """Start-up refusals already retried once (supervisor.claude_run.refusals)."""
        self.launched_at = 0.0
        """Wall-clock time of the last launch (a StopFailure mark newer than it is this Claude's)."""
        """The conversation recorded for the pane (or this claude-run) when the last Claude was launched."""

    # ------------------------------------------------------------------ plans

    def first_plan(self) -> Plan:
        return lp.first_launch(
            self.s.root,
            self.me,
            self.start_pane,
            self.s.cwd,
            self.s.env,
            user_selects=self.s.user_args.selects_conversation,
            user_resumes=self.s.user_args.resume_id,
        )

    def _panes(self) -> list[str | None]:
        return [self.start_pane, self.pane_of()] if self.start_pane else [self.pane_of()]

    def _resumed(self, plan: Plan) -> str | None:
        """How the launch of *plan* picked an existing conversation, for messages; None if it did not."""
        if plan.resume:
            return f"--resume {short(plan.resume)}"
        if plan.with_selectors and self.s.user_args.selects_conversation:
            return " ".join(self.s.user_args.first_launch_selectors)
        return None

    # ------------------------------------------------------------------ loop

    def run(self) -> int:
        try:
            return self._run()
        finally:
            lp.forget_record(self.s.root, self.me)  # outside a fleet, the record of our conversation

    def _run(self) -> int:
        self.start_pane = self.pane_of()
        if self.start_pane:
            self.say(f"Fleet pane ID: {self.start_pane}")
        plan = self.first_plan()
        for note in plan.notes:
            self.say(note)
        self.say(self.banner)
        self.usage = UsageGate.of(
            self.s.root, self.start_pane, self.me.pid, self.me.token, self.s.env, ignore=self.s.ignore_usage
        )
        while True:
            if self.runner.stop_signal is not None:
                self.say(f"Stopped by {signal_name(self.runner.stop_signal)}.")
                return 128 + self.runner.stop_signal
            if not self._wait_for_usage():
                continue  # stopped while waiting: said above
            budget_args = self.s.budget.launch_args(self.start_pane) if self.s.budget else []
            if budget_args is None:  # spent before this launch: nothing is sent
                self.spent_out = True
                return EXIT_BUDGET_SPENT
            argv = launch_argv(
                self.s.claude,
                self.s.user_args,
                system_prompt=self.s.system_prompt,
                resume=plan.resume,
                prompt=plan.prompt,
                with_selectors=plan.with_selectors,
                with_prompt=plan.with_prompt,
            )
            argv[1:1] = budget_args
            self.on_launch(self.launches)  # restarts so far: 0 at the first launch
            self.recorded_at_launch = lp.recorded(self.s.root, self.pane_of(), self.me)
            self.launches += 1
            self.launched_at = time.time()
            with creating(self.s.worktree, self.say, cancelled=lambda: self.runner.stop_signal is not None):
                if self.runner.stop_signal is not None:  # it came while we waited for the worktree lock
                    continue
                env = launch_env(self.s.env, self.s.root, self.start_pane, (self.me.pid, self.me.token), argv)
                outcome = self.runner.run(self.s.claude, argv, env)
            next_plan = self.after_exit(plan, outcome)
            if next_plan is None:
                return self._final_status(outcome)
            plan = next_plan
            for note in plan.notes:
                self.say(note)

    def _wait_for_usage(self) -> bool:
        """Before a launch: wait while a window of the credential is at the wait threshold. False when
        a stop signal came meanwhile."""
        wait = self.usage.before_launch() if self.usage else None
        if wait is None or self.usage is None:
            return True
        self.say(f"Not starting Claude yet: {self.usage.describe(wait)}")
        self.usage.park(wait)
        if not self._pause_for(wait, stopped=False):
            return False
        self.usage.gone_on()
        return True

    def _pause_for(self, wait: Wait, *, stopped: bool) -> bool:
        """Wait until *wait* is over: its moment came, or it no longer stands (cleared by a person, or
        the window reopened early); False when a stop signal came meanwhile."""
        assert self.usage is not None
        while (left := wait.go_at - time.time()) > 0:
            if not self.runner.pause(min(left, LOOK_EVERY)):
                return False
            if time.time() < wait.go_at and not self.usage.still(wait, stopped=stopped):
                self.say("The usage wait no longer stands (cleared, or the window reopened early): going on")
                break
        return self.runner.stop_signal is None

    def _after_usage_limit(self, plan: Plan, outcome: Outcome) -> Plan | t.Literal[False] | None:
        """The next launch when *outcome* was a usage-limit stop (after waiting for the reset and the
        agent's turn); None to exit (stopped meanwhile); False when it was no usage limit."""
        if self.usage is None:
            return False
        wait = self.usage.after_exit(outcome.status, self.launched_at)
        if wait is None:
            return False
        self.tracker.healthy_run(outcome.uptime)  # not a crash, and not counted as one
        self.say(f"Claude exited with status {outcome.status}: {self.usage.describe(wait, stopped=True)}")
        if not self._pause_for(wait, stopped=True) or self.runner.stop_signal is not None:
            return None
        self.usage.gone_on()
        self.say("The usage window reopened: going on")
        next_plan = self._after_crash(plan)
        if next_plan.resume and not next_plan.prompt:
            next_plan.prompt = CONTINUE_PROMPT  # a resumed conversation goes on by itself, as Claude's own
        return next_plan

    def _after_crash(self, plan: Plan) -> Plan:
        """The launch after *plan*'s Claude ended by itself (a crash or a usage limit): resume or fresh."""
        return lp.after_crash(
            self.s.root,
            self.me,
            self.pane_of(),
            self.s.cwd,
            self.s.env,
            launched=plan.resume,
            recorded_at_launch=self.recorded_at_launch,
            continuing=(plan.session, plan.prompt) if plan.session and plan.prompt else None,
        )

    def _final_status(self, outcome: Outcome) -> int:
        if outcome.stopped_by is not None:
            self.say(
                f"Stopped by {signal_name(outcome.stopped_by)}; Claude exited with status {outcome.status}."
            )
            return outcome.status
        if self.spent_out:
            return EXIT_BUDGET_SPENT
        if self.give_up is not None:
            return self.give_up.status
        if self.runner.stop_signal is not None:  # it arrived between two launches
            self.say(f"Stopped by {signal_name(self.runner.stop_signal)}.")
            return 128 + self.runner.stop_signal
        paused = self._paused_at_budget() if outcome.status == 0 else None
        if paused is not None:
            self.say(paused)
            return EXIT_BUDGET_SPENT
        self.say("Goodbye.")
        return outcome.status

    def _paused_at_budget(self) -> str | None:
        """What to say when Claude ended while its agent is paused at a budget (the status line interrupts
        a Claude outside a fleet pane that would go on past it): the budget and how to go on, else None."""
        from claude_shepherd.supervisor.session import budget_records, pane_records

        where = pane_records.spot(self.start_pane, (self.me.pid, self.me.token))
        paused = budget_records.paused(self.s.root, where[0]) if where else None
        if paused is None or not paused["raise"]:
            return None
        spent = paused["spent"]
        amounts = f" (${spent:.2f} of ${paused['usd']:.2f})" if spent is not None else ""
        return f"Paused at its budget{amounts}; the conversation is kept. To go on: {paused['raise']}"

    def after_exit(self, plan: Plan, outcome: Outcome) -> Plan | None:
        """The next launch after *outcome*, or None to exit."""
        if outcome.stopped_by is not None:
            return None
        if self.s.budget is not None:
            self.s.budget.measure_exit(self.start_pane)
            if self.s.budget.spent_out(self.start_pane):
                self.spent_out = True  # at its budget, not crashed: nothing more is sent
                return None
        if self.restarts.exhausted() and lp.restart_pending(self.s.root, self.me, self._panes()):
            policy = self.s.policy
            self.give_up = GiveUp(
                1,
                f"{policy.restart_limit} restarts were requested within {policy.restart_window:g}s; "
                f"stopping to avoid a restart loop (the pending request is kept: run claude-run "
                f"again, or fleet start, to continue it)",
            )
            return None
        restart = lp.take_restart(self.s.root, self.me, self._panes(), warn=self.say)
        if restart is not None:
            self.restarts.spend()
            self.tracker.healthy_run(outcome.uptime)
            return restart
        refusal = refusal_in(outcome.status, outcome.said)
        if refusal is not None and not (refusal.retry_once and refusal.reason not in self.refused):
            self.give_up = GiveUp(REFUSED_STATUS, refusal.message())
            return None
        if refusal is not None:
            self.refused.add(refusal.reason)
            self.say(f"Claude refused to start ({refusal.reason}); trying once more")
            return self._after_crash(plan) if self.runner.pause(self.s.policy.backoff) else None
        limited = self._after_usage_limit(plan, outcome)
        if limited is not False:
            return limited
        resumed = self._resumed(plan)
        if resumed and outcome.status == RESUME_REFUSED_STATUS and outcome.uptime <= self.s.resume_window:
            return Plan(
                prompt=plan.prompt,
                with_prompt=plan.with_prompt
                or plan.resume is not None,  # a fresh conversation gets its prompt
                notes=[
                    f"Claude refused to resume the conversation ({resumed}: it exited with status "
                    f"{outcome.status} after {outcome.uptime:.1f}s); starting fresh instead"
                ],
            )
        if outcome.status == 0:
            return None
        verdict = self.tracker.crashed(outcome.uptime)
        if verdict.give_up:
            policy = self.s.policy
            self.give_up = GiveUp(
                outcome.status,
                f"Claude exited with status {outcome.status} {verdict.recent} times within "
                f"{policy.window:g}s; giving up (check its arguments and installation: {self.s.claude})",
            )
            return None
        self.say(
            f"Claude exited with status {outcome.status} after {outcome.uptime:.1f}s "
            f"(crash {verdict.recent} of {self.s.policy.limit} allowed within {self.s.policy.window:g}s); "
            + (f"starting it again in {verdict.delay:.2f}s" if verdict.delay else "starting it again")
        )
        if verdict.delay > 0 and not self.runner.pause(verdict.delay):
            return None
        if self.runner.stop_signal is not None:
            return None
        return self._after_crash(plan)
