"""Layouts: tmuxinator YAML in, a validated Layout out, and one line for every bad file.

A table of tmuxinator fixtures (the forms we honour), a table of files we
refuse or cannot read (each error names the file, the line and the key), the
pane script each pane runs, and the layout lookup.
"""

from __future__ import annotations

import typing as t
from pathlib import Path

import pytest

from claude_shepherd.fleet.layout import (
    REFUSED_KEYS,
    Layout,
    LayoutError,
    load_layout,
    pane_script,
    parse_layout,
)
from claude_shepherd.fleet.lookup import find_layout

FIXTURES = Path(__file__).parents[1] / "fixtures" / "tmuxinator"
EXAMPLES = Path(__file__).parents[2] / "tmuxinator"


def parse(text: str, tmp_path: Path, name: str = "f.yml") -> Layout:
    return parse_layout(text, tmp_path / name, cwd=tmp_path)


def panes(layout: Layout, window: int = 0) -> list[tuple[str | None, tuple[str, ...]]]:
    return [(p.label, p.commands) for p in layout.windows[window].panes]


# --------------------------------------------------------------------------- fixtures


def test_grid_fixture_every_pane_form(tmp_path: Path) -> None:
    layout = load_layout(FIXTURES / "grid.yml", cwd=tmp_path)
    assert layout.name == "grid" and layout.socket_name == "fleet-grid"
    assert layout.root == Path("~/work").expanduser()
    assert layout.on_project_start == ("echo starting",) and layout.pre_window == ("export FLEET=1",)
    assert layout.startup_window == "agents"
    assert [w.name for w in layout.windows] == ["agents", "logs", "shell"]
    assert layout.windows[0].layout == "tiled"
    assert panes(layout) == [
        ("SDK", ("claude-run --agent sdk",)),
        ("API", ("export FOCUS=api", "claude-run --agent api")),
        (None, ("claude-run --agent pool",)),
        (None, ()),
    ]
    assert panes(layout, 1) == [(None, ("tail -f log.txt",))]
    assert panes(layout, 2) == [(None, ())]
    assert [p.runs_agent for p in layout.windows[0].panes] == [True, True, True, False]
    assert layout.pane_ids() == ["grid:agents:SDK", "grid:agents:API"]
    assert [p.line for p in layout.windows[0].panes] == [13, 14, 17, 18]


def test_bash_era_fixture_labels_set_by_the_panes_own_commands(tmp_path: Path) -> None:
    (tmp_path / "tmux.conf").write_text("")
    layout = load_layout(FIXTURES / "bash_era.yml", cwd=tmp_path)
    assert layout.socket_name == "fleet" and layout.config_file == tmp_path / "tmux.conf"
    sdk, future = layout.windows[0].panes
    assert (sdk.label, sdk.label_from_command) == ("SDK", True), "the command's label is the identity"
    assert (future.label, future.label_from_command) == ("Future", True)
    assert sdk.runs_agent and future.runs_agent


@pytest.mark.parametrize("example", sorted(EXAMPLES.glob("*.yml")), ids=lambda p: p.name)
def test_shipped_examples_load_and_run_labelled_agents(example: Path, tmp_path: Path) -> None:
    layout = load_layout(example, cwd=tmp_path)
    agents = [p for w in layout.windows for p in w.panes]
    assert agents and all(p.label and p.runs_agent for p in agents)


class Case(t.NamedTuple):
    yaml: str
    check: t.Callable[[Layout], t.Any]


