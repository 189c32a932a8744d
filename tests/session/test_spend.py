"""The spend ledger and the budgets an agent is held to: real files in a scratch sessions root."""

from __future__ import annotations

import time
from pathlib import Path

from claude_shepherd.supervisor.session import budgets, spend, spend_readings, spend_writes, transcript_costs
from claude_shepherd.supervisor.session.replies import Reply

NOON = time.mktime((2026, 11, 25, 12, 0, 0, 0, 0, -1))  # a Wednesday, local time


def test_only_the_growth_of_each_conversations_reading_is_spent_and_goes_to_its_day() -> None:
    ledger = None
    for reading, conversation, when in [
        (0.5, "a", NOON), (0.5, "a", NOON), (0.8, "a", NOON + 86400),  # next day: 0.3
        (0.8, "a", NOON + 86400),  # a resume's first render: the conversation's total, nothing new
        (0.2, "b", NOON + 86400), (0.1, "b", NOON + 86400),  # went down: a new base, nothing spent
        (0.4, "b", NOON + 86400),
    ]:  # fmt: skip
        ledger = spend_readings.add_reading(ledger, "f:w:A", conversation, reading, when)
    assert spend.spent(ledger) == 1.3
    assert spend.spent(ledger, "day", NOON) == 0.5
    assert spend.spent(ledger, "day", NOON + 86400) == 0.8
    assert spend.spent(ledger, "week", NOON + 86400) == 1.3
    assert spend.spent(ledger, "week", NOON + 7 * 86400) == 0, "another week"
    assert spend.spent(None) is None, "nothing measured is unknown, not 0"


