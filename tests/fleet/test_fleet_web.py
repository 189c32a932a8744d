"""``fleet web`` in a real browser (Debian's headless Chromium over the DevTools protocol), with two
fleets of stand-in agents on a private tmux server: every agent is shown; a killed agent's row
changes without a reload; markup an agent wrote is text; a paused agent's budget is raised from the
page and it goes on; an entry is snoozed from the page; the phone view never scrolls sideways. And
over plain HTTP: no token, 401 and no agent data; a POST from another origin, 403; SIGTERM, exit 0."""

from __future__ import annotations

import json
import os
import signal
import typing as t
from pathlib import Path

import pytest
from support.browser import Browser, chromium_or_skip
from support.fleet import FleetWorld, agent
from support.web import Web

from claude_shepherd.supervisor.session import budgets

pytestmark = pytest.mark.slow

CONVERSATION = "5d0c8f5e-1b7e-4a53-9a39-3f6e2f2d7a10"
MARKUP_LABEL = '<img src=x onerror="window.pwned=1">A'
MARKUP_PHASE = "<b>Phase 2</b><script>window.pwned=2</script>"


def paused_agent(world: FleetWorld) -> list[dict[str, t.Any]]:
    """C: spends $1.10 (its status line) against its $1 budget, and a tool call pauses it."""
    line = {"session_id": CONVERSATION, "cwd": str(world.project), "cost": {"total_cost_usd": 1.1}}
    call = {"session_id": CONVERSATION, "cwd": str(world.project), "transcript_path": "/none.jsonl",
            "hook_event_name": "PreToolUse", "tool_name": "Read", "tool_use_id": "toolu_1",
            "tool_input": {"file_path": str(world.project / "notes.txt")}}  # fmt: skip
    return [
        {"run": ["claude-hook", "status-line"], "stdin": json.dumps(line)},
        {"run": ["claude-hook", "pre-tool-use"], "stdin": json.dumps(call)},
        {"mark": "paused"},
        {"read_keys": {"timeout": 120}},  # as Claude's input box reads them: the raise types its prompt
        {"wait": None},
    ]


CARDS = (
    "[...document.querySelectorAll('#agents .agent')].map(a => ({label: a.querySelector('.label').textContent,"
    " state: a.querySelector('.badge').textContent, where: a.querySelector('.where').textContent,"
    " phase: a.querySelector('.phase').textContent, waits: a.querySelector('.waits').textContent}))"
)


def cards(page: t.Any) -> dict[str, dict[str, str]]:
    return {card["label"]: card for card in page.evaluate(CARDS)}


