"""The schema of ``.state.json``: each field's type declared once, checked with the standard library.

Every state a command or the supervisor writes is checked against
:data:`SCHEMA` first (:func:`validate_state`), so a bad value never lands on
disk. Every field is optional and may be ``null`` (bash-era files have
whatever subset they had); unknown fields are kept untouched. The checks are
strict — a ``"3"`` is not a number, ``true`` is not 1 — and bound what
readers rely on (a PID within the kernel's range).

Standard library only, and cheap to import: ``session`` pays for it on every
write, and pydantic alone cost more than the whole command.
"""

from __future__ import annotations

import math

from claude_shepherd.supervisor.session.fields import LIFECYCLES, F
from claude_shepherd.supervisor.session.numbers import PID_MAX
from claude_shepherd.supervisor.session.store import StateError

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per call; annotations are never evaluated
    import typing as t


def first_problem(found: t.Iterable[tuple[str, str | None]]) -> str | None:
    """``WHERE: WHAT`` for the first part of a value that is wrong (checked lazily, in order), or None."""
    for where, wrong in found:
        if wrong is not None:
            return f"{where}: {wrong}"
    return None


class Check:
    """One field's type: :meth:`problem` says what is wrong with a value, or None; :attr:`expected`
    says what a value should be, in the words of an error message."""

    __slots__ = ()
    expected = "a value"

    def problem(self, value: object) -> str | None:
        raise NotImplementedError


class Str(Check):
    __slots__ = ()
    expected = "a string"

    def problem(self, value: object) -> str | None:
        return None if isinstance(value, str) else self.expected


class Bool(Check):
    __slots__ = ()
    expected = "true or false"

    def problem(self, value: object) -> str | None:
        return None if isinstance(value, bool) else self.expected


class Int(Check):
    __slots__ = ("low", "high", "expected")

    def __init__(self, low: int | None = None, high: int | None = None) -> None:
        self.low, self.high = low, high
        bounds = [f">= {low}" if low is not None else "", f"<= {high}" if high is not None else ""]
        self.expected = " ".join(["a whole number", *[b for b in bounds if b]])

    def problem(self, value: object) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int):
            return self.expected
        if (self.low is not None and value < self.low) or (self.high is not None and value > self.high):
            return self.expected
        return None


class Number(Check):
    __slots__ = ("low", "expected")

    def __init__(self, low: float | None = None) -> None:
        self.low = low
        self.expected = "a finite number" + (f" >= {low:g}" if low is not None else "")

    def problem(self, value: object) -> str | None:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return self.expected
        return self.expected if self.low is not None and value < self.low else None


class OneOf(Check):
    __slots__ = ("values", "expected")

    def __init__(self, values: t.Iterable[str]) -> None:
        self.values = tuple(values)
        self.expected = "one of " + ", ".join(self.values)

    def problem(self, value: object) -> str | None:
        return None if value in self.values and isinstance(value, str) else self.expected


class ListOf(Check):
    __slots__ = ("item", "expected")

    def __init__(self, item: Check) -> None:
        self.item = item
        self.expected = f"a list of {item.expected}"

    def problem(self, value: object) -> str | None:
        if not isinstance(value, list):
            return self.expected
        return first_problem((f"item {index}", self.item.problem(item)) for index, item in enumerate(value))


class MapOf(Check):
    __slots__ = ("value", "expected")

    def __init__(self, value: Check) -> None:
        self.value = value
        self.expected = f"an object of {value.expected}"

    def problem(self, value: object) -> str | None:
        if not isinstance(value, dict):
            return self.expected
        return first_problem((str(key), self.value.problem(item)) for key, item in value.items())


