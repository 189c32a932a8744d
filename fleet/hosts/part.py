"""A host's part of a layout: the windows it runs, as a layout document of its own.

``fleet`` never builds another machine's panes itself. It sends that host's
``fleet`` the host's part of the layout (JSON on stdin, read as ``LAYOUT -``),
and that fleet builds, stops and inspects it like any local layout. Paths are
the host's: a window's ``root:`` is sent as written and resolved there (from
the remote login's home when relative); this machine's part carries absolute
roots. The notify command runs where the person is (:mod:`.relay`), so other
hosts get the alert states and tmux's own bell and message, never the command.
"""

from __future__ import annotations

import os
import shlex
import sys
import typing as t
from pathlib import Path
from socket import gethostname

from claude_shepherd.fleet.layout import Layout, LayoutError, PaneSpec, WindowSpec, load_layout, parse_layout
from claude_shepherd.supervisor.session.private_dir import private_dir
from claude_shepherd.supervisor.session.roots import registry_dir

STDIN = "-"
"""The LAYOUT argument that reads a layout document from standard input."""
MAX_DOCUMENT = 1024 * 1024


def part_document(layout: Layout, host: str | None) -> dict[str, t.Any]:
    """The layout document of what *host* runs (None: this machine)."""
    local = host is None
    windows = [w for w in layout.windows if w.host == host]
    if not windows:
        raise LayoutError(f"{layout.source}: no window runs on {host or 'this machine'}")
    doc: dict[str, t.Any] = {"name": layout.name, "socket_name": layout.socket_name, "attach": False}
    root = str(layout.root) if local else layout.root_text
    if root:
        doc["root"] = root
    options: list[str] = []
    if local and layout.config_file is not None:
        options += ["-f", str(layout.config_file)]
    if layout.colors == 256:
        options.append("-2")
    elif layout.colors == 88:
        options.append("-8")
    if options:
        doc["tmux_options"] = shlex.join(options)
    if local and layout.tmux_bin:
        doc["tmux_command"] = layout.tmux_bin
    if local and layout.on_project_start:
        doc["on_project_start"] = list(layout.on_project_start)
    if layout.pre_window:
        doc["pre_window"] = list(layout.pre_window)
    names = [w.name for w in windows]
    if layout.startup_window in names:
        doc["startup_window"] = layout.startup_window
    if not layout.notify_tmux:
        doc["notify"] = False
    elif local and layout.notify_command:
        doc["notify"] = list(layout.notify_command)
    doc["notify_on"] = list(layout.notify_on)
    doc["windows"] = [{w.name: _window(w, local)} for w in windows]
    return doc


def _window(window: WindowSpec, local: bool) -> dict[str, t.Any]:
    body: dict[str, t.Any] = {}
    if window.layout:
        body["layout"] = window.layout
    root = str(window.root) if local else window.root_text
    if root:
        body["root"] = root
    if window.pre:
        body["pre"] = list(window.pre)
    body["panes"] = [_pane(p) for p in window.panes]
    return body


def _pane(pane: PaneSpec) -> t.Any:
    commands = list(pane.commands) or None
    if pane.label and not pane.label_from_command:
        return {pane.label: commands}
    return commands


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
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in gethostname()) or "localhost"
