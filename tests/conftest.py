"""The shared fixtures, as pytest plugins: tests import helpers from ``support``, never from a conftest."""

import durations
import pytest

pytest_plugins = [
    "support.fixtures",
    "support.claude_run",
    "support.fleet",
    "support.pane",
    "support.procs",
    "support.sshd",
    "support.tmux_panes",
]


@pytest.hookimpl(tryfirst=True)  # before xdist adds a group to a test's node id
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest tests first (tests/durations.json): with ``-n`` the rest of the suite runs beside them,
    not after them. A file's tests stay together (a module's fixtures are made once a worker), the file
    with the longest test first; the sort is stable: tests not listed keep their order."""
    seconds = durations.load()
    file_of = {item: item.nodeid.split("::")[0] for item in items}
    longest: dict[str, float] = {}
    for item, name in file_of.items():
        longest[name] = max(longest.get(name, 0.0), seconds.get(item.nodeid, 0.0))
    place = {name: n for n, name in enumerate(longest)}
    items.sort(
        key=lambda item: (-longest[file_of[item]], place[file_of[item]], -seconds.get(item.nodeid, 0.0))
    )
