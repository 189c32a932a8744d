"""Text an agent wrote, made safe to show a person: no terminal escapes, no bidi overrides.

Phase labels, session names, pane labels and a pane's history all reach the
operator's terminal (``fleet status``, ``fleet watch``, ``fleet logs``, the
status line). An ESC in any of them could set the clipboard (OSC 52), retitle
the window or redraw the screen; a bidi override could make one name read as
another. Standard library only, and free when the text is already plain.
"""

from __future__ import annotations

REPLACEMENT = "\ufffd"
_JOINERS = frozenset("\u200c\u200d")
"""Zero-width (non-)joiners: invisible but harmless, and part of emoji and many scripts."""


def printable(text: str) -> str:
    """*text* with every control, format (bidi) and line-separator character shown as U+FFFD.

    A tab becomes a space. Fast when nothing needs replacing (one C-level check).
    """
    if text.isprintable():
        return text
    return "".join(
        c if c.isprintable() or c in _JOINERS else (" " if c == "\t" else REPLACEMENT) for c in text
    )
