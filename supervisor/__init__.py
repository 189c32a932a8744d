"""The session model, its store and the supervisor (``claude-run``).

Importing this package is free: nothing heavy (pydantic, typer, psutil) is
imported here, because the hooks import :mod:`supervisor.store` and friends on
every tool call.
"""

__version__ = "0.2.0"
"""The version of claude-shepherd (pyproject.toml reads it from here)."""
