"""Small records under a sessions root's ``.shepherd/``: real files in a scratch root, with planted traps."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from claude_shepherd.supervisor.session import index_records, root_gitignore
from claude_shepherd.supervisor.session.safe_fs import UnsafeFileError


def test_a_write_makes_the_folder_and_the_roots_gitignore_and_reads_back(tmp_path: Path) -> None:
    root = tmp_path / "sessions"  # not made yet: the first write makes it, with its .gitignore
    name = index_records.file_name("fleet:window:A label")
    assert index_records.write(root, "things/deep", name, {"key": "fleet:window:A label", "n": 1})
    assert (
        root / ".shepherd" / "things" / "deep" / name
    ).read_text() == '{"key": "fleet:window:A label", "n": 1}\n'
    assert (root / root_gitignore.GITIGNORE).read_text() == root_gitignore.TEXT
    assert index_records.read(root, "things/deep", name, 4096) == {"key": "fleet:window:A label", "n": 1}
    assert index_records.read(root, "things/deep", name, 4096, ("key", "fleet:window:A label")) is not None
    assert index_records.read(root, "things/deep", name, 4096, ("key", "another")) is None, "another key's"
    index_records.put(root, "things/deep", name, "[1]\n")
    assert index_records.read(root, "things/deep", name, 4096) is None, "JSON, but not a record"
    index_records.forget(root, "things/deep", name)
    assert not (root / ".shepherd" / "things" / "deep" / name).exists()
    index_records.forget(root, "things/deep", name)  # nothing there: nothing happens
    index_records.forget(root, "never", name)


def test_a_record_past_its_limit_or_broken_is_none(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    assert index_records.write(root, "f", "big.json", {"pad": "x" * 100})
    size = (root / ".shepherd" / "f" / "big.json").stat().st_size
    assert index_records.read(root, "f", "big.json", size) is not None
    assert index_records.read(root, "f", "big.json", size - 1) is None
    (root / ".shepherd" / "f" / "bad.json").write_text('{"cut": ')
    assert index_records.read(root, "f", "bad.json", 4096) is None
    (root / ".shepherd" / "f" / "deep.json").write_text("[" * 100000 + "]" * 100000)
    assert index_records.read(root, "f", "deep.json", 1 << 20) is None
    assert index_records.read(root, "f", "missing.json", 4096) is None
    assert index_records.read(tmp_path / "nowhere", "f", "big.json", 4096) is None


def test_a_folder_or_record_that_is_a_link_or_no_file_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "r.json").write_text(json.dumps({"k": "v"}))
    (root / ".shepherd").mkdir(parents=True)
    (root / ".shepherd" / "linked").symlink_to(elsewhere)
    assert index_records.read(root, "linked", "r.json", 4096) is None, "read through a linked folder"
    assert not index_records.write(root, "linked", "w.json", {"k": "w"})
    with pytest.raises(UnsafeFileError):
        index_records.put(root, "linked", "w.json", {"k": "w"})
    index_records.forget(root, "linked", "r.json")
    assert sorted(os.listdir(elsewhere)) == ["r.json"], "nothing written or removed through the link"

    (root / ".shepherd" / "f").mkdir()
    (root / ".shepherd" / "f" / "r.json").symlink_to(elsewhere / "r.json")
    os.mkfifo(root / ".shepherd" / "f" / "fifo.json")
    assert index_records.read(root, "f", "r.json", 4096) is None, "read through a linked record"
    assert index_records.read(root, "f", "fifo.json", 4096) is None, "a FIFO would block the hook"
    assert index_records.write(root, "f", "r.json", {"k": "mine"}), "a write replaces the link itself"
    assert json.loads((elsewhere / "r.json").read_text()) == {"k": "v"}

    (root / ".shepherd" / "plain").write_text("a file where a folder belongs")
    with pytest.raises(OSError):
        index_records.put(root, "plain", "w.json", {"k": "w"})
    assert not index_records.write(root, "plain", "w.json", {"k": "w"})


def test_file_names_keep_a_readable_part_and_tell_keys_apart() -> None:
    assert index_records.file_name("duo:agents:A") == "duo_agents_A-" + f"{_crc('duo:agents:A')}.json"
    assert index_records.file_name("duo:agents:A") != index_records.file_name("duo:agents/A")
    assert index_records.file_name("/home/me/.claude") == f"_home_me_.claude-{_crc('/home/me/.claude')}.json"
    tidy = index_records.file_name("/home/me/.claude", tidy=True)
    assert tidy == f"home_me_.claude-{_crc('/home/me/.claude')}.json", "never a hidden file"
    assert index_records.file_name("::", tidy=True).startswith("x-")
    assert len(index_records.file_name("a" * 500)) == 80 + len("-12345678.json")


def _crc(key: str) -> str:
    import zlib

    return f"{zlib.crc32(key.encode()):08x}"