ACCEPTED = {
    "window-as-command": Case(
        "name: x\nwindows:\n  - w: claude-run\n", lambda ln: panes(ln) == [(None, ("claude-run",))]
    ),
    "window-as-list-is-one-pane": Case(
        "name: x\nwindows:\n  - w: [a, b]\n", lambda ln: panes(ln) == [(None, ("a", "b"))]
    ),
    "window-empty-is-a-shell": Case("name: x\nwindows:\n  - w:\n", lambda ln: panes(ln) == [(None, ())]),
    "window-mapping-without-panes": Case(
        "name: x\nwindows:\n  - w:\n      root: /tmp\n", lambda ln: panes(ln) == [(None, ())]
    ),
    "socket-from-tmux-command": Case(
        "name: x\ntmux_command: tmux -L fleet-a\nwindows:\n  - w: c\n", lambda ln: ln.socket_name == "fleet-a"
    ),
    "socket-from-tmux-options": Case(
        "name: x\ntmux_options: -2 -L fleet-b\nwindows:\n  - w: c\n",
        lambda ln: (ln.socket_name, ln.colors) == ("fleet-b", 256),
    ),
    "custom-tmux-binary": Case(
        "name: x\ntmux_command: /opt/tmux/bin/tmux -u\nwindows:\n  - w: c\n",
        lambda ln: ln.tmux_bin == "/opt/tmux/bin/tmux",
    ),
    "default-socket-and-name": Case(
        "windows:\n  - w: c\n", lambda ln: (ln.socket_name, ln.name) == ("fleet", "f")
    ),
    "numeric-window-name-and-name": Case(
        "name: 2026\nwindows:\n  - 1: c\n", lambda ln: (ln.name, ln.windows[0].name) == ("2026", "1")
    ),
    "window-root-relative-to-project-root": Case(
        "name: x\nroot: /srv\nwindows:\n  - w:\n      root: api\n      panes: [c]\n",
        lambda ln: ln.windows[0].root == Path("/srv/api"),
    ),
    "window-pre": Case(
        "name: x\nwindows:\n  - w:\n      pre: export A=1\n      panes: [c]\n",
        lambda ln: ln.windows[0].pre == ("export A=1",),
    ),
    "same-label-in-two-windows": Case(
        "name: x\nwindows:\n  - a:\n      panes: [{A: c}]\n  - b:\n      panes: [{A: c}]\n",
        lambda ln: ln.pane_ids() == ["x:a:A", "x:b:A"],
    ),
    "attach-false": Case("name: x\nattach: false\nwindows:\n  - w: c\n", lambda ln: ln.attach is False),
    "notify-command-and-states": Case(
        'name: x\nnotify: [notify-send, "{fleet}", "{label}: {state}"]\nnotify_on: [needs-you, done]\nwindows:\n  - w: c\n',
        lambda ln: (
            (ln.notify_command, ln.notify_on, ln.notify_tmux)
            == (("notify-send", "{fleet}", "{label}: {state}"), ("needs-you", "done"), True)
        ),
    ),
    "notify-defaults": Case(
        "name: x\nwindows:\n  - w: c\n",
        lambda ln: (
            (ln.notify_command, ln.notify_on, ln.notify_tmux)
            == (None, ("needs-you", "error", "exited", "paused"), True)
        ),
    ),
    "notify-false-silences": Case(
        "name: x\nnotify: false\nwindows:\n  - w: c\n",
        lambda ln: (ln.notify_command, ln.notify_tmux) == (None, False),
    ),
    "custom-layout-string": Case(
        "name: x\nwindows:\n  - w:\n      layout: 5e3c,200x50,0,0\n      panes: [a, b]\n",
        lambda ln: ln.windows[0].layout == "5e3c,200x50,0,0",
    ),
}


@pytest.mark.parametrize("case", ACCEPTED.values(), ids=list(ACCEPTED))
def test_accepted_forms(case: Case, tmp_path: Path) -> None:
    assert case.check(parse(case.yaml, tmp_path))


# --------------------------------------------------------------------------- refused and broken


class Bad(t.NamedTuple):
    yaml: str
    error: str  # the exact one line after "<file>"


