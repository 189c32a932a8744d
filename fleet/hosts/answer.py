"""What another host's ``fleet`` answers, believed only once it is checked: its size, depth and values.

A host may be broken or hostile, and ``fleet status``, ``stop`` and ``watch``
read every host's answer in one process: an answer that crashed the reader
(a number of 5000 digits, arrays nested 100000 deep) would blind them to every
other host too. The transport reads at most :data:`MAX_ANSWER` bytes of it;
:func:`parse` is the one place its JSON is decoded, and refuses what a fleet of
ours never says. A refused answer costs its host its rows, never another's.
"""

from __future__ import annotations

import json
import math
import typing as t

MAX_ANSWER = 4 * 1024 * 1024
"""Bytes read at most of what a host says on each of stdout and stderr; more is a bad answer."""
MAX_DEPTH = 8
"""How deeply an answer may nest (a status row is at depth 2)."""
MAX_ITEMS = 10_000
"""Items of one array or object at most (rows, lines, fields)."""
MAX_TEXT = 16 * 1024
"""Characters of one string at most (a line, a label, a path)."""
MAX_INT = 2**53
"""The largest whole number believed (any amount, PID, count or time of ours is far below it)."""


class BadAnswer(ValueError):
    """The answer is JSON, but not within the bounds of what a fleet says."""


class NotJson(ValueError):
    """The answer is not JSON at all (another program answered, or none)."""


def parse(text: str) -> t.Any:
    """*text* as JSON within the bounds above; :class:`NotJson` or :class:`BadAnswer` when it is not."""
    if len(text) > MAX_ANSWER:
        raise BadAnswer(f"is over {MAX_ANSWER} bytes")
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise BadAnswer(f"nests more than {MAX_DEPTH} levels deep") from None
    except json.JSONDecodeError as exc:
        raise NotJson(str(exc)) from None
    except BadAnswer:
        raise
    except ValueError:  # an integer past Python's limit of digits (sys.set_int_max_str_digits)
        raise BadAnswer("has a number of thousands of digits") from None
    _check(value)
    return value


def _refuse_constant(name: str) -> t.NoReturn:
    raise BadAnswer(f"has {name}, which is no number")


def _check(value: object) -> None:
    """Every value of *value* within bounds, walked without recursion (json gives exact types only)."""
    stack: list[tuple[t.Any, int]] = [([value], -1)]
    while stack:
        container, depth = stack.pop()
        if depth >= MAX_DEPTH:
            raise BadAnswer(f"nests more than {MAX_DEPTH} levels deep")
        if len(container) > MAX_ITEMS:
            raise BadAnswer(f"has over {MAX_ITEMS} items in one place")
        if type(container) is dict:
            if any(len(key) > MAX_TEXT for key in container):
                raise BadAnswer(f"has a string of over {MAX_TEXT} characters")
            container = container.values()
        for item in container:
            kind = type(item)
            if kind is str:
                if len(item) > MAX_TEXT:
                    raise BadAnswer(f"has a string of over {MAX_TEXT} characters")
            elif kind is int:
                if not -MAX_INT <= item <= MAX_INT:
                    raise BadAnswer(f"has a number beyond ±{MAX_INT}")
            elif kind is float:
                if not math.isfinite(item):
                    raise BadAnswer("has a number too large to be one")
            elif kind is list or kind is dict:
                stack.append((item, depth + 1))
