"""Numbers read from outside (environment, tmux options, ``/proc``, state files), parsed in one place.

Everything an agent can write is hostile input: ``str.isdigit`` accepts ``'²'``
(which ``int`` refuses), ``int`` accepts signs, whitespace, underscores and
every script's digits, and ``float`` adds ``nan``, ``inf`` and exponents. The
parsers here accept only plain ASCII digits (and one ``.`` for a decimal) of a
bounded length, bound the value, and answer None for anything else, so a bad
value costs only the field it was read for.

Standard library only, no imports at all: the hooks and ``session`` load it on
every call.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations are never evaluated
    import typing as t

PID_MAX = 4_194_304
"""The kernel's largest possible PID (``PID_MAX_LIMIT`` on 64-bit Linux); anything above is not a PID."""
MAX_DIGITS = 20
"""No number we read needs more digits; longer text is refused before any conversion."""
_DIGITS = frozenset("0123456789")
MAX_EPOCH = 2**40
"""No moment we read lies further than this (epoch seconds, the year 36812): a larger one is no moment."""


def _plain_digits(raw: str) -> bool:
    return 0 < len(raw) <= MAX_DIGITS and all(char in _DIGITS for char in raw)


def parse_count(raw: object, *, maximum: int) -> int | None:
    """A whole number ``0..maximum`` written as ASCII digits only; None for anything else."""
    if not isinstance(raw, str) or not _plain_digits(raw):
        return None
    value = int(raw)
    return value if value <= maximum else None


def parse_pid(raw: object) -> int | None:
    """A PID (``1..PID_MAX``) written as ASCII digits only; None for anything else."""
    value = parse_count(raw, maximum=PID_MAX)
    return value if value else None


def seconds_from(env: t.Mapping[str, str], name: str, *, default: float, maximum: float) -> float:
    """A number of seconds ``0..maximum`` from variable *name* of *env*; *default* when unset or not one."""
    value = parse_decimal(env.get(name, "").strip(), maximum=maximum)
    return default if value is None else value


def parse_decimal(raw: object, *, maximum: float) -> float | None:
    """A number ``0..maximum`` written as ASCII digits with at most one ``.`` (``12``, ``0.76``, ``.5``);
    None for anything else (signs, exponents, ``nan``, ``inf``, whitespace, other scripts' digits)."""
    if not isinstance(raw, str) or len(raw) > MAX_DIGITS:
        return None
    whole, _, fraction = raw.partition(".")
    if (
        not (whole or fraction)
        or (whole and not _plain_digits(whole))
        or (fraction and not _plain_digits(fraction))
    ):
        return None
    value = float(raw)
    return value if value <= maximum else None


def json_number(value: object, most: float) -> float | None:
    """A number a JSON record holds, from 0 to *most*, as a float; None for a bool, a string, NaN or
    one out of range. The range is checked before any conversion: JSON reads an integer of 400 digits
    as an int that no float can hold."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if 0 <= value <= most else None  # NaN fails both comparisons
