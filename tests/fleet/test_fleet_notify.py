"""Pane status at a glance: @pane_notify per pane, @window_notify per window, on fleet sockets only.

A real tmux server per test (private ``TMUX_TMPDIR``, socket ``fleet-pytest-*``)
with three panes; :func:`claude_shepherd.supervisor.pane_notify.notify` is called with each pane's
``TMUX``/``TMUX_PANE``, as a hook running in that pane would be.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from support.tmux_panes import Tmux

from claude_shepherd.fleet.style import fleet_options
from claude_shepherd.hooks import turn_events
from claude_shepherd.supervisor import pane_notify as pn
from claude_shepherd.supervisor import tmux_names


def test_states_and_the_window_aggregate(tmux: Tmux) -> None:
    a, b, c = tmux.ids
    assert pn.notify("done", env=tmux.pane_env(a))
    assert (tmux.option(a, "@pane_notify"), tmux.option(a, "@window_notify")) == ("done", "done")
    assert pn.notify("working", env=tmux.pane_env(b))
    assert tmux.option(a, "@window_notify") == "working"
    assert pn.notify("needs-you", env=tmux.pane_env(c), context=0.42)
    assert (tmux.option(c, "@pane_notify"), tmux.option(c, "@pane_context")) == ("needs-you", "42")
    assert tmux.option(a, "@window_notify") == "needs-you"
    assert pn.notify("error", env=tmux.pane_env(a))
    assert tmux.option(b, "@window_notify") == "error"
    # The most urgent state falls back as panes move on.
    assert pn.notify("done", env=tmux.pane_env(a))
    assert tmux.option(a, "@window_notify") == "needs-you"
    assert pn.notify("done", env=tmux.pane_env(c))
    assert tmux.option(a, "@window_notify") == "working"
    # Another window is its own aggregate.
    other = tmux("display-message", "-p", "-t", "s:other", "#{pane_id}")
    assert tmux.option(other, "@window_notify") == ""


@pytest.mark.parametrize(
    ("others", "mine", "expected"),
    [
        (["done", "done"], "done", "done"),
        (["error", ""], "working", "error"),
        (["working", "needs-you"], "done", "needs-you"),
        (["done", ""], "working", "working"),
        (["error", "needs-you"], "working", "error"),
        (["bogus", "errors"], "done", "done"),  # only whole, known states count
    ],
)
def test_the_window_shows_its_most_urgent_pane(
    tmux: Tmux, others: list[str], mine: str, expected: str
) -> None:
    a, b, c = tmux.ids
    for pane, state in zip((b, c), others):
        tmux("set-option", "-p", "-t", pane, "@pane_notify", state)
    assert pn.notify(mine, env=tmux.pane_env(a))
    assert tmux.option(a, "@window_notify") == expected


def test_no_focus_change_and_repeats_are_throttled(tmux: Tmux) -> None:
    a, b, c = tmux.ids
    tmux("select-pane", "-t", b)
    before = tmux("list-panes", "-t", "s:w", "-F", "#{pane_id}:#{pane_active}")
    for pane in (a, c, a):
        pn.notify("needs-you", env=tmux.pane_env(pane))
    assert tmux("list-panes", "-t", "s:w", "-F", "#{pane_id}:#{pane_active}") == before, "R8: focus untouched"
    assert tmux("display-message", "-p", "-t", "s:", "#{window_name}") == "w"

    # A repeat within the throttle window does not even call tmux...
    tmux("set-option", "-p", "-t", a, "@pane_notify", "marker")
    assert pn.notify("needs-you", env=tmux.pane_env(a)) is False
    assert tmux.option(a, "@pane_notify") == "marker"
    # ...a different state does, and so does the same state once the window has passed.
    assert pn.notify("working", env=tmux.pane_env(a)) is True
    tmux("set-option", "-p", "-t", a, "@pane_notify", "marker")
    assert pn.notify("working", env=tmux.pane_env(a), now=__import__("time").time() + pn.THROTTLE_SECONDS + 1)
    assert tmux.option(a, "@pane_notify") == "working"


def test_only_fleet_sockets_are_touched(tmp_path: Path) -> None:
    """B10: an agent in the user's own tmux never marks a pane of any server."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    server = Tmux(f"notfleet-pytest-{uuid.uuid4().hex}")
    try:
        pane = server.ids[0]
        assert pn.notify("error", env=server.pane_env(pane)) is False
        assert server.option(pane, "@pane_notify") == ""
        assert pn.notify("error", env={}) is False
    finally:
        server.close()


def test_a_gone_pane_or_server_is_not_an_error(tmux: Tmux) -> None:
    a = tmux.ids[0]
    env = tmux.pane_env(a)
    tmux("kill-pane", "-t", a)
    assert pn.notify("done", env=env) is False
    assert pn.notify("done", env={"TMUX": "/tmp/nowhere/fleet-x,1,0", "TMUX_PANE": "%1"}) is False


