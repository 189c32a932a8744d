"""tests/durations.json: how long the slowest tests took, so that ``-n`` starts them first.

With ``-n``, ``conftest.py`` gives each worker a test (or a group of tests sharing a costly fixture)
from the head of the queue whenever two or fewer wait for it, and puts the longest at the head, so no
worker is left with a three-minute test when the others are done. Rewrite the file from a run's JUnit
report (from the repository root)::

    .venv/bin/python -m pytest -q -n 3 --junitxml=/tmp/junit.xml
    .venv/bin/python tests/durations.py /tmp/junit.xml

A test missing from the file only runs in its usual place; the order never changes what a test does.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

FILE = Path(__file__).resolve().parent / "durations.json"
AT_LEAST = 2.0
"""Seconds a test takes to be listed: the rest are many and short, and balance themselves."""


def load() -> dict[str, float]:
    """Test node id -> seconds it took, or nothing if the file is missing or unreadable."""
    try:
        data = json.loads(FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return (
        {k: float(v) for k, v in data.items() if isinstance(v, (int, float))}
        if isinstance(data, dict)
        else {}
    )


def node_id(classname: str, name: str) -> str:
    """A JUnit ``classname`` (``tests.fleet.test_x.Class``) and ``name`` as pytest's node id."""
    if "@" in name and name.rfind("@") > name.rfind("]"):
        name = name[: name.rfind("@")]  # an xdist_group's suffix (--dist loadgroup): not part of the id
    parts = classname.split(".")
    module = next(i for i in range(len(parts), 0, -1) if parts[i - 1].startswith("test"))
    return "::".join(["/".join(parts[:module]) + ".py", *parts[module:], name])


def durations(report: Path) -> dict[str, float]:
    found: dict[str, float] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        seconds = float(case.get("time") or 0)
        if seconds >= AT_LEAST:
            found[node_id(case.get("classname") or "", case.get("name") or "")] = round(seconds, 1)
    return dict(sorted(found.items(), key=lambda item: -item[1]))


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: tests/durations.py JUNIT.xml (a report of pytest --junitxml)", file=sys.stderr)
        return 2
    found = durations(Path(argv[0]))
    FILE.write_text(json.dumps(found, indent=0) + "\n", encoding="utf-8")
    print(
        f"wrote {FILE.name}: {len(found)} tests of {AT_LEAST:g} s or more, {sum(found.values()):.0f} s in all"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
