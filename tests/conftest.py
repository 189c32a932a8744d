"""The shared fixtures, as pytest plugins: tests import helpers from ``support``, never from a conftest."""

import typing as t

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


ONE_WORKER = {
    "tests/fleet/test_fleet_hosts.py": "ssh_host",
    "tests/fleet/test_fleet_hostile_host.py": "ssh_host",
    "tests/fleet/test_ssh_harness.py": "ssh_host",
    "tests/test_packaging.py": "packaging",
}
"""Files whose tests share something expensive (a second account behind sshd, a built wheel): with
``-n`` each group runs on one worker, which makes it once. Every user of ``ssh_host`` must be listed."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest tests first (tests/durations.json): with ``-n`` the rest of the suite runs beside them,
    not after them. A file's tests stay together (a module's fixtures are made once a worker), the file
    with the longest test first; the sort is stable: tests not listed keep their order."""
    seconds = durations.load()
    file_of = {item: item.nodeid.split("::")[0] for item in items}
    unlisted = sorted(
        {file_of[i] for i in items if "ssh_host" in getattr(i, "fixturenames", ())} - set(ONE_WORKER)
    )
    if unlisted:
        raise pytest.UsageError(
            f"{', '.join(unlisted)} use ssh_host: add them to ONE_WORKER in tests/conftest.py"
        )
    longest: dict[str, float] = {}
    for item, name in file_of.items():
        longest[name] = max(longest.get(name, 0.0), seconds.get(item.nodeid, 0.0))
    place = {name: n for n, name in enumerate(longest)}
    items.sort(
        key=lambda item: (-longest[file_of[item]], place[file_of[item]], -seconds.get(item.nodeid, 0.0))
    )


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: absent without it
def pytest_xdist_make_scheduler(config: pytest.Config, log: t.Any) -> t.Any:
    """With ``-n`` (xdist's default ``--dist load``): a worker is given one test, or one group of
    :data:`ONE_WORKER`, whenever two or fewer wait for it, in the order above; so no worker is left with
    a three-minute test at the end. (Not ``--dist loadgroup``: under pytest 9.2 its marks are lost.)"""
    if config.getoption("dist") != "load":
        return None  # a --dist of the caller's own
    from xdist.scheduler import LoadScopeScheduling

    class TestsAndGroups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return ONE_WORKER.get(nodeid.split("::")[0], nodeid)

    return TestsAndGroups(config, log)
