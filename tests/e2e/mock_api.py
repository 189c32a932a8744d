"""A scripted stand-in for the Anthropic Messages API on loopback.

Claude Code talks to ``ANTHROPIC_BASE_URL``; this server answers
``POST /v1/messages`` with streamed (SSE) or plain messages taken from a script
of turns, records every request it receives, and reports the token usage each
turn says — which is what drives Claude Code's status line context % and cost.

A turn can also carry response headers (the ``anthropic-ratelimit-unified-*``
set that Claude Code turns into its usage windows), answer with an API error
instead of a message (a usage-limit 429, a 401, a 529), wait ``delay`` seconds before it answers,
and repeat: ``times=N``
requests, ``times=-1`` every request from then on, or ``until`` an epoch.
``{now+N}`` (or ``{now}``, ``{now-N}``) in any header, error message or
``until`` is the epoch in seconds N seconds after the script was loaded.

Only requests that carry tools (the agent's main loop) consume scripted turns;
side requests (titles, summaries) get a short text answer, so a script stays
aligned with the conversation whatever else the client asks.

Standard library only; binds 127.0.0.1 and an ephemeral port.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import select
import socket
import threading
import time
import typing as t
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_ids = itertools.count(1)
_NOW = re.compile(r"\{now(?:([+-])(\d+))?\}")

UNIFIED = "anthropic-ratelimit-unified-"
WINDOW_ABBREVIATIONS = {"five_hour": "5h", "seven_day": "7d"}
"""Claude Code's window names (status line ``rate_limits``) and their header abbreviations."""
DEFAULT_RESET_IN = {"five_hour": 3600, "seven_day": 500_000}


def expand_now(value: t.Any, now: float) -> t.Any:
    """*value* with every ``{now+N}`` in its strings replaced by the epoch second ``now + N``."""
    if isinstance(value, str):

        def epoch(match: re.Match[str]) -> str:
            offset = int(match[2] or 0)
            return str(int(now) + (-offset if match[1] == "-" else offset))

        return _NOW.sub(epoch, value)
    if isinstance(value, dict):
        return {k: expand_now(v, now) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_now(v, now) for v in value]
    return value


def window_headers(status: str = "allowed", **windows: tuple[float, int | str]) -> dict[str, str]:
    """The ``anthropic-ratelimit-unified-*`` headers of a subscription whose windows are at
    ``name=(utilization 0..1, reset)``; a reset given in seconds from now becomes ``{now+N}``."""
    headers = {f"{UNIFIED}status": status}
    claim = next(iter(windows), "five_hour")
    for name, (utilization, reset) in windows.items():
        abbreviation = WINDOW_ABBREVIATIONS.get(name, name)
        at = reset if isinstance(reset, str) else f"{{now+{reset}}}"
        window_status = "rejected" if utilization >= 1 else "allowed"
        headers |= {
            f"{UNIFIED}{abbreviation}-utilization": f"{utilization:g}",
            f"{UNIFIED}{abbreviation}-reset": at,
            f"{UNIFIED}{abbreviation}-status": window_status,
        }
        if window_status == "rejected":
            claim = name
    headers[f"{UNIFIED}representative-claim"] = claim
    headers[f"{UNIFIED}reset"] = headers[f"{UNIFIED}{WINDOW_ABBREVIATIONS.get(claim, claim)}-reset"]
    headers[f"{UNIFIED}overage-status"] = "rejected"
    headers[f"{UNIFIED}overage-disabled-reason"] = "org_level_disabled"
    return headers


@dataclass(frozen=True)
class ApiError:
    """An error answer of the Messages API: HTTP status, ``error.type`` and message, and headers."""

    status: int
    type: str
    message: str = "scripted error"
    headers: dict[str, str] = field(default_factory=dict)

    def body(self) -> dict[str, t.Any]:
        return {"type": "error", "error": {"type": self.type, "message": self.message}}


