"""What the budget gate did for an agent, ``<agent>.budget.json`` beside its spend ledger, and every
way an agent's pause begins and ends.

The record holds the 80 % alerts already raised (each is raised once), the budget that paused the
agent, and the cut-off reply the status line interrupted (once each). Its transitions are the named
rules below, the only writers of ``paused``:

- :func:`pause`: the budget gate finds a budget reached (recorded again only when how to go on changed);
- :func:`note_renewal`: the process that resumes the agent when its day's or week's budget renews;
- :func:`go_on`: the budget was raised or renewed (the gate, ``fleet budget``, the renewal's typist);
- :func:`note_alert` and :func:`note_interrupted` keep the record's other two parts.

Standard library only (the hooks read it on every tool call of an agent held to a budget).
"""

from __future__ import annotations

import contextlib
import os

from claude_shepherd.supervisor.session import index_records
from claude_shepherd.supervisor.session.numbers import MAX_EPOCH, json_number
from claude_shepherd.supervisor.session.spend import BUDGET_SUFFIX, LEDGER_LIMIT, SPEND_DIRNAME, dollars

TYPE_CHECKING = False
if TYPE_CHECKING:
    import typing as t
    from pathlib import Path

    class Renewal(t.TypedDict):
        """The process that types the resume prompt when a day's or week's budget renews."""

        at: str  # which renewal (``day:EPOCH``)
        pid: int
        token: str | None

    # "raise" is a keyword: the functional form.
    Pause = t.TypedDict(
        "Pause",
        {
            "scope": str,  # fleet, window, pane, or agent (claude-run --budget-usd)
            "name": str,
            "usd": float,
            "per": str,
            "spent": float | None,
            "raise": str,  # the command that lets it go on
            "since": float,
            "renews": t.NotRequired[Renewal],
        },
    )

    class GateRecord(t.TypedDict, total=False):
        agent: str
        alerted: list[str]
        paused: Pause
        interrupted: str


KEEP_ALERTS = 24
"""Alert keys remembered (a budget per day alerts once a day)."""


def _name(agent: str) -> str:
    return index_records.file_name(agent).removesuffix(".json") + BUDGET_SUFFIX


def renewal_of(value: object) -> Renewal | None:
    """A renewal's process as the record keeps it, checked."""
    if not isinstance(value, dict):
        return None
    at, pid, token = value.get("at"), value.get("pid"), value.get("token")
    if not isinstance(at, str) or type(pid) is not int or not (token is None or isinstance(token, str)):
        return None
    return {"at": at, "pid": pid, "token": token}


def pause_of(value: object) -> Pause | None:
    """A pause as the record keeps it, checked (the file is within reach of an agent's Bash)."""
    if not isinstance(value, dict):
        return None
    scope, name, per, command = value.get("scope"), value.get("name"), value.get("per"), value.get("raise")
    usd = dollars(value.get("usd"))
    if not (isinstance(scope, str) and isinstance(name, str) and isinstance(per, str) and usd is not None):
        return None
    out: Pause = {
        "scope": scope,
        "name": name,
        "usd": usd,
        "per": per,
        "spent": dollars(value.get("spent")),
        "raise": command if isinstance(command, str) else "",
        "since": json_number(value.get("since"), MAX_EPOCH) or 0.0,
    }
    renews = renewal_of(value.get("renews"))
    if renews is not None:
        out["renews"] = renews
    return out


def read(root: Path, agent: str) -> GateRecord:
    """What the budget gate recorded for *agent*, checked; empty when nothing."""
    data = index_records.read(root, SPEND_DIRNAME, _name(agent), LEDGER_LIMIT, ("agent", agent)) or {}
    record: GateRecord = {}
    alerted = data.get("alerted")
    if isinstance(alerted, list):
        record["alerted"] = [a for a in alerted if isinstance(a, str)][-KEEP_ALERTS:]
    paused = pause_of(data.get("paused"))
    if paused is not None:
        record["paused"] = paused
    interrupted = data.get("interrupted")
    if isinstance(interrupted, str):
        record["interrupted"] = interrupted
    return record


def paused(root: Path, agent: str) -> Pause | None:
    """The budget that paused *agent*, or None when it is not paused."""
    return read(root, agent).get("paused")


def _write(root: Path, agent: str, record: GateRecord) -> bool:
    """Replace *agent*'s record (removed when it says nothing); False when it could not be written."""
    name = _name(agent)
    if record.get("alerted") or record.get("paused"):  # what was interrupted matters while paused
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


# --------------------------------------------------------------------------- the rules


def pause(root: Path, agent: str, now_paused: Pause) -> bool:
    """The gate found *agent* at a budget: record *now_paused*. Written only when how the agent goes on
    changed (the command that raises the budget, or the renewal it waits for), since the gate finds it
    at every call; True when written."""
    record = read(root, agent)
    before = record.get("paused")
    if (
        before is not None
        and before["raise"] == now_paused["raise"]
        and before.get("renews") == now_paused.get("renews")
    ):
        return False
    return _write(root, agent, {**record, "paused": now_paused})


def note_renewal(root: Path, agent: str, renews: Renewal) -> bool:
    """The process that resumes the paused *agent* at its budget's renewal was left: recorded, so a
    pause asks for one once while it waits. False when *agent* is no longer paused."""
    record = read(root, agent)
    before = record.get("paused")
    if before is None:
        return False
    return _write(root, agent, {**record, "paused": {**before, "renews": renews}})


def go_on(root: Path, agent: str) -> bool:
    """*agent*'s budget was raised or renewed: it is no longer paused. True when it was."""
    record = read(root, agent)
    if "paused" not in record:
        return False
    del record["paused"]
    _write(root, agent, record)
    return True


def note_alert(root: Path, owner: str, key: str) -> bool:
    """The budget *key* of *owner* (an agent, or a window's or fleet's prefix: a shared budget alerts
    once, not once per agent) reached 80 %: True when that is news, and it is recorded."""
    record = read(root, owner)
    alerted = record.get("alerted", [])
    if key in alerted:
        return False
    _write(root, owner, {**record, "alerted": [*alerted, key][-KEEP_ALERTS:]})
    return True


def note_interrupted(root: Path, agent: str, reply: str) -> bool:
    """The status line interrupts Claude after the cut-off *reply*: True the first time for that reply
    (a second Escape would open Claude's rewind menu), and it is recorded."""
    record = read(root, agent)
    if record.get("interrupted") == reply:
        return False
    _write(root, agent, {**record, "interrupted": reply})
    return True
