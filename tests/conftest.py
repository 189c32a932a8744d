"""The shared fixtures, as pytest plugins: tests import helpers from ``support``, never from a conftest."""

pytest_plugins = [
    "support.fixtures",
    "support.claude_run",
    "support.fleet",
    "support.pane",
    "support.procs",
    "support.sshd",
    "support.tmux_panes",
]
