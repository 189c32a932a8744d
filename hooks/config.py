"""The hooks' settings, read from the environment Claude Code passes on.

``claude-run`` exports ``SESSION_REQUIRED=1``; the rest are optional knobs.
A malformed value falls back to the default instead of disabling a gate.
Standard library only.
"""

from __future__ import annotations

import os
import sys

from claude_shepherd.supervisor.env import (
    DEHYDRATE_BUDGET_ENV,
    EXTRA_COMMANDS_ENV,
    LEGACY_THRESHOLD_ENV,
    SESSION_REQUIRED_ENV,
    THRESHOLD_ENV,
)
from claude_shepherd.supervisor.session.fields import (
    DEFAULT_DEHYDRATE_CALL_BUDGET,
    DEFAULT_OVERFLOW_THRESHOLD,
)
from claude_shepherd.supervisor.session.numbers import parse_count, parse_decimal

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t

SESSION_COMMAND = "session"
MAX_DEHYDRATE_CALL_BUDGET = 10_000


class Config:
    """The knobs of one hook call.

    (Plain classes rather than ``typing.NamedTuple`` on the hook path: with
    postponed annotations a NamedTuple compiles every field annotation at
    import, about 0.3 ms per field.)
    """

    __slots__ = ("session_required", "threshold", "dehydrate_budget", "session_programs", "extra_programs")

    def __init__(
        self,
        session_required: bool,
        threshold: float,
        dehydrate_budget: int,
        session_programs: frozenset[str],  # how the `session` command may be spelled
        extra_programs: frozenset[str],  # operator-configured commands treated like `session`
    ) -> None:
        self.session_required = session_required
        self.threshold = threshold
        self.dehydrate_budget = dehydrate_budget
        self.session_programs = session_programs
        self.extra_programs = extra_programs


def _threshold(env: t.Mapping[str, str]) -> float:
    for name in (THRESHOLD_ENV, LEGACY_THRESHOLD_ENV):
        value = parse_decimal(env.get(name, "").strip(), maximum=1.0)
        if value:
            return value
    return DEFAULT_OVERFLOW_THRESHOLD


def _budget(env: t.Mapping[str, str]) -> int:
    value = parse_count(env.get(DEHYDRATE_BUDGET_ENV, "").strip(), maximum=MAX_DEHYDRATE_CALL_BUDGET)
    return DEFAULT_DEHYDRATE_CALL_BUDGET if value is None else value


def session_script() -> str:
    """This installation's ``session`` console script (beside our interpreter)."""
    return os.path.join(os.path.dirname(sys.executable), SESSION_COMMAND)


def _extras(env: t.Mapping[str, str]) -> frozenset[str]:
    """``:``-separated names or absolute paths; anything with odd characters is ignored."""
    raw = env.get(EXTRA_COMMANDS_ENV, "")
    names = set()
    for item in raw.split(":"):
        item = item.strip()
        if item and all(c.isalnum() or c in "-_./+@%," for c in item):
            names.add(item)
    return frozenset(names)


def load(env: t.Mapping[str, str] | None = None) -> Config:
    env = os.environ if env is None else env
    return Config(
        session_required=env.get(SESSION_REQUIRED_ENV) == "1",
        threshold=_threshold(env),
        dehydrate_budget=_budget(env),
        session_programs=frozenset({SESSION_COMMAND, session_script()}),
        extra_programs=_extras(env),
    )