def test_the_command_line_form(tmux: Tmux) -> None:
    a = tmux.ids[0]
    env = {**os.environ, **tmux.pane_env(a)}
    done = subprocess.run(
        [sys.executable, "-m", "claude_shepherd.supervisor.pane_notify", "error", "0.8"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert (tmux.option(a, "@pane_notify"), tmux.option(a, "@pane_context")) == ("error", "80")
    bad = subprocess.run(
        [sys.executable, "-m", "claude_shepherd.supervisor.pane_notify", "unchecked"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and bad.stderr.startswith(
        "usage: python -m claude_shepherd.supervisor.pane_notify {error|needs-you|limited|working|done}"
    )
    with pytest.raises(ValueError, match="unknown pane state 'bogus'"):
        pn.notify("bogus", env=tmux.pane_env(a))


def test_border_and_tab_show_label_state_and_context(tmux: Tmux) -> None:
    for scope, name, value in fleet_options():
        tmux("set-option", scope, name, value)
    a, b, _ = tmux.ids
    tmux("set-option", "-p", "-t", a, "@pane_label", "SDK")
    pn.notify("needs-you", env=tmux.pane_env(a), context=0.81)
    pn.notify("working", env=tmux.pane_env(b))
    border = tmux("display-message", "-p", "-t", a, "#{E:pane-border-format}")
    assert "SDK" in border and "● needs-you" in border and "ctx " in border and "81%" in border
    assert f"fg={tmux_names.COLOURS['needs-you']}" in border and "fg=colour208" in border, (
        "state colour, context warning"
    )
    unlabelled = tmux("display-message", "-p", "-t", b, "#{E:pane-border-format}")
    assert "● working" in unlabelled and "ctx" not in unlabelled
    tab = tmux("display-message", "-p", "-t", a, "#{E:window-status-format}")
    assert "w needs-you" in tab and f"bg={tmux_names.COLOURS['needs-you']}" in tab
    assert tmux("show-options", "-gwv", "remain-on-exit") == "on"


def test_claude_hook_events_mark_the_pane(tmux: Tmux, project: Path) -> None:
    """The wiring: prompt submitted / tools running -> working, overflow deny -> error,
    Notification -> needs-you, Stop -> done, the status line -> context %."""
    from support.hooks import activate, call, hook_env, tool

    a, b, c = tmux.ids
    env = {pane: hook_env(project, **tmux.pane_env(pane)) for pane in (a, b, c)}
    session = activate(project, contextUsage=0.2)
    call("user-prompt-submit", {"prompt": "go", "cwd": str(project)}, env[a])
    assert tmux.option(a, "@pane_notify") == "working"
    call("status-line", {"cwd": str(project), "context_window": {"used_percentage": 42}}, env[a])
    assert tmux.option(a, "@pane_context") == "42"

    call("pre-tool-use", tool(project, "Grep", pattern="x"), env[b])
    assert tmux.option(b, "@pane_notify") == "working"
    call(
        "notification",
        {"notification_type": "permission_prompt", "message": "Claude needs your permission"},
        env[b],
    )
    assert tmux.option(b, "@pane_notify") == "needs-you"

    call("stop", {"hook_event_name": "Stop", "stop_hook_active": False}, env[c])
    assert tmux.option(c, "@pane_notify") == "done"
    assert tmux.option(c, "@window_notify") == "needs-you"

    from support.hooks import set_fields

    set_fields(session, contextUsage=0.9)
    answer = call("pre-tool-use", tool(project, "Grep", pattern="x"), env[a])
    assert answer.denied and "Context overflow" in answer.reason
    assert tmux.option(a, "@pane_notify") == "error"
    assert tmux.option(a, "@window_notify") == "error"


@pytest.mark.parametrize(
    ("payload", "state"),
    [
        (b'{"notification_type": "permission_prompt"}', "needs-you"),
        (b'{"notification_type": "elicitation_dialog"}', "needs-you"),
        (b'{"message": "Claude is waiting for your input"}', "needs-you"),
        (b'{"notification_type": "idle_prompt"}', "done"),
        (b'{"notification_type": "auth_success"}', None),
        (b"not json", "needs-you"),
    ],
)
def test_notification_kinds(payload: bytes, state: str | None) -> None:
    assert turn_events.notification_state(payload) == state


def test_cost_is_published_with_the_context_and_garbage_is_not(tmux: Tmux) -> None:
    a, b, _ = tmux.ids
    assert pn.notify(None, cost=0.5, env=tmux.pane_env(a))
    assert (tmux.option(a, "@pane_cost"), tmux.option(a, "@pane_context")) == ("0.50", "")
    assert pn.notify(None, cost=2.345, context=0.3, env=tmux.pane_env(a))
    assert (tmux.option(a, "@pane_cost"), tmux.option(a, "@pane_context")) == ("2.35", "30")
    assert pn.notify(None, cost=2.345, context=0.3, env=tmux.pane_env(a)) is False, (
        "the same meters: throttled"
    )
    for garbage in (-1.0, float("nan"), float("inf"), True, "3"):
        assert pn.notify(None, cost=garbage, env=tmux.pane_env(b)) is False  # type: ignore[arg-type]
    assert tmux.option(b, "@pane_cost") == ""