@dataclass
class Turn:
    """One scripted answer: a text reply or a tool call with the usage to report, or an API error;
    with the response headers to send, served to one request or repeated."""

    text: str | None = None
    tool: str | None = None
    tool_input: dict[str, t.Any] | None = None
    input_tokens: int = 1000
    cache_read: int = 0
    cache_creation: int = 0
    output_tokens: int = 20
    block_extra: dict[str, t.Any] | None = None
    """More fields of the tool_use block, as a newer API might send (Claude Code keeps them)."""
    when: t.Callable[[dict[str, t.Any]], bool] | None = None
    """Serve this turn only to a request for which this is true; until then,
    requests get the fallback text and later turns wait (order is kept)."""
    headers: dict[str, str] = field(default_factory=dict)
    """Response headers, sent with the message or the error."""
    error: ApiError | None = None
    """Answer with this error instead of a message."""
    times: int = 1
    """How many requests this turn answers before the next turn's; -1: every request from now on."""
    until: float | str | None = None
    """Answer every request until this epoch (``"{now+N}"`` allowed), then give way; ``times`` is ignored."""
    delay: float = 0.0
    """Seconds the answer waits before it is sent (replies that come seconds apart); a request whose
    client hangs up meanwhile is not answered, and is recorded ``cut``."""
    stop_reason: str | None = None
    """The reply's ``stop_reason`` instead of ``tool_use``/``end_turn`` (``max_tokens``: cut off at its
    output limit, which Claude Code follows up by itself)."""
    copies: int = 1
    """How many tool_use blocks of *tool* the reply holds (calls a model asks for at once)."""
    usage: dict[str, t.Any] = field(default_factory=dict)
    """More fields of the reply's ``usage``: ``cache_creation`` (its 1-hour part), ``speed``,
    ``inference_geo``, ``server_tool_use``, as the API reports them."""

    @classmethod
    def say(cls, text: str, **kw: t.Any) -> Turn:
        return cls(text=text, **kw)

    @classmethod
    def call(cls, tool: str, tool_input: dict[str, t.Any], **kw: t.Any) -> Turn:
        return cls(tool=tool, tool_input=tool_input, **kw)

    @classmethod
    def bash(cls, command: str, **kw: t.Any) -> Turn:
        return cls.call("Bash", {"command": command, "description": "run"}, **kw)

    @classmethod
    def fail(cls, status: int, type: str, message: str = "scripted error", **kw: t.Any) -> Turn:
        """An API error answer; ``headers`` go with it."""
        headers = kw.pop("headers", {})
        return cls(error=ApiError(status, type, message, headers), **kw)

    @classmethod
    def usage_limit(cls, reset_in: int = 60, window: str = "five_hour", **kw: t.Any) -> Turn:
        """The 429 a subscription gets at the end of a usage window (``unified-status: rejected``);
        the other window is reported allowed at 0.5."""
        other = "seven_day" if window == "five_hour" else "five_hour"
        windows = {window: (1.0, reset_in), other: (0.5, DEFAULT_RESET_IN[other])}
        message = "This request would exceed your account's rate limit. Please try again later."
        return cls.fail(429, "rate_limit_error", message, headers=window_headers("rejected", **windows), **kw)

    def with_windows(self, status: str = "allowed", **utilization: float) -> Turn:
        """A copy of this turn that also reports the usage windows at these utilizations (0..1), each resetting
        at its default distance (five_hour: an hour, seven_day: 500,000 s)."""
        windows = {name: (used, DEFAULT_RESET_IN.get(name, 3600)) for name, used in utilization.items()}
        return dataclasses.replace(self, headers={**self.headers, **window_headers(status, **windows)})

    def load(self, now: float) -> None:
        """Expand ``{now+N}`` in place (the turn keeps its identity: tests look for it in the log)."""
        self.headers = expand_now(self.headers, now)
        if self.error is not None:
            self.error = dataclasses.replace(self.error, message=expand_now(self.error.message, now),
                                             headers=expand_now(self.error.headers, now))  # fmt: skip
        if isinstance(self.until, str):
            self.until = float(expand_now(self.until, now))


