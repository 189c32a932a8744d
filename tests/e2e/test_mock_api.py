"""The mock Messages API itself: headers, errors, repetition and ``{now+N}`` as the limit tests use them.

Plain HTTP requests from this process; no CLI needed.
"""

from __future__ import annotations

import json
import time
import typing as t
import urllib.error
import urllib.request

import pytest

from .mock_api import UNIFIED, MockAPI, Turn, expand_now

MAIN = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [{"name": "Bash"}]}
SIDE = {"model": "m", "messages": [{"role": "user", "content": "title?"}]}


def post(api: MockAPI, body: dict[str, t.Any]) -> tuple[int, dict[str, str], dict[str, t.Any]]:
    request = urllib.request.Request(f"{api.url}/v1/messages?beta=true", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, dict(answer.headers), json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), json.loads(error.read())


def text(payload: dict[str, t.Any]) -> str:
    return str(payload["content"][0].get("text"))


@pytest.fixture
def api() -> t.Iterator[MockAPI]:
    server = MockAPI(all_headers={"x-every": "{now+10}"}).start()
    yield server
    server.stop()


def test_now_placeholders_count_from_load() -> None:
    assert expand_now({"a": ["{now+60}", "at {now} or {now-5}"], "b": 1}, 1000.7) == {
        "a": ["1060", "at 1000 or 995"],
        "b": 1,
    }


def test_times_repeats_a_turn_and_minus_one_repeats_it_for_ever(api: MockAPI) -> None:
    twice = Turn.say("twice", times=2)
    api.script(twice, Turn.say("once"), Turn.say("always", times=-1))
    answers = [text(post(api, MAIN)[2]) for _ in range(6)]
    assert answers == ["twice", "twice", "once", "always", "always", "always"]
    assert api.answered(twice) == 2 and api.pending() == 1


def test_until_answers_every_request_until_the_epoch(api: MockAPI) -> None:
    api.script(Turn.say("over", until="{now-1}"), Turn.say("open", until="{now+3600}"), Turn.say("next"))
    assert [text(post(api, MAIN)[2]) for _ in range(3)] == ["open"] * 3
    assert api.pending() == 2


def test_side_requests_take_no_turn(api: MockAPI) -> None:
    api.script(Turn.usage_limit(times=1))
    status, _, payload = post(api, SIDE)
    assert (status, text(payload)) == (200, "Done.")
    assert post(api, MAIN)[0] == 429


def test_a_usage_limit_answers_429_with_the_unified_headers(api: MockAPI) -> None:
    api.script(Turn.usage_limit(reset_in=60, window="seven_day"))
    before = int(time.time())
    status, headers, payload = post(api, MAIN)
    assert status == 429 and payload["error"]["type"] == "rate_limit_error"
    assert headers[f"{UNIFIED}status"] == "rejected"
    assert headers[f"{UNIFIED}representative-claim"] == "seven_day"
    assert headers[f"{UNIFIED}7d-status"] == "rejected" and headers[f"{UNIFIED}5h-status"] == "allowed"
    reset = int(headers[f"{UNIFIED}reset"])
    assert reset == int(headers[f"{UNIFIED}7d-reset"]) and before + 59 <= reset <= before + 61
    assert int(headers["x-every"]) >= before + 9, "the headers of every answer come too"


def test_windows_and_usage_ride_on_a_reply(api: MockAPI) -> None:
    reply = Turn.say("ok", input_tokens=10_000, output_tokens=1_000, cache_read=5)
    api.script(reply.with_windows(five_hour=0.42))
    status, headers, payload = post(api, MAIN)
    assert status == 200 and text(payload) == "ok"
    assert payload["usage"] == {"input_tokens": 10_000, "cache_creation_input_tokens": 0,
                                "cache_read_input_tokens": 5, "output_tokens": 1_000}  # fmt: skip
    assert (headers[f"{UNIFIED}status"], headers[f"{UNIFIED}5h-utilization"]) == ("allowed", "0.42")
    assert f"{UNIFIED}7d-utilization" not in headers


@pytest.mark.parametrize(("status", "kind"), [(401, "authentication_error"), (529, "overloaded_error")])
def test_any_error_with_its_headers(api: MockAPI, status: int, kind: str) -> None:
    api.script(Turn.fail(status, kind, "no", headers={"retry-after": "3"}))
    got, headers, payload = post(api, dict(MAIN, stream=True))
    assert (got, headers["retry-after"]) == (status, "3")
    assert payload == {"type": "error", "error": {"type": kind, "message": "no"}}