REJECTED = {
    "yaml-syntax": Bad(
        "name: x\nwindows:\n  - a: [x\n",
        ":3:8: YAML syntax: this [ is never closed; close it, or put the value in quotes",
    ),
    "yaml-indentation": Bad(
        "name: x\nwindows:\n  - a:\n     panes:\n    - b\n",
        ":5:5: YAML syntax: this line is indented differently from the lines it belongs with; "
        "line it up with them (the '- ' of one list in one column, the keys of one mapping in "
        "one column)",
    ),
    "yaml-indented-key": Bad(
        "name: x\n root: /p\nwindows:\n  - a: c\n",
        ":2:6: YAML syntax: a 'key: value' where none can start; indent this line like the keys "
        "it belongs with, or quote a value that contains ': '",
    ),
    "yaml-tab": Bad(
        "name: x\nwindows:\n\t- a: c\n",
        ":3:1: YAML syntax: a tab indents this line; YAML indents with spaces only",
    ),
    "yaml-unclosed-quote": Bad(
        'name: "x\nwindows:\n  - a: c\n',
        ":1:7: YAML syntax: this quote is never closed; close it on the same value or remove it",
    ),
    "empty-file": Bad("", ": the file is empty; a layout needs name: and windows:"),
    "not-a-mapping": Bad("- a\n", ":1: a layout is a YAML mapping (name:, windows:, ...), got a list"),
    "no-windows": Bad("name: x\n", ":1: windows is missing; a layout needs at least one window"),
    "unknown-key": Bad(
        "name: x\nwindws: []\n",
        ":2: windws: unknown key 'windws' (did you mean 'windows'? fleet honours: name, root, "
        "socket_name, tmux_command, tmux_options, on_project_start, pre_window, startup_window, "
        "startup_pane, attach, windows, notify, notify_on, budget)",
    ),
    "notify-as-a-string": Bad(
        "name: x\nnotify: notify-send hi\nwindows:\n  - w: c\n",
        ':2: notify: is a list of arguments, e.g. ["notify-send", "{{fleet}}", "{{label}}: {{state}}"] (never run '
        "by a shell), or false; got a string",
    ),
    "notify-on-unknown-state": Bad(
        "name: x\nnotify_on: [working]\nwindows:\n  - w: c\n",
        ":2: notify_on: lists states that alert, of needs-you, error, exited, done, paused; got ['working']",
    ),
    "refused-on-project-stop": Bad(
        "name: x\non_project_stop: x\nwindows:\n  - w: c\n",
        ":2: on_project_stop: key 'on_project_stop' is not supported: `fleet stop` ends the agents itself; "
        "wrap it in a script instead",
    ),
    "refused-socket-path": Bad(
        "name: x\nsocket_path: /tmp/s\nwindows:\n  - w: c\n",
        f":2: socket_path: key 'socket_path' is not supported: {REFUSED_KEYS['socket_path']}",
    ),
    "refused-dash-S": Bad(
        "name: x\ntmux_command: tmux -S /tmp/s\nwindows:\n  - w: c\n",
        f":2: tmux_command: key '-S' is not supported: {REFUSED_KEYS['socket_path']}",
    ),
    "refused-synchronize": Bad(
        "name: x\nwindows:\n  - w:\n      synchronize: true\n      panes: [c]\n",
        ":4: windows[0].w.synchronize: key 'synchronize' is not supported: would type the same keystrokes "
        "into every agent of the window",
    ),
    "refused-pane-titles": Bad(
        "name: x\nenable_pane_titles: true\nwindows:\n  - w: c\n",
        ":2: enable_pane_titles: key 'enable_pane_titles' is not supported: fleet draws every pane border "
        "itself (label, state, context %)",
    ),
    "refused-erb": Bad(
        "name: <%= ENV['X'] %>\nwindows:\n  - w: c\n",
        ":1: ERB templates (<% ... %>) are not supported; write the values out",
    ),
    "not-a-fleet-socket": Bad(
        "name: x\nsocket_name: work\nwindows:\n  - w: c\n",
        ":2: socket_name: socket 'work' is not a fleet socket; name it fleet or fleet-SOMETHING "
        "(hooks and pane ids act only on fleet sockets)",
    ),
    "two-sockets": Bad(
        "name: x\nsocket_name: fleet-a\ntmux_command: tmux -L fleet-b\nwindows:\n  - w: c\n",
        ":3: tmux_command: two different sockets are named: fleet-b, fleet-a",
    ),
    "not-tmux": Bad(
        "name: x\ntmux_command: wemux\nwindows:\n  - w: c\n",
        ":2: tmux_command: runs 'wemux'; the fleet drives tmux itself (use tmux -L NAME -f FILE)",
    ),
    "unknown-tmux-flag": Bad(
        "name: x\ntmux_options: -v\nwindows:\n  - w: c\n",
        ":2: tmux_options: option '-v' is not supported (fleet passes only -L, -f, -2, -u to tmux)",
    ),
    "missing-config": Bad(
        "name: x\ntmux_options: -f nope.conf\nwindows:\n  - w: c\n",
        ":2: tmux_options: tmux config file {tmp}/nope.conf does not exist",
    ),
    "duplicate-label": Bad(
        "name: x\nwindows:\n  - w:\n      panes:\n        - A: c\n        - A: d\n",
        ":6: windows[0].w.panes[1]: label 'A' is used twice in window 'w' (panes 1 and 2); "
        "each pane needs its own identity",
    ),
    "duplicate-self-set-label": Bad(
        "name: x\nwindows:\n  - w:\n      panes:\n        - A: c\n        - tmux set-option -p @pane_label A\n",
        ":6: windows[0].w.panes[1]: label 'A' is used twice in window 'w' (panes 1 and 2); "
        "each pane needs its own identity",
    ),
    "duplicate-window": Bad(
        "name: x\nwindows:\n  - w: c\n  - w: d\n",
        ":4: windows[1].w: window 'w' appears twice; window names are part of each pane's identity",
    ),
    "window-two-keys": Bad(
        "name: x\nwindows:\n  - w: c\n    layout: tiled\n",
        ":3: windows[0]: a window is one `- NAME: ...` entry, got 2 keys (w, layout); "
        "indent the window's settings under its name",
    ),
    "window-not-a-mapping": Bad(
        "name: x\nwindows:\n  - w: c\n  - oops\n",
        ":4: windows[1]: a window is one `- NAME: ...` entry, got str 'oops'",
    ),
    "pane-two-keys": Bad(
        "name: x\nwindows:\n  - w:\n      panes:\n        - A: c\n          B: d\n",
        ":5: windows[0].w.panes[0]: a labelled pane is one `LABEL: COMMAND` entry, got 2 keys (A, B)",
    ),
    "budget-on-unlabelled-pane": Bad(
        "name: x\nwindows:\n  - w:\n      panes:\n        - budget: 2\n          commands: c\n",
        ":5: windows[0].w.panes[0]: a pane's budget needs a label: write `- LABEL: {{budget: 2, commands: c}}`",
    ),
    "pane-nested-mapping": Bad(
        "name: x\nwindows:\n  - w:\n      panes:\n        - A: {b: c}\n",
        ":5: windows[0].w.panes[0].b: unknown pane key 'b' (a labelled pane takes commands, budget, worktree)",
    ),
    "budget-text": Bad(
        "name: x\nbudget: five\nwindows: [w]\n",
        ":2: budget: is USD as a number (budget: 5) or {{usd: 5, per: life|day|week}}, more than 0 and at "
        "most 1,000,000; got 'five'",
    ),
    "budget-zero": Bad(
        "name: x\nwindows:\n  - w:\n      budget: 0\n      panes: [c]\n",
        ":4: windows[0].w.budget: is USD as a number (budget: 5) or {{usd: 5, per: life|day|week}}, more than 0 "
        "and at most 1,000,000; got 0",
    ),
    "budget-period": Bad(
        "name: x\nwindows:\n  - w:\n      panes:\n        - A: {budget: {usd: 1, per: month}}\n",
        ":5: windows[0].w.panes[0].budget: per is one of life, day, week; got 'month'",
    ),
    "budget-keys": Bad(
        "name: x\nbudget: {dollars: 3}\nwindows: [w]\n",
        ":2: budget: is USD as a number (budget: 5) or {{usd: 5, per: life|day|week}}; got {{'dollars': 3}}",
    ),
    "pane-boolean": Bad(
        "name: x\nwindows:\n  - w:\n      panes: [yes]\n",
        ":4: windows[0].w.panes[0]: pane: got true, a YAML boolean; quote it if it is a command",
    ),
    "unknown-window-key": Bad(
        "name: x\nwindows:\n  - w:\n      pane: [c]\n",
        ":4: windows[0].w.pane: unknown window key 'pane' (did you mean 'panes'? a window takes layout, root, pre, panes, host, budget, worktree)",
    ),
    "empty-panes": Bad(
        "name: x\nwindows:\n  - w:\n      panes: []\n",
        ":3: windows[0].w: panes is empty; give at least one pane",
    ),
    "bad-layout": Bad(
        "name: x\nwindows:\n  - w:\n      layout: grid\n      panes: [c]\n",
        ":4: windows[0].w.layout: layout 'grid' is not a tmux layout (even-horizontal, even-vertical, "
        "main-horizontal, main-vertical, tiled, or a layout string from `tmux list-windows`)",
    ),
    "session-name-with-dot": Bad(
        "name: a.b\nwindows:\n  - w: c\n",
        ":1: name: name 'a.b' is the tmux session name and may not contain ':' or '.'",
    ),
    "startup-window-unknown": Bad(
        "name: x\nstartup_window: z\nwindows:\n  - w: c\n", ":2: startup_window: names no window (windows: w)"
    ),
    "attach-not-boolean": Bad(
        "name: x\nattach: maybe\nwindows:\n  - w: c\n",
        ":2: attach: Input should be a valid boolean, unable to interpret input",
    ),
}


