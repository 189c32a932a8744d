"""Which reply Claude follows up by itself: the newest of the main conversation, cut off at its output
limit (hooks.cut_off_reply). The interruption itself is tried end to end with the
real CLI (tests/e2e/test_budgets.py)."""

from __future__ import annotations

import json
import typing as t
from pathlib import Path

import pytest

from claude_shepherd.hooks.cut_off_reply import TAIL, cut_off


def reply(ident: str, stop: str, *, tool: bool = False, **extra: t.Any) -> dict[str, t.Any]:
    content = (
        [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}]
        if tool
        else [{"type": "text", "text": "LONG"}]
    )
    message = {"id": ident, "model": "claude-sonnet-4-5", "stop_reason": stop, "content": content}
    return {"type": "assistant", "message": {**message, **extra.pop("message", {})}, **extra}


def transcript(tmp_path: Path, *entries: dict[str, t.Any] | str) -> str:
    path = tmp_path / "conversation.jsonl"
    path.write_text("".join((e if isinstance(e, str) else json.dumps(e)) + "\n" for e in entries))
    return str(path)


def test_the_newest_reply_cut_off_without_a_tool_is_followed_up(tmp_path: Path) -> None:
    path = transcript(tmp_path, reply("msg_1", "tool_use", tool=True), reply("msg_2", "max_tokens"),
                      {"type": "user", "isMeta": True, "message": {"content": "Output token limit hit."}})  # fmt: skip
    assert cut_off(path) == "msg_2"
    assert (
        cut_off(transcript(tmp_path, reply("msg_3", "max_tokens", tool=True))) == "msg_3"
    )  # the call is cut


@pytest.mark.parametrize(
    "last",
    [
        reply("msg_2", "end_turn"),
        reply("err", "stop_sequence", message={"model": "<synthetic>"}),  # Claude gave up: no follow-up
    ],
    ids=["ended", "claude_s_own_error"],
)
def test_no_follow_up_after_a_reply_that_ended_or_claude_s_error(tmp_path: Path, last) -> None:
    assert cut_off(transcript(tmp_path, reply("msg_1", "max_tokens"), last)) is None


def test_a_sub_agent_s_line_and_lines_that_cannot_be_read_are_passed_over(tmp_path: Path) -> None:
    side = reply("msg_9", "end_turn", isSidechain=True)
    path = transcript(
        tmp_path, reply("msg_1", "max_tokens"), side, '{"type": "assistant", "max_tokens', '["assistant"]'
    )
    assert cut_off(path) == "msg_1"


def test_a_reply_further_back_than_the_tail_read_or_no_transcript_is_none(tmp_path: Path) -> None:
    padding = {"type": "user", "message": {"content": "x" * TAIL}}
    assert cut_off(transcript(tmp_path, reply("msg_1", "max_tokens"), padding)) is None
    assert cut_off(str(tmp_path / "missing.jsonl")) is None
    assert cut_off(None) is None
    assert cut_off("relative.jsonl") is None


@pytest.mark.parametrize("before", [0, 2], ids=["alone", "after_other_lines"])
def test_a_cut_off_reply_longer_than_the_tail_read_is_read_whole(tmp_path: Path, before: int) -> None:
    """Whitespace is many bytes in few tokens: a reply within the output limit may be longer than the
    tail searched (an attack sent 300 KB and was not interrupted)."""
    long = reply("msg_long", "max_tokens", message={"content": [{"type": "text", "text": " " * (3 * TAIL)}]})
    nudge = {"type": "user", "isMeta": True, "message": {"content": "Output token limit hit."}}
    earlier = [reply(f"msg_{n}", "tool_use", tool=True) for n in range(before)]
    assert cut_off(transcript(tmp_path, *earlier, long, nudge)) == "msg_long"
