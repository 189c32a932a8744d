"""How ``session list`` and ``session show`` print a state for people: its owner, and cells cut to width."""

from __future__ import annotations

import json

from claude_shepherd.supervisor.printable import printable
from claude_shepherd.supervisor.session.fields import F
from claude_shepherd.supervisor.session.identity import owner_alive

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds; session runs at every agent step
    import typing as t


def owner_text(state: t.Mapping[str, object]) -> str:
    """``PID (running)``, ``PID (gone)`` or ``none``."""
    owner = state.get(F.PID)
    if not isinstance(owner, int) or isinstance(owner, bool) or owner <= 0:
        return "none"
    return f"{owner} ({'running' if owner_alive(owner, state.get(F.PID_START)) else 'gone'})"


def cell(value: object, width: int = 40) -> str:
    """*value* as one printable table cell of at most *width* characters."""
    text = printable(value if isinstance(value, str) else "—" if value is None else json.dumps(value))
    return text if len(text) <= width else text[: width - 1] + "…"