@dataclass
class MockAPI:
    """The server's script and its record of what the client sent."""

    turns: list[Turn] = field(default_factory=list)
    requests: list[dict[str, t.Any]] = field(default_factory=list)
    """Every request as ``{"body", "headers", "turn"}``; ``turn`` is the scripted turn it was served, or None."""
    fallback: str = "Done."
    model: str = "claude-sonnet-4-5"
    all_headers: dict[str, str] = field(default_factory=dict)
    """Headers sent with every answer (``{now+N}`` expanded at start()); a turn's own headers win."""
    _served: int = 0
    """Requests the head of the script has answered so far."""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    # -------------------------------------------------------------- lifecycle

    def start(self) -> MockAPI:
        api = self
        self.all_headers = expand_now(self.all_headers, time.time())

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: t.Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                self._json(200, {})

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                path = self.path.split("?", 1)[0]
                if path.endswith("/count_tokens"):
                    self._json(200, {"input_tokens": 100})
                    return
                if not path.endswith("/v1/messages"):
                    self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
                    return
                turn = api._next_turn(body, dict(self.headers))
                if turn.delay > 0 and not self._client_stays(turn.delay):
                    api._cut(body)
                    return
                headers = {"request-id": f"req_mock{next(_ids):08d}", **api.all_headers, **turn.headers}
                if turn.error is not None:
                    self._json(turn.error.status, turn.error.body(), {**headers, **turn.error.headers})
                elif body.get("stream"):
                    self._stream(api._message(turn, body), headers)
                else:
                    self._json(200, api._message(turn, body), headers)

            def _client_stays(self, seconds: float) -> bool:
                """Wait *seconds*; False as soon as the client hangs up (an interrupted request)."""
                deadline = time.monotonic() + seconds
                while (left := deadline - time.monotonic()) > 0:
                    ready, _, _ = select.select([self.connection], [], [], min(left, 0.05))
                    try:
                        if ready and not self.connection.recv(1, socket.MSG_PEEK):
                            return False
                    except OSError:  # reset
                        return False
                return True

            def _json(
                self, code: int, payload: dict[str, t.Any], headers: dict[str, str] | None = None
            ) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self._headers(headers or {})
                self.wfile.write(data)

            def _stream(self, message: dict[str, t.Any], headers: dict[str, str]) -> None:
                chunks = b"".join(
                    f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
                    for event in _events(message)
                )
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Content-Length", str(len(chunks)))
                self._headers(headers)
                self.wfile.write(chunks)

            def _headers(self, headers: dict[str, str]) -> None:
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the mock first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    # --------------------------------------------------------------- scripting

    def script(self, *turns: Turn) -> None:
        """Append *turns*; their ``{now+N}`` count from now."""
        now = time.time()
        for turn in turns:
            turn.load(now)
        with self._lock:
            self.turns.extend(turns)

    def _next_turn(self, body: dict[str, t.Any], headers: dict[str, str]) -> Turn:
        with self._lock:
            record: dict[str, t.Any] = {"body": body, "headers": headers, "turn": None}
            self.requests.append(record)
            while self.turns and self._expired(self.turns[0]):
                self._give_way()
            if body.get("tools") and self.turns:
                head = self.turns[0]
                if head.when is None or head.when(body):
                    record["turn"] = head
                    self._served += 1
                    if head.until is None and head.times != -1 and self._served >= head.times:
                        self._give_way()
                    return head
        return Turn(text=self.fallback)

    @staticmethod
    def _expired(turn: Turn) -> bool:
        return turn.until is not None and time.time() >= float(turn.until)

    def _give_way(self) -> None:
        self.turns.pop(0)
        self._served = 0

    def _message(self, turn: Turn, body: dict[str, t.Any]) -> dict[str, t.Any]:
        content: list[dict[str, t.Any]]
        if turn.tool:
            content = [{"type": "tool_use", "id": f"toolu_mock{next(_ids):08d}", "name": turn.tool,
                        "input": turn.tool_input or {}, **(turn.block_extra or {})}
                       for _ in range(max(1, turn.copies))]  # fmt: skip
            stop = "tool_use"
        else:
            content = [{"type": "text", "text": turn.text or self.fallback}]
            stop = "end_turn"
        if turn.stop_reason is not None:
            stop = turn.stop_reason
        return {
            "id": f"msg_mock{next(_ids):08d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model") or self.model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": turn.input_tokens,
                "cache_creation_input_tokens": turn.cache_creation,
                "cache_read_input_tokens": turn.cache_read,
                "output_tokens": turn.output_tokens,
                **turn.usage,
            },
        }

    # --------------------------------------------------------------- reading

    def answered(self, turn: Turn) -> int:
        """How many requests *turn* answered."""
        with self._lock:
            return sum(1 for r in self.requests if r["turn"] is turn)

    def _cut(self, body: dict[str, t.Any]) -> None:
        with self._lock:
            for record in self.requests:
                if record["body"] is body:
                    record["cut"] = True

    def cut(self) -> int:
        """How many agent-loop requests the client hung up on before they were answered."""
        with self._lock:
            return sum(1 for r in self.requests if r.get("cut") and r["body"].get("tools"))

    def main_requests(self) -> list[dict[str, t.Any]]:
        """Bodies of the agent-loop requests (those that carried tools)."""
        with self._lock:
            return [r["body"] for r in self.requests if r["body"].get("tools")]

    @staticmethod
    def all_text(body: dict[str, t.Any]) -> str:
        """Every string in a request's messages and system prompt, joined (for assertions)."""
        return "\n".join(_strings(body.get("messages", [])) + _strings(body.get("system", [])))

    def pending(self) -> int:
        with self._lock:
            return len(self.turns)

    def tool_results(self, body: dict[str, t.Any]) -> list[dict[str, t.Any]]:
        found: list[dict[str, t.Any]] = []
        for message in body.get("messages", []):
            content = message.get("content")
            if isinstance(content, list):
                found += [c for c in content if isinstance(c, dict) and c.get("type") == "tool_result"]
        return found


def _strings(value: t.Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    return []


def _events(message: dict[str, t.Any]) -> t.Iterator[dict[str, t.Any]]:
    start = dict(message, content=[], stop_reason=None)
    start["usage"] = dict(message["usage"], output_tokens=1)
    yield {"type": "message_start", "message": start}
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            }
            yield {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "text_delta", "text": block["text"]},
            }
        else:
            yield {"type": "content_block_start", "index": index, "content_block": dict(block, input={})}
            yield {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])},
            }
        yield {"type": "content_block_stop", "index": index}
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
        "usage": {"output_tokens": message["usage"]["output_tokens"]},
    }
    yield {"type": "message_stop"}
