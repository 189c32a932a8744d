"""A host's part of a layout: the windows it runs, as a layout document of its own.

``fleet`` never builds another machine's panes itself. It sends that host's
``fleet`` the host's part of the layout (JSON on stdin, read as ``LAYOUT -``),
and that fleet builds, stops and inspects it like any local layout. What a part
holds is the layout's to say (:meth:`Layout.part`, written by :func:`to_document`
beside the parser); here is what is about hosts: reading a part from stdin, and keeping it.
"""

from __future__ import annotations

import os
import sys
import typing as t
from pathlib import Path

from claude_shepherd.fleet.layout import Layout, LayoutError, load_layout, parse_layout, to_document
from claude_shepherd.supervisor.session.private_dir import private_dir
from claude_shepherd.supervisor.session.roots import registry_dir

STDIN = "-"
"""The LAYOUT argument that reads a layout document from standard input."""
MAX_DOCUMENT = 1024 * 1024


def part_document(layout: Layout, host: str | None) -> dict[str, object]:
    """The layout document of what *host* runs (None: this machine): :meth:`Layout.part`, written."""
    return to_document(layout.part(host))


# --------------------------------------------------------------------------- the receiving side


def layouts_dir(env: t.Mapping[str, str] | None = None) -> Path:
    """Where a layout read from stdin is kept, so the fleet it builds can name its layout file."""
    return Path(registry_dir(os.environ if env is None else env)) / "layouts"


def read_document(stream: t.IO[str] | None = None) -> Layout:
    """The layout document on stdin (JSON, or any YAML), kept as a file of ours and loaded from it.

    The file is named by the fleet's socket and name, so the fleet records a
    layout file that later verbs (``restart`` with no LAYOUT) can read again.
    """
    stream = sys.stdin if stream is None else stream
    if stream.isatty():
        raise LayoutError("LAYOUT - reads a layout from standard input; pipe one in, or name a layout file")
    text = stream.read(MAX_DOCUMENT + 1)
    if len(text) > MAX_DOCUMENT:
        raise LayoutError(f"<stdin>: the layout is over {MAX_DOCUMENT} bytes")
    first = parse_layout(text, Path("<stdin>"))
    if first.spans_hosts:
        raise LayoutError(
            "<stdin>: a host's part of a layout names other hosts; send each host only its windows"
        )
    folder = layouts_dir()
    private_dir(folder, within=registry_dir(os.environ))
    path = folder / f"{this_machine()}.{first.socket_name}.{first.name}.yml"
    tmp = folder / f".{path.name}.{os.getpid()}"
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)  # atomic: another verb may be reading it
    return load_layout(path)


def this_machine() -> str:
    """This machine's name in the files it keeps of fleets across hosts: a home shared with another
    host (NFS) then holds both machines' files side by side."""
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in os.uname().nodename) or "localhost"
