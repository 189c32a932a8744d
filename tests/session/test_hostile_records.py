"""Records under ``.shepherd/`` an agent's Bash wrote: each reader checks them, none raises, and an
agent at its budget stays paused whatever the files beside it hold.

JSON reads an integer of hundreds of digits as an int no float holds; a lone surrogate or a NUL is a
string no file name can take. Each once made a reader raise, and the budget gate, which pauses nobody
when it fails, let the agent go on.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from claude_shepherd.hooks import budget_gate
from claude_shepherd.hooks.locate import Caller
from claude_shepherd.supervisor.session import budget_records, budgets, index_records, spend
from claude_shepherd.supervisor.session import usage_windows as uw

BIG = "1" + "0" * 400
AGENT = "f:w:a"
CREDENTIAL = "/home/u/.claude"


def put(root: Path, folder: str, name: str, text: str) -> None:
    where = Path(index_records.folder_path(root, folder))
    where.mkdir(parents=True, exist_ok=True)
    (where / name).write_text(text, encoding="utf-8")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A fleet 'f' whose pane a has a $10 budget and spent $50."""
    sessions = tmp_path / "sessions"
    document = {"fleet": "f", "roots": [], "budget": None, "windows": {"w": None},
                "panes": {AGENT: {"usd": 10, "per": "life"}}}  # fmt: skip
    put(sessions, "budgets", index_records.file_name("f"), json.dumps(document))
    ledger = {"agent": AGENT, "total": 50, "days": {}, "conversations": {}}
    put(sessions, "spend", index_records.file_name(AGENT), json.dumps(ledger))
    return sessions


def still_paused(root: Path) -> None:
    stop = budget_gate.check(Caller(root, AGENT, 0, None, None), {})
    assert stop is not None and "budget ($10.00) is spent" in stop, stop


@pytest.mark.parametrize(
    "conversation",
    [f'{{"r": 50, "at": {BIG}}}', f'{{"r": 50, "p": [[{BIG}, 1]]}}', f'{{"r": 50, "m": [["x", {BIG}]]}}',
     f'{{"r": {BIG}, "c": {BIG}}}', '{"r": 50, "s": {"x": {"o": 1e400}}}'],
)  # fmt: skip
def test_a_ledger_with_numbers_no_float_holds_is_read_and_the_agent_stays_paused(
    root: Path, conversation: str
) -> None:
    text = f'{{"agent": "{AGENT}", "total": 50, "days": {{"2026-11-28": {BIG}}}, "conversations": {{"c": {conversation}}}}}'
    put(root, "spend", index_records.file_name(AGENT), text)
    ledger = spend.read(root, AGENT)
    assert ledger is not None and ledger["total"] == 50.0
    assert [each["agent"] for each in spend.ledgers(root, "f:")] == [AGENT]
    still_paused(root)


@pytest.mark.parametrize("field", ["since", "usd", "spent", "renews"])
def test_a_gate_record_with_a_huge_number_never_frees_the_agent(root: Path, field: str) -> None:
    pause = {"scope": "pane", "name": "a", "usd": 10, "per": "life", "spent": 50, "raise": "r", "since": 1}
    text = json.dumps({"agent": AGENT, "paused": pause}).replace(f'"{field}": ', f'"{field}": {BIG}, "x": ')
    put(root, "spend", budget_records._name(AGENT), text)
    budget_records.read(root, AGENT)  # no exception
    still_paused(root)
    assert budget_records.paused(root, AGENT) is not None


def test_names_no_file_can_take_are_skipped_not_raised(root: Path) -> None:
    """A ledger naming an agent with a lone surrogate, and budgets naming roots with a NUL or one."""
    put(root, "spend", "f_w_x-00000000.json", json.dumps({"agent": "f:w:\ud800", "total": 1}))
    document = json.loads(
        (Path(index_records.folder_path(root, "budgets")) / index_records.file_name("f")).read_text()
    )
    document["roots"] = ["/tmp/x\u0000y", "/tmp/\ud800"]
    put(root, "budgets", index_records.file_name("f"), json.dumps(document))
    assert [each["agent"] for each in spend.ledgers(root, "f:")] == [AGENT]
    assert [limit.reached for limit in budgets.limits(root, AGENT, pane=True, env={}, now=1e9)] == [True]
    still_paused(root)


def test_usage_records_with_numbers_no_float_holds_read_as_nothing_known(root: Path) -> None:
    window = f'{{"used_percentage": 50, "resets_at": 1795900000, "zzz": {BIG}}}'
    text = f'{{"credential": "{CREDENTIAL}", "windows": {{"five_hour": {window}}}, "alerted": {{"five_hour": [{BIG}]}}}}'
    put(root, "usage/credentials", uw.file_name(CREDENTIAL), text)
    record = uw.read_credential(root, CREDENTIAL)
    assert record is not None and record["windows"] == {
        "five_hour": {"used_percentage": 50.0, "resets_at": 1795900000.0}
    }
    assert record["alerted"] == {"five_hour": []}
    limited = f'{{"until": {BIG}, "window": "five_hour", "source": "reading", "since": {BIG}, "held": {BIG}}}'
    put(root, "usage/agents", uw.file_name(AGENT), f'{{"agent": "{AGENT}", "limited": {limited}}}')
    agent = uw.read_agent(root, AGENT)
    assert agent is not None and agent["limited"]["until"] is None and agent["limited"]["held"] is None
    assert [a["agent"] for a in uw.read_agents(root)] == [AGENT]


def test_a_first_reading_of_no_window_writes_no_record(tmp_path: Path) -> None:
    """A status line whose ``rate_limits`` holds no window it can read knows nothing: nothing is written
    (``fleet usage`` would list a credential with no window), and the record comes once a window does."""
    root = tmp_path / "sessions"
    record, crossed = uw.note_reading(root, CREDENTIAL, {}, now=1795000000.0)
    assert (record["windows"], crossed, uw.read_credential(root, CREDENTIAL)) == ({}, [], None)
    uw.note_reading(
        root,
        CREDENTIAL,
        {"five_hour": {"used_percentage": 10.0, "resets_at": 1795003600.0}},
        now=1795000000.0,
    )
    stored = uw.read_credential(root, CREDENTIAL)
    assert stored is not None and list(stored["windows"]) == ["five_hour"]
