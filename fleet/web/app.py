"""The Starlette app of ``fleet web``: the page, its JSON, its three actions, and the guard before them.

The guard (:class:`Guard`) sees every request first:

* with a loopback bind, the ``Host`` must name a loopback address (any port, for an SSH tunnel's):
  a web page that rebinds its own name to 127.0.0.1 gets nothing;
* a POST must come from this page's own origin (``Origin`` equal to ``http://`` + ``Host``; else 403)
  and carry JSON (else 415), so no other site and no HTML form can act;
* every request needs the access token (else 401, and no agent data): the page ``/`` takes it from
  ``?token=`` (and then sets a cookie that is HttpOnly, SameSite=Strict and named for this port, good
  for the page alone) or from that cookie; everything under ``/api/`` takes it only as
  ``Authorization: Bearer`` (which the page's script sends, and no other site can), never from the
  cookie, which a browser would also send to another server on the same address but another port.

Every answer carries ``Cache-Control: no-store``, ``nosniff``, ``no-referrer``, no framing, and a
Content-Security-Policy that runs only the page's own inline script and style (by a nonce per answer).
"""

from __future__ import annotations

import hmac
import json
import secrets
import threading
import time
import typing as t
from http.cookies import SimpleCookie
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from claude_shepherd.fleet.web import actions, page, view
from claude_shepherd.supervisor import attention
from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.printable import printable

MAX_BODY = 4096
"""Bytes of a request's body at most (an action's JSON is a few hundred)."""
IDLE = 60.0
"""Seconds without a request after which the fleets are no longer looked at (until the next one)."""
FIRST_WAIT = 30.0
"""Seconds a request waits for the first look."""
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]", "ip6-localhost"})
NO_TOKEN = "401: this needs the access token; open the URL that `fleet web` printed (it carries it)"


class Source:
    """The latest look at the fleets as the page's document, refreshed every *interval* seconds in a
    thread of its own while the page is being asked for it (so an idle server costs nothing)."""

    def __init__(
        self,
        interval: float,
        queue: attention.Queue | None = None,
        look: t.Callable[[], view.Look] = view.look,
    ) -> None:
        self.interval = interval
        self.queue = queue or attention.Queue()
        self._look = look
        self._doc: dict[str, t.Any] | None = None
        self._asked = time.monotonic()
        self._ready = threading.Condition()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fleet-web-look", daemon=True)
        self._thread.start()

    def document(self) -> dict[str, object]:
        """The latest document (waiting for the first one); being asked keeps the looks coming."""
        self._asked = time.monotonic()
        self._wake.set()
        with self._ready:
            self._ready.wait_for(lambda: self._doc is not None or self._stop.is_set(), FIRST_WAIT)
            if self._doc is None:
                raise ShepherdError("the first look at the fleets is taking long; try again")
            return self._doc

    def again(self) -> None:
        """Look again now (after an action)."""
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        with self._ready:
            self._ready.notify_all()

    def _run(self) -> None:
        while not self._stop.is_set():
            if time.monotonic() - self._asked <= IDLE or self._doc is None:
                self._once()
            self._wake.wait(self.interval)
            self._wake.clear()

    def _once(self) -> None:
        try:
            seen = self._look()
            try:
                entries = view.taken_in(seen, self.queue)
            except (ShepherdError, OSError) as exc:  # a queue that cannot be kept: the page still shows
                entries = []
                seen = view.Look(
                    seen.rows, [*seen.silent, f"the attention queue ({exc})"], seen.answered, seen.seen_at
                )
            doc = view.document(seen, entries)
        except Exception as exc:  # one failed look costs only itself: the page says so, and the next may do
            doc = {**(self._doc or view.document(view.Look([], seen_at=time.time()), [])),
                   "silent": [printable(f"the last look failed: {type(exc).__name__}: {exc}")]}  # fmt: skip
        with self._ready:
            self._doc = doc
            self._ready.notify_all()


