"""What the budget gate did for an agent: ``<agent>.budget.json``, beside its spend ledger.

It holds the 80 % alerts already raised, so each is raised once, and the budget that paused the agent.
The hooks write it; ``fleet budget`` clears the pause when it resumes the agent.
Standard library only (the hooks read it on every tool call of an agent held to a budget).
"""

from __future__ import annotations

import contextlib
import os

from claude_shepherd.supervisor.session import index_records
from claude_shepherd.supervisor.session.spend import BUDGET_SUFFIX, LEDGER_LIMIT, SPEND_DIRNAME

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t
    from pathlib import Path


def _budget_name(agent: str) -> str:
    return index_records.file_name(agent).removesuffix(".json") + BUDGET_SUFFIX


def gate_record(root: Path, agent: str) -> dict[str, t.Any]:
    """What the budget gate recorded for *agent*: ``alerted`` (keys of budgets that alerted at 80 %)
    and ``paused`` (the budget that paused it, or absent); empty when nothing."""
    return index_records.read(root, SPEND_DIRNAME, _budget_name(agent), LEDGER_LIMIT, ("agent", agent)) or {}


def write_gate_record(root: Path, agent: str, record: t.Mapping[str, t.Any]) -> bool:
    """Replace *agent*'s gate record (removed when it says nothing); False when it could not be written."""
    name = _budget_name(agent)
    if record.get("alerted") or record.get("paused"):
        return index_records.write(root, SPEND_DIRNAME, name, {**record, "agent": agent})
    fd = index_records.opened(root, SPEND_DIRNAME, create=True)
    if fd is None:
        return False
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=fd)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True
