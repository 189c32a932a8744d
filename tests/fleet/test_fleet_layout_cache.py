"""A layout file's checked layout is kept and read back (``fleet/layout/cache.py``) only while it is what
a parse of the file, here, would give: the same text, working directory and home, the same models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.every_layout import LAYOUTS

from claude_shepherd.fleet.layout import LayoutError, cache, load_layout, parse_layout

SIMPLE = "name: cached\nroot: proj\nwindows:\n  - main:\n      panes:\n        - A: claude-run\n"


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A state folder of this test's own (the cache is kept there)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path / "state" / "claude-shepherd" / "parsed"


def entries(state: Path) -> list[Path]:
    return sorted(state.glob("*.json")) if state.is_dir() else []


@pytest.mark.parametrize("text", LAYOUTS.values(), ids=list(LAYOUTS))
def test_every_key_of_a_whole_layout_is_read_back_from_its_entry(
    tmp_path: Path, state: Path, text: str
) -> None:
    (tmp_path / "tmux.conf").touch()
    path = tmp_path / "every.yml"
    path.write_text(text)
    parsed = load_layout(path, cwd=tmp_path)
    assert len(entries(state)) == 1
    kept = cache.cached(path, text, tmp_path)
    assert kept == parsed == parse_layout(text, path, cwd=tmp_path)
    assert load_layout(path, cwd=tmp_path) == parsed


def test_an_edited_file_is_parsed_again_and_a_broken_edit_is_refused(tmp_path: Path, state: Path) -> None:
    path = tmp_path / "cached.yml"
    path.write_text(SIMPLE)
    assert load_layout(path, cwd=tmp_path).pane_ids() == ["cached:main:A"]
    path.write_text(SIMPLE.replace("A: claude-run", "B: claude-run"))
    assert load_layout(path, cwd=tmp_path).pane_ids() == ["cached:main:B"]
    path.write_text(SIMPLE.replace("panes:", "panse:"))
    with pytest.raises(LayoutError, match="panse"):
        load_layout(path, cwd=tmp_path)


def test_another_working_directory_or_home_resolves_the_roots_afresh(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "cached.yml"
    path.write_text(SIMPLE)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert load_layout(path, cwd=tmp_path / "a").root == tmp_path / "a" / "proj"
    assert load_layout(path, cwd=tmp_path / "b").root == tmp_path / "b" / "proj"
    assert load_layout(path, cwd=tmp_path / "a").root == tmp_path / "a" / "proj"
    home = SIMPLE.replace("root: proj", "root: ~/proj")
    path.write_text(home)
    monkeypatch.setenv("HOME", str(tmp_path / "a"))
    assert load_layout(path, cwd=tmp_path).root == tmp_path / "a" / "proj"
    monkeypatch.setenv("HOME", str(tmp_path / "b"))
    assert load_layout(path, cwd=tmp_path).root == tmp_path / "b" / "proj"


def test_a_config_file_gone_since_is_refused_as_the_parse_refuses_it(tmp_path: Path, state: Path) -> None:
    path = tmp_path / "cached.yml"
    path.write_text(SIMPLE + "tmux_options: -f tmux.conf\n")
    (tmp_path / "tmux.conf").touch()
    assert load_layout(path, cwd=tmp_path).config_file == tmp_path / "tmux.conf"
    (tmp_path / "tmux.conf").unlink()
    with pytest.raises(LayoutError, match="does not exist"):
        load_layout(path, cwd=tmp_path)


@pytest.mark.parametrize(
    "damage",
    [
        lambda entry: "{not json",
        lambda entry: json.dumps({**entry, "key": ["another shape", *entry["key"][1:]]}),
        lambda entry: json.dumps({**entry, "key": [entry["key"][0], "another parser", *entry["key"][2:]]}),
        lambda entry: json.dumps({**entry, "layout": {**entry["layout"], "windows": 5}}),
        lambda entry: json.dumps({**entry, "layout": {**entry["layout"], "unknown_field": 1}}),
        lambda entry: json.dumps({**entry, "layout": {**entry["layout"], "name": "forged"}})[:-40],
    ],
    ids=["not json", "other models", "another parser", "wrong type", "unknown field", "cut short"],
)
def test_an_entry_that_does_not_read_back_whole_is_parsed_afresh(tmp_path: Path, state: Path, damage) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "cached.yml"
    path.write_text(SIMPLE)
    parsed = load_layout(path, cwd=tmp_path)
    (entry_path,) = entries(state)
    entry_path.write_text(damage(json.loads(entry_path.read_text())))
    assert cache.cached(path, SIMPLE, tmp_path) is None
    assert load_layout(path, cwd=tmp_path) == parsed
    assert cache.cached(path, SIMPLE, tmp_path) == parsed  # kept again, whole


def test_the_cache_keeps_a_bounded_number_of_entries(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache, "MAX_ENTRIES", 3)
    path = tmp_path / "cached.yml"
    path.write_text(SIMPLE)
    for i in range(6):
        (tmp_path / str(i)).mkdir()
        load_layout(path, cwd=tmp_path / str(i))
    assert len(entries(state)) == 3


def test_a_state_folder_open_to_others_is_not_read_from(tmp_path: Path, state: Path) -> None:
    path = tmp_path / "cached.yml"
    path.write_text(SIMPLE)
    parsed = load_layout(path, cwd=tmp_path)
    state.chmod(0o777)  # anyone could have planted an entry
    try:
        assert cache.cached(path, SIMPLE, tmp_path) is None
        assert load_layout(path, cwd=tmp_path) == parsed
    finally:
        state.chmod(0o700)
