"""The attention queue on a fake clock: ranked by tier then age, one entry per agent and kind with a
count, snoozed entries quiet, resolved ones gone, and its folder and file private."""

from __future__ import annotations

import json
import os
import stat
import typing as t
from pathlib import Path

import pytest

from claude_shepherd.fleet.pane_status import PaneStatus
from claude_shepherd.supervisor import attention as at


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def queue(tmp_path: Path, clock: Clock) -> at.Queue:
    return at.Queue({"XDG_STATE_HOME": str(tmp_path / "state"), "HOME": str(tmp_path)}, clock=clock)


def ref(label: str, socket: str = "fleet-duo", host: str = "local", pane: str = "") -> at.AgentRef:
    return at.AgentRef(host, socket, f"duo:agents:{label}", pane=pane or f"%{ord(label[0])}")


def everywhere(entry: at.Entry) -> bool:
    return True


def test_ranked_by_tier_then_the_longest_waiting(queue: at.Queue, clock: Clock) -> None:
    queue.observe([(ref("Limited"), at.LIMITED)], everywhere)
    clock.now += 10
    queue.observe([(ref("Limited"), at.LIMITED), (ref("Dead"), at.EXITED)], everywhere)
    clock.now += 10
    seen = [(ref("Limited"), at.LIMITED), (ref("Dead"), at.EXITED), (ref("Asks"), at.NEEDS_YOU)]
    queue.observe(seen, everywhere)
    clock.now += 10
    ranked = queue.observe([*seen, (ref("Broke"), at.PAUSED)], everywhere)
    assert [(e.label, e.kind) for e in ranked] == [
        ("Asks", "needs-you"),  # tier 0, older
        ("Broke", "paused"),  # tier 0, newer
        ("Dead", "exited"),
        ("Limited", "limited"),  # the oldest, but only a heads-up
    ]
    assert [e.label for e in queue.waiting()] == ["Asks", "Broke", "Dead", "Limited"]


def test_an_agent_flapping_is_one_entry_with_a_count_and_one_page(queue: at.Queue, clock: Clock) -> None:
    pages = []
    for _ in range(10):
        pages.append(queue.occurred(ref("A"), at.NEEDS_YOU))
        clock.now += 5
    assert pages == [True] + [False] * 9
    (entry,) = queue.waiting()
    assert (entry.kind, entry.count, entry.opened) == ("needs-you", 10, 1_000_000.0)
    assert entry.words() == "A needs you (×10)"
    clock.now += at.REPEAT + 1
    assert queue.occurred(ref("A"), at.NEEDS_YOU), "long after its last change it is news again"
    assert queue.occurred(ref("A"), at.ERROR), "another kind of trouble is another entry"
    assert queue.occurred(ref("A", socket="fleet-other"), at.NEEDS_YOU), "so is another fleet's agent"


def test_a_relabelled_pane_neither_pages_anew_nor_silences_the_agent_whose_label_it_took(
    queue: at.Queue,
) -> None:
    assert queue.occurred(ref("A", pane="%7"), at.NEEDS_YOU)
    for label in ("X", "Y", "B"):  # A relabels its own pane again and again, the last time as B
        assert not queue.occurred(ref(label, pane="%7"), at.NEEDS_YOU), "one pane, one entry: no new page"
    assert queue.occurred(ref("B", pane="%2"), at.NEEDS_YOU), "the real B's need is news: it pages"
    assert sorted((e.pane, e.label, e.count) for e in queue.waiting()) == [("%2", "B", 1), ("%7", "B", 4)]


def test_resolved_leaves_the_queue_and_coming_back_soon_is_the_same_entry(
    queue: at.Queue, clock: Clock
) -> None:
    queue.observe([(ref("A"), at.NEEDS_YOU)], everywhere)
    clock.now += 30
    assert queue.observe([], everywhere) == [] and queue.waiting() == []
    clock.now += 10
    (back,) = queue.observe([(ref("A"), at.NEEDS_YOU)], everywhere)
    assert (back.count, back.opened) == (2, 1_000_000.0)
    assert not queue.occurred(ref("A"), at.NEEDS_YOU), "the hook's alert for it is no news"
    clock.now += 5
    queue.observe([], everywhere)
    clock.now += at.REPEAT + 1
    (new,) = queue.observe([(ref("A"), at.NEEDS_YOU)], everywhere)
    assert (new.count, new.opened) == (1, clock.now)


def test_a_fleet_not_looked_at_keeps_its_entries(queue: at.Queue, clock: Clock) -> None:
    queue.observe([(ref("A"), at.ERROR), (ref("B", host="box"), at.ERROR)], everywhere)
    clock.now += 1
    left = queue.observe([], lambda entry: entry.host == "local")  # the host did not answer
    assert [(e.host, e.label) for e in left] == [("box", "B")]


def test_snooze_for_an_hour_is_quiet_everywhere_then_loud(queue: at.Queue, clock: Clock) -> None:
    queue.observe([(ref("A"), at.NEEDS_YOU), (ref("B"), at.NEEDS_YOU)], everywhere)
    (a, _) = queue.waiting()
    queue.snooze(a.id, hour=True)
    assert [e.label for e in queue.waiting()] == ["B"] and [e.label for e in queue.snoozed()] == ["A"]
    shown = at.waiting_of([(ref("A"), at.NEEDS_YOU), (ref("B"), at.NEEDS_YOU), (ref("C"), at.ERROR)], queue)
    assert [e.words() for e in shown] == ["B needs you", "C error"], "what fleet status says waits"
    clock.now += at.REPEAT + 1
    assert not queue.occurred(ref("A"), at.NEEDS_YOU), "news, but snoozed: nobody is paged"
    clock.now += at.SNOOZE_SECONDS
    assert [e.label for e in queue.waiting()] == ["B", "A"], "A's new need is the younger"


