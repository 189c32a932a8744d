"""The supervisor side of claude-shepherd: the session model (``session``) and ``claude-run``.

Installed as ``claude_shepherd.supervisor``. Importing it is free: nothing
heavy (pydantic, typer, psutil) is imported here, because the hooks import
:mod:`claude_shepherd.supervisor.session.store` and friends on every tool call.
"""

__version__ = "0.2.0"
"""The version of claude-shepherd (pyproject.toml reads it from here)."""
