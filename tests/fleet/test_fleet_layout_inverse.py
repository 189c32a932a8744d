"""A layout written back: ``to_document(layout)`` and ``layout.part(host)`` read back to the same layout.

Whole models are compared, every field, so a key the parser learns and the writer does not fails here;
the layouts below set every key the parser honours (checked against HONOURED_KEYS and WINDOW_KEYS), in
every form. Documents go through JSON, as each host's part does on its way there.
"""

from __future__ import annotations

import dataclasses
import json
import typing as t
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.every_layout import EVERY_KEY, LAYOUTS, WORKTREES

from claude_shepherd.fleet.hosts import part as pt
from claude_shepherd.fleet.layout import (
    HONOURED_KEYS,
    PROVENANCE,
    WINDOW_KEYS,
    Layout,
    LayoutError,
    parse_layout,
    to_document,
)
from claude_shepherd.supervisor.tmux_names import ALERT_STATES

FIXTURES = Path(__file__).parents[1] / "fixtures" / "tmuxinator"
EXAMPLES = Path(__file__).parents[2] / "tmuxinator"


def parse(text: str, tmp_path: Path, source: str = "every.yml") -> Layout:
    (tmp_path / "tmux.conf").touch()
    return parse_layout(text, tmp_path / source, cwd=tmp_path)


def sent(document: dict[str, t.Any], tmp_path: Path) -> Layout:
    """*document* read back as the receiving ``fleet`` reads it: JSON, as ``LAYOUT -``."""
    return parse_layout(json.dumps(document), Path("<stdin>"), cwd=tmp_path)


M = t.TypeVar("M")


def unsourced(model: M) -> M:
    """*model* with :data:`PROVENANCE` (where it was read from: file and lines) blanked, at every depth."""
    names = [field.name for field in dataclasses.fields(model)]  # type: ignore[arg-type]
    update: dict[str, t.Any] = {name: None for name in PROVENANCE if name in names}
    for name in names:
        value = getattr(model, name)
        if isinstance(value, tuple) and value and all(dataclasses.is_dataclass(v) for v in value):
            update[name] = tuple(unsourced(v) for v in value)
    return dataclasses.replace(model, **update)  # type: ignore[type-var]


def test_the_layouts_here_set_every_key_the_parser_honours() -> None:
    """The point of this file: a key added to the parser must be added here, where losing it fails."""
    top: set[str] = set()
    window_keys: set[str] = set()
    for text in LAYOUTS.values():
        data = yaml.safe_load(text)
        top |= set(data)
        for item in data["windows"]:
            (body,) = item.values()
            window_keys |= set(body) if isinstance(body, dict) else set()
    assert top == set(HONOURED_KEYS) and window_keys == set(WINDOW_KEYS)


def test_every_key_is_written_back(tmp_path: Path) -> None:
    document = to_document(parse(EVERY_KEY, tmp_path))
    assert set(document) == set(HONOURED_KEYS)
    written = {key for item in document["windows"] for body in item.values() for key in body}
    assert written == set(WINDOW_KEYS)


@pytest.mark.parametrize("text", LAYOUTS.values(), ids=list(LAYOUTS))
def test_a_whole_layout_reads_back_from_its_document(tmp_path: Path, text: str) -> None:
    layout = parse(text, tmp_path)
    again = sent(to_document(layout), tmp_path)
    assert unsourced(again) == unsourced(layout)
    assert to_document(again) == to_document(layout)


@pytest.mark.parametrize("text", LAYOUTS.values(), ids=list(LAYOUTS))
def test_each_hosts_part_reads_back_as_that_hosts_windows_of_the_layout(tmp_path: Path, text: str) -> None:
    layout = parse(text, tmp_path)
    assert layout.hosts == (None, "dev@buildbox:2222", "[::1]:22")
    for host in layout.hosts:
        check_part(layout, host, tmp_path)


def check_part(layout: Layout, host: str | None, cwd: Path) -> None:
    """What *host*'s part reads back as, against *layout*, every difference named."""
    part = sent(pt.part_document(layout, host), cwd)
    assert to_document(part) == to_document(layout.part(host))
    here = host is None
    # This machine's part carries absolute roots; another host's the roots as written, resolved there.
    windows = tuple(
        dataclasses.replace(w, host=None, root_text=str(w.root) if here else w.root_text)
        for w in layout.windows
        if w.host == host
    )
    assert unsourced(part).windows == tuple(unsourced(w) for w in windows)
    # It opens on the layout's startup window and pane when they are here; a part is never attached.
    opens_here = layout.startup.host == host
    assert (part.startup.name, part.startup_pane) == (
        (layout.startup.name, layout.startup_pane) if opens_here else (windows[0].name, None)
    )
    same = {
        "budget": layout.budget_share(host),
        "windows": windows,
        "attach": False,
        "startup_window": part.startup_window,
        "startup_pane": part.startup_pane,
        "root_text": str(layout.root) if here else layout.root_text,
    }
    if not here:  # what only this machine has, or runs where the person is (the notify command)
        same |= {"config_file": None, "tmux_bin": None, "on_project_start": (), "notify_command": None}
    assert unsourced(part) == unsourced(dataclasses.replace(layout, **same))
    assert not part.spans_hosts


