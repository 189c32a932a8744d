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
_SPACES = frozenset(
    "\t\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000"
)
"""A tab and the spaces other than U+0020 (Unicode's Zs), which Python does not call printable: Claude
draws its prompt as ``❯`` and a no-break space."""


def printable(text: str) -> str:
    """*text* with every control, format (bidi) and line-separator character shown as U+FFFD.

    A tab or any other space becomes a plain space. Fast when nothing needs replacing (one C-level check).
    """
    if text.isprintable():
        return text
    return "".join(
        c if c.isprintable() or c in _JOINERS else (" " if c in _SPACES else REPLACEMENT) for c in text
    )
