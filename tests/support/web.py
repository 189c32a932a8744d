"""``fleet web`` run for a test: its URL and token, plain HTTP requests to it, and its stop."""

from __future__ import annotations

import json
import select
import signal
import subprocess
import typing as t
import urllib.error
import urllib.request

from support.fleet import BIN, FleetWorld


class Web:
    """``fleet web`` running for a test: its URL, token and process."""

    def __init__(self, world: FleetWorld, *args: str) -> None:
        self.proc = subprocess.Popen(
            [str(BIN / "fleet"), "web", *args],
            cwd=world.project,
            env=world.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
        assert ready, "fleet web said no URL within 60 s"
        self.url = self.proc.stdout.readline().strip()
        assert self.url.startswith("http://127.0.0.1:") and "/?token=" in self.url, self.url
        self.base, _, self.token = self.url.partition("/?token=")

    def request(
        self, path: str, *, body: t.Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, str]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