@pytest.mark.parametrize("case", REJECTED.values(), ids=list(REJECTED))
def test_rejected_files_give_one_line_with_file_line_and_key(case: Bad, tmp_path: Path) -> None:
    with pytest.raises(LayoutError) as info:
        parse(case.yaml, tmp_path)
    message = str(info.value)
    assert "\n" not in message
    assert message == f"{tmp_path / 'f.yml'}{case.error.format(tmp=tmp_path)}"


def test_every_refused_key_is_refused_with_its_reason(tmp_path: Path) -> None:
    for key, reason in REFUSED_KEYS.items():
        with pytest.raises(LayoutError, match=f":2: {key}: key '{key}' is not supported: "):
            parse(f"name: x\n{key}: v\nwindows:\n  - w: c\n", tmp_path)
        assert reason


# --------------------------------------------------------------------------- what a pane runs


@pytest.mark.parametrize(
    ("commands", "script"),
    [
        (["claude-run --agent a"], "export P=1\nexec claude-run --agent a"),
        (["cd api", "claude-run"], "export P=1\ncd api\nexec claude-run"),
        (["clear && claude-run"], "export P=1\nclear && claude-run"),  # not a simple command: no exec
        (["A=1 claude-run"], "export P=1\nA=1 claude-run"),  # `exec A=1 x` would fail in sh
        (["exec claude-run"], "export P=1\nexec claude-run"),
        ([], 'export P=1\nexec "${SHELL:-/bin/sh}"'),
    ],
)
def test_pane_script_execs_the_last_simple_command(commands: list[str], script: str, tmp_path: Path) -> None:
    import json

    yaml = (
        f"name: x\npre_window: export P=1\nwindows:\n  - w:\n      panes:\n        - {json.dumps(commands)}\n"
    )
    layout = parse(yaml, tmp_path)
    window = layout.windows[0]
    assert pane_script(layout, window, window.panes[0]) == script


