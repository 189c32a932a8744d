"""State only flows forward, except through activate (seed 002 §3.6, hard requirement 6).

A hypothesis state machine drives random sequences of every transition over
one state dict and checks after each step that no transition wrote what it
does not own and that the result still satisfies the schema.
"""

from __future__ import annotations

import os
import typing as t
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.session import (
    activate_transition,
    owner_transitions,
    restart_transitions,
    work_transitions,
)
from claude_shepherd.supervisor.session.fields import F, Lifecycle
from claude_shepherd.supervisor.session.identity import PID_MAX, start_token
from claude_shepherd.supervisor.session.schema import validate_state as parse

ME = os.getpid()
MY_TOKEN = start_token(ME)
DEAD_PID = PID_MAX  # pid_max is at most PID_MAX and PIDs stay below it: never a live process
SESSION_DIR = Path("/p/sessions/2026_01_01_T")

skills = st.sampled_from(["implement", "test", "fix"])
ids = st.sampled_from(["conv-a", "conv-b", None])
usages = st.one_of(st.none(), st.floats(min_value=0, max_value=1.2, allow_nan=False))


class SessionMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.state: dict[str, t.Any] = {}
        self.before: dict[str, t.Any] = {}
        self.op = "init"
        self.activated_with: str | None = None

    def _apply(self, op: str, fn: t.Callable[[dict[str, t.Any]], t.Any]) -> t.Any:
        self.before = dict(self.state)
        self.op = op
        try:
            return fn(self.state)
        except ShepherdError:
            assert self.state == self.before or op == "phase", f"{op} failed but wrote"
            self.state = dict(self.before)
            return None

    # ---------------------------------------------------------------- rules

    @rule(skill=skills, session_id=ids, mine=st.booleans(), approved=st.booleans())
    def activate(self, skill: str, session_id: str | None, mine: bool, approved: bool) -> None:
        if not mine and self.state:
            self.state[F.PID] = DEAD_PID  # the previous owner died
            self.state.pop(F.PID_START, None)
        self.activated_with = session_id
        self._apply(
            "activate",
            lambda s: activate_transition.activate(
                s,
                skill=skill,
                pid=ME,
                token=MY_TOKEN,
                owner_running=mine,
                session_id=session_id,
                approved="ok" if approved else None,
            ),
        )

    @precondition(lambda self: bool(self.state))
    @rule(label=st.sampled_from(["Phase 2: Work", "3: Review", "Phase 1: Setup"]))
    def phase(self, label: str) -> None:
        self._apply("phase", lambda s: work_transitions.phase(s, label))

    @precondition(lambda self: bool(self.state))
    @rule(text=st.sampled_from(["did things", ""]))
    def deactivate(self, text: str) -> None:
        self._apply("deactivate", lambda s: work_transitions.deactivate(s, description=text, keywords=["k"]))

    @precondition(lambda self: bool(self.state))
    @rule()
    def request_restart(self) -> None:
        self._apply("request_restart", lambda s: restart_transitions.request_restart(s, SESSION_DIR))

    @precondition(lambda self: bool(self.state))
    @rule()
    def begin_dehydrate(self) -> None:
        self._apply("begin_dehydrate", restart_transitions.begin_dehydrate)

    @precondition(lambda self: bool(self.state))
    @rule(conversation=ids)
    def mark_overflowed(self, conversation: str | None) -> None:
        self._apply("mark_overflowed", lambda s: restart_transitions.mark_overflowed(s, conversation))

    @precondition(lambda self: bool(self.state))
    @rule()
    def dehydrate_call(self) -> None:
        self._apply("dehydrate_call", lambda s: restart_transitions.count_dehydrate_call(s, 25))

    @precondition(lambda self: bool(self.state))
    @rule()
    def consume_restart(self) -> None:
        self._apply("consume_restart", restart_transitions.consume_restart)

    @precondition(lambda self: bool(self.state))
    @rule()
    def claim_for_resume(self) -> None:
        self._apply(
            "claim_for_resume", lambda s: owner_transitions.claim_for_resume(s, pid=ME, token=MY_TOKEN)
        )

    @precondition(lambda self: bool(self.state))
    @rule()
    def resumed(self) -> None:
        self._apply("resumed", lambda s: owner_transitions.resumed(s, pid=ME, token=MY_TOKEN))

    @precondition(lambda self: bool(self.state))
    @rule()
    def resumed_by_a_stranger(self) -> None:
        self._apply("resumed_by_a_stranger", lambda s: owner_transitions.resumed(s, pid=1, token=None))

    @precondition(lambda self: bool(self.state))
    @rule(session_id=ids, usage=usages)
    def bind(self, session_id: str | None, usage: float | None) -> None:
        self._apply(
            "bind",
            lambda s: owner_transitions.bind_conversation(
                s, session_id=session_id, usage=usage, window=200000
            ),
        )

    # ------------------------------------------------------------ invariants

    @invariant()
    def schema_holds(self) -> None:
        parse(self.state)

    @invariant()
    def overflow_is_sticky(self) -> None:
        if self.before.get(F.OVERFLOWED) is True and self.op != "activate":
            assert self.state.get(F.OVERFLOWED) is True, f"{self.op} cleared overflowed"
        if self.state.get(F.OVERFLOWED) is True and self.before.get(F.OVERFLOWED) is not True:
            assert self.op == "mark_overflowed", f"{self.op} set overflowed"
        overflowed_in = self.before.get(F.OVERFLOW_CONVERSATION) or self.before.get(F.SESSION_ID)
        same = self.activated_with is None or self.activated_with == overflowed_in
        if (
            self.op == "activate"
            and self.before.get(F.OVERFLOWED) is True
            and same
            and self.state != self.before
        ):
            assert self.state.get(F.OVERFLOWED) is True, (
                "activate inside the overflowed conversation cleared it"
            )

    @invariant()
    def dehydrate_budget_belongs_to_the_conversation(self) -> None:
        """Spent dehydrate calls come back only when a new conversation activates."""
        before = self.before.get(F.DEHYDRATE_TOOL_CALLS)
        after = self.state.get(F.DEHYDRATE_TOOL_CALLS)
        if not isinstance(before, int) or (isinstance(after, int) and after >= before):
            return
        assert self.op == "activate", f"{self.op} refilled the dehydrate budget"
        overflowed_in = self.before.get(F.OVERFLOW_CONVERSATION) or self.before.get(F.SESSION_ID)
        assert self.before.get(F.OVERFLOWED) is not True or (
            self.activated_with is not None and self.activated_with != overflowed_in
        ), "activate inside the overflowed conversation refilled the dehydrate budget"

    @invariant()
    def kill_request_has_one_writer_each_way(self) -> None:
        was, now = self.before.get(F.KILL_REQUESTED) is True, self.state.get(F.KILL_REQUESTED) is True
        if now and not was:
            assert self.op == "request_restart", f"{self.op} set killRequested"
        if was and not now:
            assert self.op in {"consume_restart", "activate"}, f"{self.op} cleared killRequested"

    @invariant()
    def lifecycle_moves_only_by_its_owner(self) -> None:
        old, new = self.before.get(F.LIFECYCLE), self.state.get(F.LIFECYCLE)
        if old == new:
            return
        owners = {
            Lifecycle.ACTIVE: {"activate", "resumed"},
            Lifecycle.COMPLETED: {"deactivate"},
            Lifecycle.DEHYDRATING: {"begin_dehydrate"},
            Lifecycle.RESTARTING: {"consume_restart"},
            Lifecycle.RESUMING: {"claim_for_resume"},
        }
        assert self.op in owners[new], f"{self.op} moved lifecycle {old} -> {new}"
        if new == Lifecycle.RESTARTING:
            assert self.before.get(F.KILL_REQUESTED) is True
        if self.op == "resumed":
            assert old == Lifecycle.RESUMING and self.state.get(F.PID) == ME, "only the owner's resume ends"

    @invariant()
    def session_id_is_never_resurrected(self) -> None:
        if self.op == "request_restart" and self.state != self.before:
            assert F.SESSION_ID not in self.state
        guarded = (
            self.before.get(F.KILL_REQUESTED) is True
            or self.before.get(F.OVERFLOWED) is True
            or self.before.get(F.LIFECYCLE) == Lifecycle.DEHYDRATING
        )
        if self.op == "bind" and guarded:
            assert self.state.get(F.SESSION_ID) == self.before.get(F.SESSION_ID)

    @invariant()
    def restart_prompt_pairs_with_kill_request(self) -> None:
        if self.state.get(F.RESTART_PROMPT):
            assert self.state.get(F.KILL_REQUESTED) is True


TestSessionMachine = SessionMachine.TestCase
TestSessionMachine.settings = settings(
    max_examples=150, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
