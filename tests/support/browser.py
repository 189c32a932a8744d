"""A real browser for tests: Debian's headless Chromium, driven over the Chrome DevTools protocol.

No driver binary and no browser download: Chromium is started with a fresh profile and
``--remote-debugging-port=0``, the port it chose is read from the profile's ``DevToolsActivePort``,
and one page is driven through its WebSocket (``websockets``' synchronous client). A test without
Chromium is skipped, saying how to get it (``.ci/run`` installs it).
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
import typing as t
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
)


def chromium_or_skip() -> str:
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium; .ci/run installs it)")
    try:
        import websockets.sync.client  # noqa: F401
    except ImportError:
        pytest.skip("the websockets package is missing: pip install -e '.[test]'")
    return CHROMIUM


class Page:
    """One tab: commands, JavaScript, the viewport, screenshots."""

    def __init__(self, url: str) -> None:
        from websockets.sync.client import connect

        self.socket = connect(url, max_size=64 * 1024 * 1024, open_timeout=10).__enter__()
        self.ids = itertools.count(1)

    def call(self, method: str, timeout: float = 15, **params: t.Any) -> dict[str, t.Any]:
        number = next(self.ids)
        self.socket.send(json.dumps({"id": number, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            message = json.loads(self.socket.recv(timeout=max(0.1, deadline - time.monotonic())))
            if message.get("id") == number:
                if "error" in message:
                    raise AssertionError(f"{method}: {message['error']}")
                return t.cast("dict[str, t.Any]", message.get("result", {}))

    def evaluate(self, expression: str) -> t.Any:
        """The value of *expression* (awaited when it is a promise), as JSON brings it back."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def phone(self, width: int = 390, height: int = 844) -> None:
        self.call(
            "Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=True
        )

    def go(self, url: str) -> None:
        self.call("Page.navigate", url=url)
        self.until("document.readyState === 'complete'", 15, "the page to load")

    def until(self, expression: str, timeout: float, what: str) -> t.Any:
        """The first truthy value of *expression* within *timeout* seconds."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out after {timeout:g}s waiting for {what} ({expression} = {value!r})"
                )
            time.sleep(0.2)

    def screenshot(self, path: Path) -> Path:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        self.socket.close()


class Browser:
    """Headless Chromium with a profile of its own, ended (and its profile removed) by :meth:`close`."""

    def __init__(self, env: t.Mapping[str, str] | None = None) -> None:
        self.profile = Path(tempfile.mkdtemp(prefix="chromium-"))
        self.proc = subprocess.Popen(
            [chromium_or_skip(), *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=dict(os.environ if env is None else env),
            start_new_session=True,
        )
        active = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (active.exists() and active.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise AssertionError("Chromium did not start (no DevToolsActivePort)")
            time.sleep(0.1)
        self.port = int(active.read_text().split()[0])

    def page(self) -> Page:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/json/new?about:blank", method="PUT")
        with urllib.request.urlopen(request, timeout=10) as answer:
            target = json.loads(answer.read())
        return Page(target["webSocketDebuggerUrl"])

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, 9)
            except OSError:
                pass
        self.proc.wait(10)
        shutil.rmtree(self.profile, ignore_errors=True)