def test_a_conversation_never_seen_starts_from_its_transcript(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text('{"type":"cost-state","totalCostUSD":0.2}\n{"type":"user"}\n'
                          '{"type":"cost-state","totalCostUSD":0.5}\n{"type":"assistant"}\n')  # fmt: skip
    root = tmp_path / "sessions"
    ledger = spend_writes.measure(root, "f:w:A", "c", 0.56, transcript=str(transcript), now=NOON)
    assert spend.spent(ledger) == 0.06
    assert spend.read(root, "f:w:A") == ledger
    assert transcript_costs.transcript_cost(str(tmp_path / "missing.jsonl")) == 0.0


def test_forgotten_conversations_and_days_are_bounded() -> None:
    ledger = None
    for n in range(spend_readings.KEEP_CONVERSATIONS + 5):
        ledger = spend_readings.add_reading(ledger, "A", f"c{n}", 0.01, NOON + n * 86400)
    assert ledger is not None
    assert len(ledger["conversations"]) == spend_readings.KEEP_CONVERSATIONS
    assert len(ledger["days"]) == spend_readings.KEEP_DAYS
    assert spend.spent(ledger) == round(0.01 * (spend_readings.KEEP_CONVERSATIONS + 5), 6)


def test_a_window_and_a_fleet_budget_add_up_every_agents_ledger_in_every_root(tmp_path: Path) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    spend_writes.measure(first, "f:api:A", "c1", 0.7, now=NOON)
    spend_writes.measure(second, "f:api:B", "c2", 0.5, now=NOON)
    spend_writes.measure(second, "f:docs:C", "c3", 0.4, now=NOON)
    spend_writes.measure(second, "other:api:A", "c4", 9.0, now=NOON)  # another fleet's
    document = {
        "roots": [str(first), str(second)],
        "budget": {"usd": 2.0, "per": "life"},
        "windows": {"api": {"usd": 1.0, "per": "day"}, "docs": None},
        "panes": {"f:api:A": {"usd": 5.0, "per": "life"}},
    }
    budgets.write_fleet(first, "f", document)
    held = {b.scope: b for b in budgets.limits(first, "f:api:A", pane=True, env={}, now=NOON)}
    assert (held["pane"].spent, held["pane"].reached) == (0.7, False)
    assert (held["window"].spent, held["window"].reached, held["window"].name) == (1.2, True, "api")
    assert (held["fleet"].spent, held["fleet"].nearly, held["fleet"].reached) == (1.6, True, False)
    assert budgets.limits(first, "f:api:A", pane=True, env={}, now=NOON + 86400)[1].spent == 0, "a new day"
    assert budgets.limits(second, "f:docs:C", pane=True, env={}, now=NOON) == [], "no file in that root"
    alone = budgets.limits(
        first, "claude-run 1 x", pane=False, env={"CLAUDE_SHEPHERD_BUDGET_USD": "1"}, now=NOON
    )
    assert [(b.scope, b.usd, b.spent) for b in alone] == [("agent", 1.0, None)], "unknown: not held"


def test_a_fleets_ledgers_are_found_by_name_among_every_claude_runs(tmp_path: Path) -> None:
    """The spend folder keeps a ledger per claude-run that ever ran in the root; the hooks look for a
    fleet's on every tool call, so they are picked out by file name (a fleet's agents, whatever their
    window and label are made of), never by reading every other ledger."""
    root, now = tmp_path / "sessions", time.time()
    fleet = ["duo:agents:A", "duo::x", "duo:a b:c!d", "duo:" + "w" * 100 + ":l", "duo:é:ü"]
    for agent in [*fleet, "duoX:agents:A", "claude-run 123 abc"]:
        spend_writes.measure(root, agent, "conv", 0.5, now=now)
    assert sorted(e["agent"] for e in spend.ledgers(root, "duo:")) == sorted(fleet)
    folder = root / ".shepherd" / "spend"
    (folder / "claude-run_9_t-00000000.json").write_text("[" * 100000)  # not a fleet's: never read
    assert sorted(e["agent"] for e in spend.ledgers(root, "duo:")) == sorted(fleet)


# --------------------------------------------------------------------------- replies priced by the hooks

REPLY = 0.06
"""One reply of 10k tokens in and 2k out on Sonnet 4.5."""


def reply(n: int, when: float, usd: float = REPLY) -> Reply:
    return Reply(f"msg_{n}", when, usd, True)


def counted(ledger: dict[str, object] | None) -> tuple[float | None, object]:
    return spend.spent(ledger), (ledger or {}).get("source")


def test_replies_count_at_once_and_claudes_later_figure_counts_only_what_they_did_not() -> None:
    """Quick requests outrun the status line: each reply counts when the hook sees it; Claude's figure
    that covers them then adds only what no reply holds (a title request, say), nothing twice."""
    ledger = spend_readings.add_replies(None, "A", "c", [reply(1, NOON)], 100, NOON + 0.1)
    ledger = spend_readings.add_replies(ledger, "A", "c", [reply(2, NOON + 1)], 200, NOON + 1.1)
    assert counted(ledger) == (0.12, spend.ESTIMATED)
    ledger = spend_readings.add_reading(ledger, "A", "c", 0.13, NOON + 2)  # both, and a cent of side requests
    assert counted(ledger) == (0.13, spend.MEASURED)
    ledger = spend_readings.add_reading(ledger, "A", "c", 0.13, NOON + 3)
    assert counted(ledger) == (0.13, spend.MEASURED), "the same figure again adds nothing"


def test_a_figure_that_came_first_covers_the_replies_priced_after_it() -> None:
    ledger = spend_readings.add_reading(None, "A", "c", 0.0, NOON)
    ledger = spend_readings.add_reading(
        ledger, "A", "c", 0.06, NOON + 2
    )  # reply 1 drawn before any hook priced it
    ledger = spend_readings.add_replies(ledger, "A", "c", [reply(1, NOON + 1.5)], 100, NOON + 2.1)
    assert counted(ledger) == (0.06, spend.MEASURED)
    ledger = spend_readings.add_replies(ledger, "A", "c", [reply(2, NOON + 3)], 200, NOON + 3.1)
    assert counted(ledger) == (0.12, spend.ESTIMATED), "a reply after the figure counts"


def test_a_reply_just_before_a_figure_that_does_not_hold_it_still_counts() -> None:
    """Claude computes the status line's input before our process starts: a reply written in between
    is older than the reading but not in it. Only what the figure grew by covers replies."""
    ledger = spend_readings.add_reading(None, "A", "c", 0.06, NOON)  # reply 1, no hook priced it yet
    ledger = spend_readings.add_reading(ledger, "A", "c", 0.06, NOON + 2)  # reply 2 (NOON + 1.9) not in it
    ledger = spend_readings.add_replies(
        ledger, "A", "c", [reply(1, NOON - 0.5), reply(2, NOON + 1.9)], 100, NOON + 2.1
    )
    assert counted(ledger) == (0.12, spend.ESTIMATED)
    ledger = spend_readings.add_reading(ledger, "A", "c", 0.12, NOON + 3)
    assert counted(ledger) == (0.12, spend.MEASURED), "the figure that holds it does not count it again"


def test_a_dear_estimate_is_never_lowered_nor_counted_twice() -> None:
    """A model the table does not know is priced dearer than Claude prices it: the ledger keeps what
    it counted (never below Claude's figure), and Claude's figure counts again only once it passes it."""
    ledger = spend_readings.add_reading(None, "A", "c", 0.0, NOON)
    ledger = spend_readings.add_replies(ledger, "A", "c", [reply(1, NOON + 1, usd=0.30)], 100, NOON + 1.1)
    ledger = spend_readings.add_reading(ledger, "A", "c", 0.06, NOON + 2)
    assert spend.spent(ledger) == 0.30
    ledger = spend_readings.add_reading(ledger, "A", "c", 0.12, NOON + 30)
    assert spend.spent(ledger) == 0.30, "still within what was counted"
    ledger = spend_readings.add_reading(ledger, "A", "c", 0.40, NOON + 40)
    assert counted(ledger) == (0.40, spend.MEASURED)


def test_a_complete_figure_covers_every_reply_before_it_and_a_lower_one_starts_over() -> None:
    ledger = spend_readings.add_replies(None, "A", "c", [reply(1, NOON), reply(2, NOON + 1)], 100, NOON + 1.1)
    ledger = spend_readings.add_reading(ledger, "A", "c", 0.12, NOON + 1.2, complete=True)
    assert counted(ledger) == (0.12, spend.MEASURED)
    ledger = spend_readings.add_reading(
        ledger, "A", "c", 0.06, NOON + 5
    )  # a Claude killed before its cost-state
    ledger = spend_readings.add_replies(ledger, "A", "c", [reply(3, NOON + 6)], 200, NOON + 6.1)
    assert spend.spent(ledger) == 0.18, "the new base adds nothing; the reply after it counts"


def test_one_reply_is_priced_once_whatever_lines_it_takes() -> None:
    ledger = spend_readings.add_replies(
        None, "A", "c", [reply(1, NOON, 0.05), reply(1, NOON, 0.06)], 100, NOON
    )
    ledger = spend_readings.add_replies(ledger, "A", "c", [reply(1, NOON, 0.06)], 150, NOON + 1)
    assert spend.spent(ledger) == 0.06


def test_many_replies_no_figure_covers_are_all_counted_in_a_bounded_record() -> None:
    ledger = None
    for n in range(3 * spend_readings.KEEP_PENDING):
        ledger = spend_readings.add_replies(ledger, "A", "c", [reply(n, NOON + n)], 100 * n, NOON + n)
    assert ledger is not None and spend.spent(ledger) == round(3 * spend_readings.KEEP_PENDING * REPLY, 6)
    assert len(ledger["conversations"]["c"]["p"]) == spend_readings.KEEP_PENDING


def test_a_ledger_written_before_replies_were_priced_is_read_as_it_was() -> None:
    old = {"agent": "A", "source": "measured", "total": 0.5, "days": {}, "conversations": {"c": 0.5}}
    ledger = spend_readings.add_reading(old, "A", "c", 0.7, NOON)
    assert counted(ledger) == (0.7, spend.MEASURED)


def test_the_same_figure_drawn_again_writes_nothing(tmp_path: Path) -> None:
    """The status line draws Claude's figure on every render: an unchanged one leaves the ledger as it is
    (no write, no fsync on a render), even with replies priced since that it does not hold."""
    root = tmp_path / "sessions"
    spend_writes.measure(root, "A", "c", 0.5, now=NOON)
    ledger = root / ".shepherd" / "spend" / spend._file_name("A")
    written = ledger.stat().st_ino
    spend_writes.measure(root, "A", "c", 0.5, now=NOON + 1)
    assert ledger.stat().st_ino == written
    spend_writes._update(
        root,
        "A",
        lambda before: spend_readings.add_replies(before, "A", "c", [reply(1, NOON + 2)], 10, NOON + 2),
    )
    written = ledger.stat().st_ino
    spend_writes.measure(root, "A", "c", 0.5, now=NOON + 3)
    assert ledger.stat().st_ino == written and spend.spent(spend.read(root, "A")) == 0.56


def test_a_sub_agents_replies_count_in_its_conversation_with_their_own_reading() -> None:
    """A sub-agent's replies are in a transcript of its own: priced from there into the conversation
    (Claude's figure for the conversation holds them too, and then counts only what they did not),
    each transcript's offset and seen replies kept apart."""
    ledger = spend_readings.add_replies(None, "A", "c", [reply(1, NOON)], 100, NOON + 0.1)
    ledger = spend_readings.add_replies(ledger, "A", "c", [reply(2, NOON + 1)], 40, NOON + 1.1, subagent="x1")
    ledger = spend_readings.add_replies(ledger, "A", "c", [reply(2, NOON + 1)], 60, NOON + 1.2, subagent="x1")
    assert counted(ledger) == (0.12, spend.ESTIMATED), "the sub-agent's reply counts once"
    entry = ledger["conversations"]["c"]
    assert entry["o"] == 100 and entry["s"] == {"x1": {"o": 60, "m": [("msg_2", REPLY)]}}
    ledger = spend_readings.add_reading(ledger, "A", "c", 0.12, NOON + 2)
    assert counted(ledger) == (0.12, spend.MEASURED), "Claude's figure that holds it does not count it again"
    for n in range(spend_readings.KEEP_SUBAGENTS + 2):
        ledger = spend_readings.add_replies(ledger, "A", "c", [], n, NOON + 3, subagent=f"y{n}")
    assert len(ledger["conversations"]["c"]["s"]) == spend_readings.KEEP_SUBAGENTS


def test_a_sub_agents_transcript_is_priced_from_its_own_file(tmp_path: Path) -> None:
    """Where Claude Code keeps it (``<session>/subagents/agent-<id>.jsonl``), every line a sidechain."""
    import json

    from claude_shepherd.supervisor.session.replies import subagent_transcript

    main = tmp_path / "project" / "s1.jsonl"
    own = main.parent / "s1" / "subagents" / "agent-a1b2.jsonl"
    own.parent.mkdir(parents=True)
    main.write_text("")
    line = {"type": "assistant", "isSidechain": True, "timestamp": "2026-11-25T12:00:00.000Z",
            "message": {"id": "m9", "model": "claude-sonnet-4-5",
                        "usage": {"input_tokens": 10_000, "output_tokens": 2_000}}}  # fmt: skip
    own.write_text(json.dumps(line) + "\n")
    assert subagent_transcript(str(main), "a1b2") == str(own)
    assert subagent_transcript(str(main), "../s1/subagents/agent-a1b2") is None, "an id names no other file"
    assert subagent_transcript(str(main), "zz") is None
    ledger = spend_writes.price_replies(
        tmp_path, "A", "s1", str(own), subagent="a1b2", main_transcript=str(main)
    )
    assert ledger is not None and spend.spent(ledger) == 0.06
    assert (
        spend_writes.price_replies(tmp_path, "A", "s1", str(own), subagent="a1b2", main_transcript=str(main))
        is None
    )
    assert spend_writes.offset_of(tmp_path, "A", "s1", "a1b2") == own.stat().st_size
    as_main = spend_writes.price_replies(tmp_path, "B", "s2", str(own))
    assert spend.spent(as_main) in (None, 0.0), "read as a main transcript, a sidechain line costs nothing"


def test_more_recent_sub_agents_than_the_ledger_keeps_are_never_priced_twice(tmp_path: Path) -> None:
    """The hooks price only as many sub-agent transcripts as the ledger keeps readings for: one whose
    reading was forgotten would be read, and counted, again from its start."""
    import json

    from claude_shepherd.hooks import metering

    main = tmp_path / "project" / "s1.jsonl"
    main.parent.mkdir()
    main.write_text("")
    line = {"type": "assistant", "isSidechain": True, "timestamp": "2026-11-25T12:00:00.000Z",
            "message": {"model": "claude-sonnet-4-5", "usage": {"input_tokens": 10_000, "output_tokens": 2_000}}}  # fmt: skip
    for n in range(spend_readings.KEEP_SUBAGENTS + 8):
        own = main.parent / "s1" / "subagents" / f"agent-a{n}.jsonl"
        own.parent.mkdir(parents=True, exist_ok=True)
        own.write_text(json.dumps({**line, "message": {**line["message"], "id": f"m{n}"}}) + "\n")
    metering.meter_subagents(tmp_path, "A", "s1", str(main))
    first = spend.spent(spend.read(tmp_path, "A"))
    for _ in range(3):
        metering.meter_subagents(tmp_path, "A", "s1", str(main))
    assert spend.spent(spend.read(tmp_path, "A")) == first