def test_an_hours_snooze_stays_with_its_agent_not_with_the_pane(queue: at.Queue, clock: Clock) -> None:
    """tmux numbers panes anew when a fleet's server starts again: another agent in the pane the person
    silenced is not the one silenced."""
    queue.observe([(ref("B", pane="%1"), at.NEEDS_YOU)], everywhere)
    (b,) = queue.waiting()
    queue.snooze(b.id, hour=True)
    queue.observe([], everywhere)  # B's trouble went
    clock.now += at.REPEAT + 30
    assert queue.occurred(ref("Z", pane="%1"), at.NEEDS_YOU), "Z in the same pane is paged"
    assert [e.label for e in queue.waiting()] == ["Z"]


def test_snooze_until_it_changes_ends_when_it_resolves(queue: at.Queue, clock: Clock) -> None:
    queue.observe([(ref("A"), at.PAUSED)], everywhere)
    (a,) = queue.waiting()
    queue.snooze(a.key, hour=False, opened=a.opened)
    clock.now += 3 * at.SNOOZE_SECONDS
    assert queue.waiting() == [] and queue.snoozed()[0].label == "A", "as long as it lasts"
    queue.observe([], everywhere)
    clock.now += 1
    (back,) = queue.observe([(ref("A"), at.PAUSED)], everywhere)
    assert not back.quiet(clock.now) and queue.waiting()[0].count == 2


def test_snoozing_an_entry_that_went_or_was_replaced_is_refused(queue: at.Queue, clock: Clock) -> None:
    queue.observe([(ref("A"), at.ERROR)], everywhere)
    (seen,) = queue.waiting()
    clock.now += 1
    queue.observe([], everywhere)
    with pytest.raises(at.GoneError, match="no longer in the queue"):
        queue.snooze(seen.key)
    clock.now += at.REPEAT + 1
    queue.observe([(ref("A"), at.ERROR)], everywhere)
    with pytest.raises(at.GoneError, match="replaced by a newer one"):
        queue.snooze(seen.key, opened=seen.opened)


def test_rows_read_into_kinds() -> None:
    def row(**fields: t.Any) -> PaneStatus:
        base = dict(session="duo", window="w", label="A", pane="%1", pane_id="duo:w:A", state="working",
                    supervisor_pid=None, supervisor_alive=True, claude_pid=None, session_dir=None, skill=None,
                    phase=None, lifecycle=None, overflowed=None, context_usage=None, cost_usd=None,
                    restarts=None, started_at=None, agent=True)  # fmt: skip
        return PaneStatus(**{**base, **fields})

    assert at.kinds_of(row()) == []
    assert at.kinds_of(row(state="needs-you")) == ["needs-you"]
    assert at.kinds_of(row(state="paused", paused=True, budget_usd=1.0, budget_spent=1.2)) == ["paused"]
    assert at.kinds_of(row(budget_usd=1.0, budget_spent=0.85)) == ["budget"]
    assert at.kinds_of(row(state="exited 1")) == ["exited"]
    assert at.kinds_of(row(state="exited 1", agent=False)) == [], "a shell the layout ran is no agent"
    assert at.kinds_of(row(state="limited", limited_until=5.0)) == ["limited"]
    assert at.kinds_of(row(state="stopped", limited_until=5.0)) == []


def test_the_queue_is_private_and_never_read_or_written_through_a_link(
    queue: at.Queue, tmp_path: Path
) -> None:
    assert queue.read() == [] and not Path(queue.folder).exists(), "a reader makes nothing"
    queue.occurred(ref("A"), at.ERROR)
    folder = Path(queue.folder)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / at.FILE).stat().st_mode) == 0o600
    record = json.loads((folder / at.FILE).read_text())
    assert [e["label"] for e in record["entries"]] == ["A"]

    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps(record))
    (folder / at.FILE).unlink()
    os.symlink(elsewhere, folder / at.FILE)
    assert queue.read() == [], "a link is no queue"
    queue.occurred(ref("B"), at.ERROR)
    assert not (folder / at.FILE).is_symlink() and json.loads(elsewhere.read_text()) == record, (
        "replaced, not followed"
    )

    os.chmod(folder, 0o777)
    assert queue.read() == [], "a folder others can write holds nothing believed"
    with pytest.raises(Exception, match="others may write in it"):
        queue.occurred(ref("C"), at.ERROR)


def test_broken_records_cost_only_themselves(queue: at.Queue) -> None:
    queue.occurred(ref("A"), at.ERROR)
    path = Path(queue.folder) / at.FILE
    record = json.loads(path.read_text())
    record["entries"] += [{"kind": "nonsense"}, {"kind": "error", "agent": 3}, "x", None]
    path.write_text(json.dumps(record))
    assert [e.label for e in queue.read()] == ["A"]
    path.write_text("{not json")
    assert queue.read() == []
