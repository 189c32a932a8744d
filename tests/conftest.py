"""The shared fixtures, as pytest plugins: tests import helpers from ``support``, never from a conftest."""

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

LONGEST_FIRST = ("tests/e2e/test_usage_windows.py",)
"""Modules whose tests wait minutes on the real CLI (Claude's auto-continue comes 30-90 s after a
reset): run first, so that with ``-n`` the rest of the suite runs beside them, not after them."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: not item.nodeid.startswith(LONGEST_FIRST))  # stable: order kept otherwise
