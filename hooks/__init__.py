"""Claude Code hooks: session gate, prompt gate, overflow gate, heartbeat, status line."""

import os

MAIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__main__.py")
"""The file every hook of ours runs as installed (``python -I -S …/hooks/__main__.py EVENT``), and
every process the hooks leave behind (an alert, a typist)."""