def test_a_pane_without_commands_or_pre_is_a_plain_shell(tmp_path: Path) -> None:
    layout = parse("name: x\nwindows:\n  - w:\n", tmp_path)
    assert pane_script(layout, layout.windows[0], layout.windows[0].panes[0]) is None


# --------------------------------------------------------------------------- lookup


def test_lookup_path_then_user_dirs_then_project(tmp_path: Path) -> None:
    """The person's own folders come first; a name also in the project's folder (where an agent may
    have put it) is refused, naming both."""
    home, proj = tmp_path / "home", tmp_path / "proj"
    for directory in (proj / "tmuxinator", home / ".config" / "tmuxinator", home / ".tmuxinator"):
        directory.mkdir(parents=True)
    env = {"HOME": str(home)}
    (home / ".tmuxinator" / "a.yml").write_text("x")
    (home / ".config" / "tmuxinator" / "a.yml").write_text("x")
    (home / ".tmuxinator" / "b.yaml").write_text("x")
    (proj / "tmuxinator" / "a.yml").write_text("x")
    (proj / "tmuxinator" / "c.yml").write_text("x")
    with pytest.raises(LayoutError) as info:
        find_layout("a", proj, env)
    assert str(info.value) == (
        "layout 'a' is both ~/.config/tmuxinator/a.yml and ./tmuxinator/a.yml; "
        "name the file you mean (fleet start ~/.config/tmuxinator/a.yml)"
    )
    assert find_layout("b", proj, env) == home / ".tmuxinator" / "b.yaml"
    assert find_layout("c", proj, env) == proj / "tmuxinator" / "c.yml"
    assert find_layout("./tmuxinator/a.yml", proj, env) == proj / "tmuxinator" / "a.yml"
    (proj / "tmuxinator" / "a.yml").unlink()
    assert find_layout("a", proj, env) == home / ".config" / "tmuxinator" / "a.yml"
    assert find_layout("./tmuxinator/../../home/.tmuxinator/a.yml", proj, env).is_file()
    (proj / "fleet.yml").write_text("x")
    assert find_layout(None, proj, {**env, "FLEET_LAYOUT": "b"}) == home / ".tmuxinator" / "b.yaml"


def test_lookup_of_an_unknown_name_lists_where_it_looked_and_what_exists(tmp_path: Path) -> None:
    (tmp_path / "tmuxinator").mkdir()
    (tmp_path / "tmuxinator" / "grid.yml").write_text("x")
    env = {"HOME": str(tmp_path / "home")}
    with pytest.raises(LayoutError) as info:
        find_layout("nope", tmp_path, env)
    assert str(info.value) == (
        "no layout named 'nope' in ~/.config/tmuxinator, ~/.tmuxinator, ./tmuxinator; available: grid"
    )
    with pytest.raises(LayoutError, match=r"^nope\.yml: no such layout file$"):
        find_layout("nope.yml", tmp_path, env)