def _host_name(host: str) -> str:
    """``127.0.0.1`` of ``127.0.0.1:8080``, ``[::1]`` of ``[::1]:8080``."""
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class Guard:
    """Host, origin and token checks before any route, and the safety headers on every answer."""

    def __init__(self, app: ASGIApp, *, token: str, page_key: str, port: int, loopback: bool) -> None:
        self.app = app
        self.token = token.encode()
        self.page_key = page_key.encode()
        """The cookie's value: not the token, since a browser sends the cookie to every server on this
        address whatever its port; it opens the page alone, which holds no agent data."""
        self.cookie = f"fleet_web_{port}"
        self.loopback = loopback

    def _holds(self, value: str | None) -> bool:
        return value is not None and hmac.compare_digest(value.encode(), self.token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "")
        path, method = scope["path"], scope["method"]
        nonce = secrets.token_urlsafe(16)
        scope.setdefault("state", {})["nonce"] = nonce
        refusal: Response | None = None
        if self.loopback and _host_name(host).lower() not in LOOPBACK_NAMES:
            refusal = PlainTextResponse("421: fleet web answers only to a loopback address", 421)
        elif method == "POST" and headers.get("origin") != f"http://{host}":
            refusal = JSONResponse({"error": "refused: a change must come from this page's own origin"}, 403)
        elif method == "POST" and headers.get("content-type", "").split(";")[0].strip() != "application/json":
            refusal = JSONResponse({"error": "a change is asked for in JSON"}, 415)
        elif not self._allowed(path, method, headers, scope):
            api = path.startswith("/api/")
            refusal = JSONResponse({"error": NO_TOKEN}, 401) if api else PlainTextResponse(NO_TOKEN, 401)
        if refusal is not None:
            await self._guarded(refusal, scope, receive, send, nonce)
            return
        await self.app(scope, receive, self._headers(send, nonce))

    def _allowed(self, path: str, method: str, headers: dict[str, str], scope: Scope) -> bool:
        bearer = headers.get("authorization", "")
        if bearer.startswith("Bearer ") and self._holds(bearer[len("Bearer ") :]):
            return True
        if path != "/" or method not in ("GET", "HEAD"):
            return False  # the API takes the token only as a header: no cookie is enough for it
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if any(self._holds(v) for v in query.get("token", [])):
            scope["state"]["set_cookie"] = True
            return True
        jar = SimpleCookie()
        try:
            jar.load(headers.get("cookie", ""))
        except Exception:
            return False
        morsel = jar.get(self.cookie)
        return morsel is not None and hmac.compare_digest(morsel.value.encode(), self.page_key)

    async def _guarded(
        self, response: Response, scope: Scope, receive: Receive, send: Send, nonce: str
    ) -> None:
        await response(scope, receive, self._headers(send, nonce))

    def _headers(self, send: Send, nonce: str) -> Send:
        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                raw = list(message.get("headers", []))
                csp = (
                    f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
                    "connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; "
                    "frame-ancestors 'none'"
                )
                for name, value in (
                    ("content-security-policy", csp),
                    ("x-content-type-options", "nosniff"),
                    ("referrer-policy", "no-referrer"),
                    ("x-frame-options", "DENY"),
                    ("cache-control", "no-store"),
                    ("cross-origin-opener-policy", "same-origin"),
                    ("cross-origin-resource-policy", "same-origin"),
                ):
                    raw.append((name.encode(), value.encode()))
                message = {**message, "headers": raw}
            await send(message)

        return sending


async def _body(request: Request) -> t.Any:
    """The request's JSON, read up to :data:`MAX_BODY` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > MAX_BODY):
        raise actions.Refused(f"the request is over {MAX_BODY} bytes", 413)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise actions.Refused(f"the request is over {MAX_BODY} bytes", 413)
        chunks.append(chunk)
    try:
        return json.loads(b"".join(chunks) or b"null")
    except (ValueError, RecursionError):
        raise actions.Refused("the request is not JSON; reload the page") from None


def make_app(
    token: str, source: Source, *, port: int, loopback: bool, grace: float = actions.GRACE
) -> ASGIApp:
    """The whole app: its routes behind :class:`Guard`."""

    page_key = secrets.token_urlsafe(32)

    async def home(request: Request) -> Response:
        response = HTMLResponse(page.html(request.scope["state"]["nonce"], source.interval))
        if request.scope["state"].get("set_cookie"):
            response.set_cookie(f"fleet_web_{port}", page_key, httponly=True, samesite="strict", path="/")
        return response

    async def document(request: Request) -> Response:
        try:
            return JSONResponse(await run_in_threadpool(source.document))
        except ShepherdError as exc:
            return JSONResponse({"error": printable(str(exc))}, 503)

    def acting(do: t.Callable[[t.Any], str]) -> t.Callable[[Request], t.Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            try:
                body = await _body(request)
                said = await run_in_threadpool(do, body)
            except actions.Refused as exc:
                return JSONResponse({"error": printable(str(exc))}, exc.status)
            except ShepherdError as exc:  # the verb's own one-line error
                return JSONResponse({"error": printable(str(exc))}, 409)
            finally:
                source.again()
            return JSONResponse({"said": said})

        return endpoint

    routes = [
        Route("/", home, methods=["GET"]),
        Route("/api/view", document, methods=["GET"]),
        Route("/api/restart", acting(lambda body: actions.restart(body, grace)), methods=["POST"]),
        Route("/api/budget", acting(actions.raise_budget), methods=["POST"]),
        Route("/api/snooze", acting(lambda body: actions.snooze(body, source.queue)), methods=["POST"]),
    ]
    return Guard(Starlette(routes=routes), token=token, page_key=page_key, port=port, loopback=loopback)
