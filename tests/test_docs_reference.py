"""The documentation agrees with the code: sizes, links, the module map, variables, every command's help."""

from __future__ import annotations

import re
from pathlib import Path

import docs_commands
import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PACKAGES = ("supervisor", "hooks", "fleet")
README_LIMIT = 8 * 1024
GUIDE_LIMIT = 10 * 1024

VARIABLE = re.compile(r'"((?:CLAUDE|FLEET|SESSION|WATCHDOG|SHEPHERD)[A-Z_]*)"')
NOT_VARIABLES = {"CLAUDE", "FLEET", "SESSION"}
"""Strings of a variable's shape that name no variable: column headings, a skill's default name."""


def guides() -> list[Path]:
    return sorted(DOCS.glob("*.md"))


def linked_pages() -> list[Path]:
    return [ROOT / "README.md", *guides(), *sorted((DOCS / "commands").glob("*.md"))]


def test_readme_and_every_guide_within_its_size() -> None:
    sizes = {ROOT / "README.md": README_LIMIT, **{page: GUIDE_LIMIT for page in guides()}}
    too_big = [
        f"{page.relative_to(ROOT)}: {page.stat().st_size} bytes (at most {limit})"
        for page, limit in sizes.items()
        if page.stat().st_size > limit
    ]
    assert not too_big, "pages over their size; split by topic:\n" + "\n".join(too_big)


def anchors(text: str) -> set[str]:
    """GitHub's anchors of a page's headings, and explicit ``<a id>`` ones."""
    found = set(re.findall(r'<a id="([^"]+)"', text))
    seen: dict[str, int] = {}
    in_code = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        title = line.lstrip("#").strip().lower()
        slug = re.sub(r"[^\w\- ]", "", title).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def links(text: str) -> list[str]:
    without_code = re.sub(r"```.*?```", "", text, flags=re.S)
    return re.findall(r"\]\(([^)\s]+)\)", without_code)


@pytest.mark.parametrize("page", linked_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_reaches_a_file_and_its_anchor(page: Path) -> None:
    broken = []
    for target in links(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(
                f"{target}: no file {file.relative_to(ROOT) if file.is_relative_to(ROOT) else file}"
            )
        elif anchor and file.suffix == ".md" and anchor not in anchors(file.read_text(encoding="utf-8")):
            broken.append(f"{target}: no heading #{anchor} in {file.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)} links to nothing:\n" + "\n".join(broken)


def documented_modules() -> dict[str, set[str]]:
    """ARCHITECTURE*.md: each ``### `folder/` `` heading and the names its bullets give."""
    listed: dict[str, set[str]] = {}
    for page in sorted(DOCS.glob("ARCHITECTURE*.md")):
        folder = None
        for line in page.read_text(encoding="utf-8").splitlines():
            heading = re.match(r"### .*?`([a-z_/]+/)`", line)
            if heading:
                folder = heading.group(1)
                listed.setdefault(folder, set())
            elif line.startswith("#"):
                folder = None
            elif folder and line.startswith("- "):
                listed[folder] |= set(re.findall(r"`([\w.]+/?)`", line.split(" — ")[0]))
    return listed


def real_modules() -> dict[str, set[str]]:
    """Every package folder: its modules (``__init__.py`` aside) and its folders that are no package."""
    real: dict[str, set[str]] = {}
    for package in PACKAGES:
        for init in sorted((ROOT / package).rglob("__init__.py")):
            folder = init.parent
            names = {p.name for p in folder.glob("*.py") if p.name != "__init__.py"}
            names |= {
                f"{d.name}/"
                for d in folder.iterdir()
                if d.is_dir() and d.name != "__pycache__" and not (d / "__init__.py").exists()
            }
            real[f"{folder.relative_to(ROOT)}/"] = names
    return real


def test_the_module_map_lists_every_module_and_only_real_ones() -> None:
    listed, real = documented_modules(), real_modules()
    problems = [f"{folder}: not in docs/ARCHITECTURE*.md" for folder in sorted(real.keys() - listed.keys())]
    problems += [f"{folder}: no such package" for folder in sorted(listed.keys() - real.keys())]
    for folder in sorted(real.keys() & listed.keys()):
        problems += [
            f"{folder}{name}: missing from the map" for name in sorted(real[folder] - listed[folder])
        ]
        problems += [
            f"{folder}{name}: listed, but no such module" for name in sorted(listed[folder] - real[folder])
        ]
    assert not problems, "\n".join(problems)


def variables_in_code() -> set[str]:
    found: set[str] = set()
    for package in PACKAGES:
        for source in (ROOT / package).rglob("*.py"):
            found |= set(VARIABLE.findall(source.read_text(encoding="utf-8")))
    return {name for name in found if name not in NOT_VARIABLES and not name.endswith("_")}


def test_every_environment_variable_of_the_code_is_in_the_table() -> None:
    table = (DOCS / "ENVIRONMENT.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", table))
    missing = sorted(variables_in_code() - documented)
    assert not missing, (
        f"docs/ENVIRONMENT.md lacks: {', '.join(missing)} (add a row: who reads it, what it does)"
    )


def test_the_command_reference_is_the_commands_help() -> None:
    stale = [
        str(path.relative_to(ROOT))
        for path, text in docs_commands.pages().items()
        if not path.exists() or path.read_text(encoding="utf-8") != text
    ]
    assert not stale, (
        f"{', '.join(stale)} differ from the commands' --help; rewrite them from the repository root with: "
        f"{docs_commands.WRITE_COMMAND}"
    )
