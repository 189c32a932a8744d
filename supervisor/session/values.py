"""A VALUE given to ``session update``: JSON when it is JSON, else the text itself, never nested deeply."""

from __future__ import annotations

import json

from claude_shepherd.supervisor.errors import ShepherdError

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds; session runs at every agent step
    pass

MAX_VALUE_DEPTH = 32
"""How deeply a VALUE may nest: far beyond any setting, and far from what would crash a reader."""


def parse_value(raw: str) -> object:
    """JSON when VALUE is JSON (true, 3, 0.85, null, [..], {..}), else the string itself."""
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    except RecursionError:
        value = None
        depth = MAX_VALUE_DEPTH + 1
    else:
        depth = nesting_depth(value)
    if depth > MAX_VALUE_DEPTH:
        raise ShepherdError(
            f'VALUE nests more than {MAX_VALUE_DEPTH} levels deep; give a flat value like 20 or ["a", "b"]'
        )
    return value


def nesting_depth(value: object) -> int:
    """Nesting depth of a parsed JSON value, without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, level)
            if level <= MAX_VALUE_DEPTH:
                stack.extend(
                    (child, level + 1) for child in (item.values() if isinstance(item, dict) else item)
                )
    return deepest