class Object(Check):
    """An object with declared fields (optional unless *required*); other keys are kept."""

    __slots__ = ("fields", "required", "name", "expected")

    def __init__(self, name: str, fields: dict[str, Check], required: t.Iterable[str] = ()) -> None:
        self.name, self.fields, self.required = name, fields, frozenset(required)
        self.expected = f"{name} ({', '.join(sorted(self.required))} required)"

    def problem(self, value: object) -> str | None:
        if not isinstance(value, dict):
            return self.expected
        for key in sorted(self.required - value.keys()):
            return f"{key} is missing"
        return first_problem(
            (key, check.problem(value[key]))
            for key, check in self.fields.items()
            if value.get(key) is not None
        )


class AnyOf(Check):
    __slots__ = ("choices", "expected")

    def __init__(self, *choices: Check) -> None:
        self.choices = choices
        self.expected = " or ".join(c.expected for c in choices)

    def problem(self, value: object) -> str | None:
        if any(choice.problem(value) is None for choice in self.choices):
            return None
        return self.expected


PHASE_DECLARATION = Object(
    "a phase {major, minor, name, proof}",
    {"major": Int(0), "minor": Int(0), "name": Str(), "proof": ListOf(Str())},
    required=("major", "name"),
)
PHASE_RECORD = Object(
    "a phase record {phase, ts, proof}",
    {"phase": Str(), "ts": Str(), "proof": MapOf(AnyOf(Str(), Number(), Bool()))},
    required=("phase",),
)

SCHEMA: dict[str, Check] = {
    # identity
    F.PID: Int(0, PID_MAX),
    F.PID_START: Str(),
    F.SESSION_ID: Str(),
    F.FLEET_PANE_ID: Str(),
    # lifecycle
    F.LIFECYCLE: OneOf(LIFECYCLES),
    F.OVERFLOWED: Bool(),
    F.OVERFLOW_CONVERSATION: Str(),
    F.KILL_REQUESTED: Bool(),
    F.RESTART_PROMPT: Str(),
    F.LOADING: Bool(),
    F.BOOTSTRAP_CONVERSATION: Str(),
    # work
    F.SKILL: Str(),
    F.CURRENT_PHASE: Str(),
    F.PHASES: ListOf(PHASE_DECLARATION),
    F.PHASE_HISTORY: ListOf(AnyOf(Str(), PHASE_RECORD)),
    F.COMPLETED_SKILLS: ListOf(Str()),
    F.TARGET_FILE: Str(),
    F.LOG_TEMPLATE: Str(),
    F.SESSION_DESCRIPTION: Str(),
    F.SEARCH_KEYWORDS: ListOf(Str()),
    F.KEYWORDS: Str(),
    # context
    F.CONTEXT_USAGE: Number(0),
    F.CONTEXT_USAGE_AT: Str(),
    F.CONTEXT_WINDOW_SIZE: Int(1),
    F.DEHYDRATE_TOOL_CALLS: Int(0),
    # heartbeat
    F.TOOL_CALLS_SINCE_LAST_LOG: Int(0),
    F.TOOL_CALLS_BY_TRANSCRIPT: MapOf(Int(0)),
    F.WARN_AFTER: Int(
        0
    ),  # bounded where they are set (work_transitions.check_settings) and read (the heartbeat)
    F.BLOCK_AFTER: Int(0),
    # timestamps
    F.STARTED_AT: Str(),
    F.LAST_HEARTBEAT: Str(),
}
"""Every field the project reads, with its type; anything else on disk is kept untouched."""


class SchemaError(StateError):
    """A state that would be written with a field of the wrong type."""


def problems(state: t.Mapping[str, object]) -> list[str]:
    """What is wrong with *state*, one entry per bad field (empty when it is valid)."""
    found = []
    for field, check in SCHEMA.items():
        value = state.get(field)
        if value is None:
            continue
        wrong = check.problem(value)
        if wrong is not None:
            shown = repr(value)
            found.append(f"field {field} would be invalid (expected {wrong}, got {shown[:80]})")
    return found


def validate_state(state: t.Mapping[str, object]) -> None:
    """The ``validate`` hook of :func:`claude_shepherd.supervisor.session.store.update_state`: refuse a bad state before it is written."""
    wrong = problems(state)
    if wrong:
        raise SchemaError(wrong[0])
