"""A scripted stand-in for the Anthropic Messages API on loopback.

Claude Code talks to ``ANTHROPIC_BASE_URL``; this server answers
``POST /v1/messages`` with streamed (SSE) or plain messages taken from a script
of turns, records every request it receives, and reports the token usage each
turn says — which is what drives Claude Code's status line context %.

Only requests that carry tools (the agent's main loop) consume scripted turns;
side requests (titles, summaries) get a short text answer, so a script stays
aligned with the conversation whatever else the client asks.

Standard library only; binds 127.0.0.1 and an ephemeral port.
"""

from __future__ import annotations

import itertools
import json
import threading
import typing as t
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_ids = itertools.count(1)


@dataclass
class Turn:
    """One scripted assistant reply: text, or a tool call, with the usage to report."""

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

    @classmethod
    def say(cls, text: str, **kw: t.Any) -> Turn:
        return cls(text=text, **kw)

    @classmethod
    def call(cls, tool: str, tool_input: dict[str, t.Any], **kw: t.Any) -> Turn:
        return cls(tool=tool, tool_input=tool_input, **kw)

    @classmethod
    def bash(cls, command: str, **kw: t.Any) -> Turn:
        return cls.call("Bash", {"command": command, "description": "run"}, **kw)


@dataclass
class MockAPI:
    """The server's script and its record of what the client sent."""

    turns: list[Turn] = field(default_factory=list)
    requests: list[dict[str, t.Any]] = field(default_factory=list)
    """Every request as ``{"body", "headers", "turn"}``; ``turn`` is the scripted turn it was served, or None."""
    fallback: str = "Done."
    model: str = "claude-sonnet-4-5"
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    # -------------------------------------------------------------- lifecycle

    def start(self) -> MockAPI:
        api = self

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
                message = api._message(turn, body)
                if body.get("stream"):
                    self._stream(message)
                else:
                    self._json(200, message)

            def _json(self, code: int, payload: dict[str, t.Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, message: dict[str, t.Any]) -> None:
                chunks = b"".join(
                    f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
                    for event in _events(message)
                )
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Content-Length", str(len(chunks)))
                self.end_headers()
                self.wfile.write(chunks)

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
        with self._lock:
            self.turns.extend(turns)

    def _next_turn(self, body: dict[str, t.Any], headers: dict[str, str]) -> Turn:
        with self._lock:
            record: dict[str, t.Any] = {"body": body, "headers": headers, "turn": None}
            self.requests.append(record)
            if body.get("tools") and self.turns:
                when = self.turns[0].when
                if when is None or when(body):
                    record["turn"] = self.turns.pop(0)
                    return t.cast(Turn, record["turn"])
        return Turn.say(self.fallback)

    def _message(self, turn: Turn, body: dict[str, t.Any]) -> dict[str, t.Any]:
        content: list[dict[str, t.Any]]
        if turn.tool:
            content = [{"type": "tool_use", "id": f"toolu_mock{next(_ids):08d}", "name": turn.tool,
                        "input": turn.tool_input or {}, **(turn.block_extra or {})}]  # fmt: skip
            stop = "tool_use"
        else:
            content = [{"type": "text", "text": turn.text or self.fallback}]
            stop = "end_turn"
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
            },
        }

    # --------------------------------------------------------------- reading

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