def test_the_hosts_shares_of_a_fleet_budget_add_up_to_it(tmp_path: Path) -> None:
    """No host sees another's ledgers: each holds a share of the fleet's budget by its labelled panes."""
    layout = parse(EVERY_KEY, tmp_path)
    shares = {host: layout.budget_share(host) for host in layout.hosts}
    assert layout.budget is not None and all(s is not None and s.per == "life" for s in shares.values())
    assert sum(s.usd for s in shares.values() if s) == pytest.approx(layout.budget.usd)
    assert shares["[::1]:22"] == type(layout.budget)(usd=2.5, per="life"), "one of ten labelled panes"


def shipped_layouts() -> list[Path]:
    return sorted([*FIXTURES.glob("*.yml"), *EXAMPLES.glob("*.yml")])


@pytest.mark.parametrize("path", shipped_layouts(), ids=lambda p: p.name)
def test_every_shipped_layout_reads_back_and_so_do_its_parts(tmp_path: Path, path: Path) -> None:
    (tmp_path / "tmux.conf").touch()
    try:
        layout = parse_layout(path.read_text(encoding="utf-8"), path, cwd=tmp_path)
    except LayoutError:
        pytest.skip("a layout the parser refuses, on purpose")
    assert unsourced(sent(to_document(layout), tmp_path)) == unsourced(layout)
    for host in layout.hosts:
        check_part(layout, host, tmp_path)


# --------------------------------------------------------------------------- any layout


def names(forbidden: str = "") -> st.SearchStrategy[str]:
    """Names as a person may write them: any characters (emoji too) but tab, newline, the unit separator
    and ``<%`` (an ERB template, refused); short, as a YAML key must be under 1024 characters."""
    return st.text(
        st.characters(blacklist_characters="\t\n\r\x1f" + forbidden, blacklist_categories=("Cs",)),
        min_size=1,
        max_size=12,
    ).filter(lambda s: bool(s.strip()) and "<%" not in s)


commands = st.lists(names(), max_size=3)


@st.composite
def documents(draw: st.DrawFn) -> dict[str, t.Any]:
    """A layout document that sets any subset of the keys, in any of their forms."""
    window_names = draw(st.lists(names(), min_size=1, max_size=4, unique=True))
    windows = []
    for window in window_names:
        labels = draw(st.lists(names(), max_size=3, unique=True))
        panes: list[t.Any] = [{label: draw(commands | st.none())} for label in labels]
        panes += draw(st.lists(commands | names() | st.none(), max_size=2))
        body: dict[str, t.Any] = {"panes": draw(st.permutations(panes))} if panes else {}
        for key, values in (
            ("layout", st.sampled_from(["tiled", "even-horizontal", "main-vertical"])),
            ("root", names()),
            ("pre", commands),
            ("host", st.sampled_from(["dev@box", "box:2222", "[::1]"])),
            ("worktree", st.sampled_from([False, "wt"])),
        ):
            if draw(st.booleans()):
                body[key] = draw(values)
        windows.append({window: body or None})
    doc: dict[str, t.Any] = {"windows": windows}
    optional: dict[str, st.SearchStrategy[t.Any]] = {
        "name": names(":."),
        "root": names(),
        "socket_name": st.sampled_from(["fleet", "fleet-x"]),
        "tmux_command": st.sampled_from(["tmux", "tmux-next -2", "'/opt/a b/tmux' -8"]),
        "tmux_options": st.sampled_from(["-2", "-f tmux.conf", "-u -8", "-L fleet-x"]),
        "on_project_start": commands,
        "pre_window": commands | names(),
        "startup_window": st.sampled_from(window_names)
        | st.sampled_from([str(i) for i in range(len(windows))]),
        "startup_pane": st.integers(0, 3),
        "attach": st.booleans(),
        "notify": st.just(False) | st.lists(names(), min_size=1, max_size=3),
        "notify_on": st.lists(st.sampled_from(ALERT_STATES), max_size=3),
    }
    for key, values in optional.items():
        if draw(st.booleans()):
            doc[key] = draw(values)
    if doc.get("socket_name") == "fleet" and "-L" in doc.get("tmux_options", ""):
        del doc["socket_name"]  # two different sockets are refused
    return doc


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=documents())
def test_any_layout_reads_back_and_so_do_its_parts(tmp_path: Path, document: dict[str, t.Any]) -> None:
    (tmp_path / "tmux.conf").touch()
    layout = parse_layout(json.dumps(document), tmp_path / "any.yml", cwd=tmp_path)
    assert unsourced(sent(to_document(layout), tmp_path)) == unsourced(layout)
    for host in layout.hosts:
        check_part(layout, host, tmp_path)


# --------------------------------------------------------------------------- what a part used to lose