def test_the_fleets_on_a_phone_live_safe_and_acting(world: FleetWorld, tmp_path: Path) -> None:
    chromium_or_skip()
    (world.project / "notes.txt").write_text("notes\n")
    world.layout("alpha", "  - agents:\n      panes:\n        - A: claude-run\n        - B: claude-run\n")
    world.layout(
        "beta",
        "  - main:\n      panes:\n        - C:\n            budget: 1\n            commands: claude-run\n",
    )
    world.plan(
        "A", agent({"session": ["phase", "sessions/S_A", MARKUP_PHASE]}, {"mark": "phased"}, label="A")
    )
    world.plan("B", agent(label="B"))
    world.plan("C", paused_agent(world))
    for name in ("alpha", "beta"):
        started = world.fleet("start", name, "--no-attach")
        assert started.returncode == 0, started.stdout + started.stderr
    world.wait_event("A", "mark", 30, name="phased")
    world.wait_event("C", "mark", 30, name="paused")
    world.tmux(
        "set-option", "-p", "-t", world.panes()["A"]["pane_id"], "@pane_label", MARKUP_LABEL
    )  # as an agent may

    web = Web(world, "--interval", "1")
    browser = Browser()
    try:
        # Without the token: 401, and not a word about any agent.
        for path in ("/", "/api/view", "/?token=wrong"):
            status, said = web.request(path)
            assert status == 401 and "alpha" not in said and "B" not in said.replace("Bearer", ""), (
                path,
                said,
            )
        status, _ = web.request("/api/view", headers={"Authorization": "Bearer " + web.token})
        assert status == 200
        seen = {"host": "local", "socket": world.socket, "pane": "%0", "identity": "alpha:agents:B"}
        for origin in ("http://evil.example", "null", web.base.replace("127.0.0.1", "localhost")):
            status, said = web.request(
                "/api/restart",
                body=seen,
                headers={
                    "Authorization": "Bearer " + web.token,
                    "Origin": origin,
                    "Content-Type": "application/json",
                },
            )
            assert status == 403 and "origin" in said, (origin, status, said)

        page = browser.page()
        page.phone()
        page.go(web.url)
        assert page.evaluate("location.href") == web.base + "/", "the token left the address bar"
        page.evaluate("window.marker = 'no reload'")
        shown = page.until(
            f"(() => {{ const c = {CARDS}; return c.length === 3 && c.some(x => x.state === 'paused') && c; }})()",
            30,
            "three agents, C paused",
        )
        by_label = {card["label"]: card for card in shown}
        assert set(by_label) == {MARKUP_LABEL, "B", "C"}, by_label
        assert by_label["B"]["where"].startswith("alpha:agents") and by_label["C"]["where"].startswith(
            "beta:main"
        )
        assert by_label[MARKUP_LABEL]["phase"].endswith(MARKUP_PHASE), "the agent's markup is shown as text"
        assert (
            page.evaluate("document.querySelectorAll('#agents img, #agents b, #agents script').length") == 0
        )
        assert page.evaluate("window.pwned === undefined"), "no script of an agent's ran"
        assert by_label["B"]["state"] in ("—", "working", "done"), by_label["B"]
        assert by_label["C"]["state"] == "paused" and "a bigger budget" in by_label["C"]["waits"], by_label[
            "C"
        ]

        # The phone view: 390 px wide, nothing wider than the screen.
        widths = page.evaluate(
            "[document.documentElement.scrollWidth, document.body.scrollWidth, window.innerWidth]"
        )
        assert widths[0] <= widths[2] and widths[1] <= widths[2], widths
        page.screenshot(tmp_path / "phone.png")

        # An agent killed: its row says so within seconds, and the page was not reloaded.
        os.kill(int(world.panes()["B"]["pane_pid"]), signal.SIGKILL)
        page.until(
            f"(() => {{ const b = {CARDS}.find(c => c.label === 'B'); return b && b.state.startsWith('exited'); }})()",
            15,
            "B's row to say exited",
        )
        queued = page.until(
            "[...document.querySelectorAll('#queue .entry .label')].map(e => e.textContent).includes('B exited')"
            " && [...document.querySelectorAll('#queue .entry .label')].map(e => e.textContent)",
            15,
            "B queued",
        )
        assert queued == ["C paused at its budget", "B exited"], (
            "what waits for a person first, then what broke"
        )
        assert page.evaluate("window.marker") == "no reload"

        # Snoozed from the page: quiet here and in the queue everyone reads.
        page.evaluate("window.confirm = () => true")
        page.evaluate(
            "[...document.querySelectorAll('#queue .entry')].find(e => e.textContent.includes('B exited'))"
            "  .querySelectorAll('button').forEach(b => { if (b.textContent === 'Snooze 1 h') b.click(); })"
        )
        page.until("document.querySelector('#snoozed').textContent.includes('B exited')", 15, "B snoozed")
        from claude_shepherd.supervisor.attention import Queue

        state = {"XDG_STATE_HOME": "", "HOME": world.env["HOME"]}
        assert [e.label for e in Queue(state).snoozed()] == ["B"]

        # C's budget raised from the page: it goes on.
        page.evaluate(
            "(() => { const c = [...document.querySelectorAll('#agents .agent')]"
            ".find(a => a.querySelector('.label').textContent === 'C');"
            " c.querySelector('.raise input').value = '2'; c.querySelector('.raise button').click(); })()"
        )
        said = page.until(
            "document.querySelector('#toast').textContent.includes('Resumed') && document.querySelector('#toast').textContent",
            30,
            "the raise to be said",
        )
        assert "Budget of pane C: $1.00 -> $3.00" in said, said
        page.until(
            f"(() => {{ const c = {CARDS}.find(x => x.label === 'C'); return c && c.state !== 'paused' && !c.waits; }})()",
            15,
            "C to go on",
        )
        assert world.wait_event("C", "keys", 10)["text"] == budgets.resume_prompt(), "typed as the hooks type"
        assert page.evaluate("window.marker") == "no reload" and page.evaluate("window.pwned === undefined")
        page.close()
    finally:
        browser.close()
        code = web.stop()
    assert code == 0, web.proc.stderr.read() if web.proc.stderr else ""
    assert not any("fleet" in " ".join(p.cmdline()) and "web" in p.cmdline() for p in world.leftovers())
