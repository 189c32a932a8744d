"""tmuxinator-format fleet layouts: YAML in, a validated :class:`Layout` out.

We read tmuxinator's format (so existing files and editor habits carry over)
but build the fleet ourselves: tmuxp's importer silently drops
``on_project_start``, a lone ``pre_window``, named panes and ``socket_name``,
and types every command into an interactive shell. Here each key we accept is
honoured, and each key we do not is refused with the reason — never silently
ignored. Any problem is one line naming the file, the line and the key.

Pane forms::

    panes:
      - claude-run                      # a command
      - [cd api, claude-run]            # commands run in order
      - SDK: claude-run --agent sdk     # a labelled pane: @pane_label SDK
      - API:                            # a labelled pane with several commands
          - export X=1
          - claude-run
      - DOCS:                           # a labelled pane with a budget of its own
          budget: {usd: 2, per: day}
          commands: claude-run

``budget:`` (the layout's, a window's, a labelled pane's) is USD an agent may spend before it
pauses: ``budget: 5`` for the fleet's life, ``budget: {usd: 5, per: day}`` (``life``, ``day``,
``week``); see :mod:`claude_shepherd.fleet.budgets`.

A pane's commands run as the pane's own process (``/bin/sh -c``, the last
command ``exec``'d), not typed into a shell; a bash-era pane that sets its own
label with ``tmux set-option -p ... @pane_label NAME`` is understood too: that
label is the pane's identity (its sessions are bound to it), and a mapping key
around such a pane is only a name.

The package, each module importing only those listed before it: :mod:`.model` (the checked layout,
all that running a fleet reads), :mod:`.values` (single values checked, and where a problem is),
:mod:`.file` (the YAML as written, checked: PyYAML and pydantic, imported only when a file is
parsed), :mod:`.build` (the model built from the file, and written back), :mod:`.cache` (a layout
checked once per text), and here :func:`load_layout`, which reads a file through the cache.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from claude_shepherd.fleet.layout import cache
from claude_shepherd.fleet.layout.build import parse_layout, to_document
from claude_shepherd.fleet.layout.model import (
    HONOURED_KEYS,
    PROVENANCE,
    REFUSED_KEYS,
    WINDOW_KEYS,
    Budget,
    Layout,
    LayoutError,
    PaneSpec,
    WindowSpec,
    cents_share,
    pane_script,
)

__all__ = [
    "HONOURED_KEYS",
    "PROVENANCE",
    "REFUSED_KEYS",
    "WINDOW_KEYS",
    "Budget",
    "Layout",
    "LayoutError",
    "PaneSpec",
    "WindowSpec",
    "cents_share",
    "load_layout",
    "pane_script",
    "parse_layout",
    "to_document",
]


def load_layout(path: Path, *, cwd: Path | None = None) -> Layout:
    """Read and validate the layout file at *path* (checked once for a text: :mod:`.cache`)."""
    import hashlib

    try:
        raw = path.read_bytes()  # read once: what is parsed is what its digest names
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise LayoutError(f"{path}: no such layout file") from None
    except UnicodeDecodeError:
        raise LayoutError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise LayoutError(f"{path}: cannot read ({exc.strerror})") from None
    cwd = Path.cwd() if cwd is None else cwd
    layout = cache.cached(path, text, cwd)
    if layout is None:
        layout = parse_layout(text, path, cwd=cwd)
        cache.keep(path, text, cwd, layout)
    return replace(layout, digest=hashlib.sha256(raw).hexdigest())
