"""Phase labels (``3: Build``, ``3.1: Tests``, ``3.1A: Variant``) and the sequencing rules.

When a skill declares ``phases`` (``[{major, minor, name, proof?}]``), ``session
phase`` only moves forward in order, as the original intended — with N.M
sub-phases parsed correctly (the bash version used ``\\d`` with GNU grep, so
every minor read as 0, B3). Standard library only.
"""

from __future__ import annotations

import re

from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.session.numbers import parse_count
from claude_shepherd.supervisor.session.records import Record

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    from claude_shepherd.supervisor.session.state import PhaseDeclaration

BLANK = "________"
MAX_PHASE_NUMBER = 9999
_LABEL = re.compile(r"^([0-9]+)([A-Za-z]*)(?:\.([0-9]+)([A-Za-z]*))?\s*:\s*(\S.*)$")


class PhaseError(ShepherdError):
    """A phase label or transition the rules refuse."""


class Label(Record):
    __slots__ = ("major", "minor", "name")
    major: int
    minor: int
    name: str

    @property
    def key(self) -> tuple[int, int]:
        return (self.major, self.minor)


def parse_label(label: str) -> Label:
    """Parse ``N: Name`` / ``N.M: Name`` / ``N.MA: Name`` or say what is wrong."""
    match = _LABEL.match(label.strip())
    if not match:
        raise PhaseError(f"phase label {label!r} must start with a number, like '3: Build' or '3.1: Tests'")
    major, major_suffix, minor, suffix, name = match.groups()
    if major_suffix:
        raise PhaseError(
            f"phase label {label!r}: letters after the major number are not allowed; "
            f"use a sub-phase like '{major}.1: {name}'"
        )
    if suffix and suffix != suffix.upper():
        raise PhaseError(f"phase label {label!r}: a letter suffix must be uppercase, like '3.1A'")
    if len(suffix or "") > 1:
        raise PhaseError(f"phase label {label!r}: only a single letter suffix is allowed, like '3.1A'")
    numbers = (
        parse_count(major, maximum=MAX_PHASE_NUMBER),
        parse_count(minor or "0", maximum=MAX_PHASE_NUMBER),
    )
    if numbers[0] is None or numbers[1] is None:
        raise PhaseError(f"phase label {label!r}: phase numbers go up to {MAX_PHASE_NUMBER}")
    return Label(numbers[0], numbers[1], name.strip())


def try_parse(label: object) -> Label | None:
    if not isinstance(label, str):
        return None
    try:
        return parse_label(label)
    except PhaseError:
        return None


def format_label(major: int, minor: int, name: str) -> str:
    return f"{major}: {name}" if minor == 0 else f"{major}.{minor}: {name}"


def declared(phases: object) -> list[PhaseDeclaration]:
    """The usable phase declarations, sorted by (major, minor)."""
    if not isinstance(phases, list):
        return []
    good = [p for p in phases if _usable(p)]
    return sorted(good, key=lambda p: (p["major"], p.get("minor", 0)))


def _usable(declaration: object) -> bool:
    """A declaration with a whole major (and minor, when given) and a name."""
    return (
        isinstance(declaration, dict)
        and isinstance(declaration.get("major"), int)
        and isinstance(declaration.get("minor", 0), int)
        and isinstance(declaration.get("name"), str)
    )


def first_label(phases: object, default: str) -> str:
    decl = declared(phases)
    if not decl:
        return default
    p = decl[0]
    return format_label(p["major"], p.get("minor", 0), p["name"])


class Transition(Record):
    __slots__ = ("allowed", "append", "expected")
    allowed: bool
    append: PhaseDeclaration | None  # an undeclared sub-phase to add to ``phases``
    expected: str  # what would have been allowed next, for the error message


def check_transition(phases: object, current: object, target: Label) -> Transition:
    """May the session move from *current* to *target* without approval?"""
    decl = declared(phases)
    keys = [(p["major"], p.get("minor", 0)) for p in decl]
    cur = try_parse(current)
    if cur is None:
        nxt = keys[0] if keys else None
        expected = _describe(decl, nxt)
        return Transition(target.key == nxt, None, expected)
    later = [k for k in keys if k > cur.key]
    nxt = later[0] if later else None
    expected = _describe(decl, nxt)
    if target.key == cur.key or target.key == nxt:  # (a) re-enter, (b) next declared
        return Transition(True, None, expected)
    # (c) skip the remaining sub-phases of this major, (d) leave a sub-phase
    if target.key == (cur.major + 1, 0) and (cur.minor > 0 or (nxt is not None and nxt[0] == cur.major)):
        return Transition(True, None, expected)
    if target.major == cur.major and target.minor > cur.minor and target.key not in keys:
        # (e) an undeclared sub-phase of the current major: allowed and recorded
        return Transition(True, {"major": target.major, "minor": target.minor, "name": target.name}, expected)
    return Transition(False, None, expected)


def _describe(decl: list[PhaseDeclaration], key: tuple[int, int] | None) -> str:
    for p in decl:
        if (p["major"], p.get("minor", 0)) == key:
            return format_label(p["major"], p.get("minor", 0), p["name"])
    return "(no further declared phase)"


def find_declaration(phases: object, target: Label) -> PhaseDeclaration | None:
    for p in declared(phases):
        if (p["major"], p.get("minor", 0)) == target.key:
            return p
    return None


def parse_proof(text: str) -> dict[str, str]:
    """``key: value`` lines (keys may contain ``§``) into a dict."""
    proof: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            proof[key.strip()] = value.strip()
    return proof


def check_proof(declaration: PhaseDeclaration | None, proof: dict[str, str], label: str) -> None:
    """Refuse entering a phase whose declared proof fields are missing or blank."""
    required = declaration.get("proof") if declaration else None
    if not isinstance(required, list) or not required:
        return
    if not proof:
        raise PhaseError(
            f"phase {label!r} requires proof on stdin as 'key: value' lines: {', '.join(map(str, required))}"
        )
    missing = [str(k) for k in required if str(k) not in proof]
    if missing:
        raise PhaseError(f"phase {label!r} is missing proof fields: {', '.join(missing)}")
    blank = [k for k, v in proof.items() if BLANK in v]
    if blank:
        raise PhaseError(f"phase {label!r}: proof field {blank[0]!r} is an unfilled blank; fill it in")