def test_a_part_opens_on_the_layouts_startup_window_and_pane(tmp_path: Path) -> None:
    layout = parse(EVERY_KEY, tmp_path)
    here = pt.part_document(layout, None)
    assert (here.get("startup_window"), here.get("startup_pane")) == ("api", 1)
    assert "startup_pane" not in pt.part_document(layout, "dev@buildbox:2222"), "it opens elsewhere"
    # By index: the index counts the layout's windows, not the part's; the part names the window.
    by_index = parse(EVERY_KEY.replace("startup_window: api", "startup_window: '6'"), tmp_path)
    there = pt.part_document(by_index, "dev@buildbox:2222")
    assert (there.get("startup_window"), there.get("startup_pane")) == ("remote-two", 1)
    assert "startup_window" not in pt.part_document(by_index, None)


def test_a_tmux_program_with_a_space_reaches_the_part_whole(tmp_path: Path) -> None:
    layout = parse(EVERY_KEY, tmp_path)
    assert layout.tmux_bin == "/opt/my tmux/tmux-3.4"
    assert sent(pt.part_document(layout, None), tmp_path).tmux_bin == "/opt/my tmux/tmux-3.4"


def test_a_character_beyond_the_basic_plane_survives_json_and_half_of_one_is_refused(tmp_path: Path) -> None:
    layout = parse(EVERY_KEY, tmp_path)
    (gpu,) = sent(pt.part_document(layout, "[::1]:22"), tmp_path).windows
    assert gpu.panes[0].commands == ('claude-run 🤖 --description "Owns ✓"',), (
        "json.dumps wrote \\ud83e\\udd16"
    )
    with pytest.raises(LayoutError) as info:
        parse('name: x\nwindows:\n  - w:\n      panes: ["\\ud83e run"]\n', tmp_path)
    assert str(info.value) == (
        f"{tmp_path / 'every.yml'}:4: windows[0].w.panes[0]: a \\u escape here is half a character "
        "(a lone UTF-16 surrogate); escape both halves, or write the character itself"
    )


def test_a_root_under_a_user_only_another_host_has_is_sent_there_as_written(tmp_path: Path) -> None:
    text = EVERY_KEY.replace(
        "      root: proj\n      pre: export R=1", "      root: ~nosuchuser/proj\n      pre: export R=1"
    )
    layout = parse(text, tmp_path)
    assert layout.window("remote") is not None and layout.window("remote").root_text == "~nosuchuser/proj"
    there = pt.part_document(layout, "dev@buildbox:2222")
    assert there["windows"][0]["remote"]["root"] == "~nosuchuser/proj"
    (tmp_path / "proj").mkdir()
    here = parse(text.replace("      root: /srv/api", "      root: ~nosuchuser/api"), tmp_path)
    assert here.root_problem() == (
        f"{tmp_path / 'every.yml'}:16: windows[0].api.root: {tmp_path / 'proj' / '~nosuchuser/api'} is not a "
        "directory; create it or change the window's root:"
    )


# --------------------------------------------------------------------------- worktree:


def test_worktree_names_follow_the_agents_identity_and_a_hosts_part_keeps_them(tmp_path: Path) -> None:
    layout = parse(WORKTREES, tmp_path)
    trees = {w.name: {p.label: p.worktree for p in w.panes} for w in layout.windows}
    assert trees["trees"] == {
        "T1": "T1",
        "B": "trees-B",
        "T2": "own-tree",
        "T3": None,
        "SDK": "SDK",
        "LOG": None,
    }
    assert trees["remote"] == {"B": "remote-B"}, "a label two windows' worktrees share gets its window's name"
    assert [p.worktree for p in layout.window("single").panes] == [None, "one-tree"]  # type: ignore[union-attr]
    assert trees["api"]["SDK"] is None
    remote = sent(pt.part_document(layout, "dev@buildbox:2222"), tmp_path)
    assert [p.worktree for w in remote.windows for p in w.panes] == ["remote-B", None], (
        "resolved by the whole layout"
    )


@pytest.mark.parametrize(
    ("window", "message"),
    [
        ("worktree: 'a b'\n      panes: [claude-run]", "is neither true, false nor a worktree name"),
        ("worktree: -x\n      panes: [claude-run]", "is neither true, false nor a worktree name"),
        ("worktree: true\n      panes: [claude-run]", "needs a label"),
        ("worktree: shared\n      panes: [A: claude-run, B: claude-run]", "in one worktree"),
        ("worktree: true\n      panes:\n        - A.b: claude-run", "is not a safe git name"),
        (
            "panes:\n        - A: {commands: claude-run, worktree: x}\n        - B: {commands: claude-run, worktree: x}",
            "already another pane's",
        ),
        ("panes:\n        - A: {commands: claude-run, tree: x}", "unknown pane key 'tree'"),
    ],
)
def test_a_bad_worktree_is_one_line_naming_the_key(tmp_path: Path, window: str, message: str) -> None:
    text = f"name: bad\nroot: {tmp_path}\nwindows:\n  - w:\n      {window}\n"
    with pytest.raises(LayoutError) as caught:
        parse(text, tmp_path)
    assert message in str(caught.value) and "\n" not in str(caught.value), str(caught.value)
    assert str(caught.value).startswith(str(tmp_path / "every.yml") + ":")
