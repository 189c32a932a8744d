"""The one exception family every command turns into a one-line error."""

from __future__ import annotations


class ShepherdError(Exception):
    """An expected failure with a message fit for one line on stderr.

    The message says what is wrong and, where it can, what to do about it.
    """
