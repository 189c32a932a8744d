"""The house's figures, counted from the source: no module over 500 lines, and few ``Any``.

A record that crosses a module boundary is typed (a TypedDict read checked beside its writer, as
``session/state.py`` does for ``.state.json``); ``Any`` is left for what no type describes (argparse's
keyword arguments, a value a YAML or JSON document may hold before it is checked). Run with ``-s`` to
see the figures.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("supervisor", "hooks", "fleet")
MAX_LINES = 500
MAX_ANY = 120


def sources() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))


def any_uses(source: str) -> int:
    """How many times *source* names ``Any`` (``t.Any``, ``typing.Any``, or ``Any`` imported)."""
    return sum(
        (isinstance(node, ast.Attribute) and node.attr == "Any")
        or (isinstance(node, ast.Name) and node.id == "Any")
        for node in ast.walk(ast.parse(source))
    )


def test_any_counts_annotations_not_words() -> None:
    assert any_uses("import typing as t\nx: t.Any\ndef f(a: 'int') -> dict[str, t.Any]: ...\n") == 2
    assert any_uses('"""Any other state."""\n') == 0


def test_few_values_are_untyped() -> None:
    counts = {path: any_uses(path.read_text(encoding="utf-8")) for path in sources()}
    total = sum(counts.values())
    worst = sorted(counts.items(), key=lambda item: -item[1])[:5]
    print(
        f"\nAny: {total} (at most {MAX_ANY}); most: "
        + ", ".join(f"{p.relative_to(ROOT)} {n}" for p, n in worst)
    )
    assert total <= MAX_ANY, worst


def test_no_module_is_over_500_lines() -> None:
    lines = {path: len(path.read_text(encoding="utf-8").splitlines()) for path in sources()}
    longest = max(lines.items(), key=lambda item: item[1])
    print(f"\nlongest module: {longest[0].relative_to(ROOT)}, {longest[1]} lines (at most {MAX_LINES})")
    assert [str(p.relative_to(ROOT)) for p, n in lines.items() if n > MAX_LINES] == []
