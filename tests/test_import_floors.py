"""The house drawn from the imports: three floors, no arrow up, no circle (docs/ARCHITECTURE.md).

Every import of ours counts, at the top of a module or inside a function (an import put off is still
a dependency); only those under ``if TYPE_CHECKING:`` do not, as they never run. Floors, lowest first:
``supervisor/`` (the session model, the pane's state, claude-run), ``hooks/``, ``fleet/``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "claude_shepherd"
FLOORS = ("supervisor", "hooks", "fleet")
"""Lowest first: a module may import its own floor and those below."""


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for floor in FLOORS:
        for path in (ROOT / floor).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported(tree: ast.Module) -> list[str]:
    """The dotted names of ours *tree* imports (``from a import b`` gives ``a.b``: b may be a module)."""
    skipped = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and _type_checking(node)
        for stmt in node.body
        for inner in ast.walk(stmt)
    }
    names: list[str] = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PACKAGE + "."):
            base = node.module[len(PACKAGE) + 1 :]
            names += [f"{base}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names += [a.name[len(PACKAGE) + 1 :] for a in node.names if a.name.startswith(PACKAGE + ".")]
    return names


def graph() -> dict[str, set[str]]:
    known = modules()

    def resolve(name: str) -> str | None:
        parts = name.split(".")
        while parts and ".".join(parts) not in known:
            parts.pop()
        return ".".join(parts) or None

    edges: dict[str, set[str]] = {}
    for name, path in known.items():
        targets = {resolve(n) for n in imported(ast.parse(path.read_text(encoding="utf-8")))}
        edges[name] = {t for t in targets if t and t != name and not name.startswith(t + ".")}
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_imports_a_floor_above_its_own() -> None:
    floor = {name: FLOORS.index(name.split(".")[0]) for name in FLOORS}
    up = [
        f"{module} imports {target}"
        for module, targets in sorted(graph().items())
        for target in sorted(targets)
        if floor[target.split(".")[0]] > floor[module.split(".")[0]]
    ]
    assert not up, "arrows up:\n" + "\n".join(up)


def test_no_two_modules_import_each_other_even_inside_a_function() -> None:
    found = circles(graph())
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


@pytest.mark.parametrize(
    ("edges", "expected"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"b"}, "b": set()}, []),
    ],
)
def test_the_circle_finder_finds_a_circle_and_only_one(edges, expected) -> None:
    assert circles(edges) == expected


def test_an_import_put_off_counts_and_a_type_only_one_does_not() -> None:
    tree = ast.parse(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from claude_shepherd.fleet import layout\n"
        "def f():\n    from claude_shepherd.hooks import budget_gate\n"
    )
    assert imported(tree) == ["hooks.budget_gate"]
