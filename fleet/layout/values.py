"""Single values of a layout file, checked one at a time, and the line of the file a problem is on.

The pydantic models of :mod:`.file` check each key with these, and :mod:`.build` what takes the whole
layout. A value that fails raises ``ValueError``; the caller places it in the file (:func:`located_error`).
"""

from __future__ import annotations

import re
import shlex
import typing as t
from pathlib import Path

from claude_shepherd.fleet.layout.model import BUDGET_PERIODS, MAX_BUDGET, REFUSED_KEYS, Budget, LayoutError
from claude_shepherd.supervisor.session.budgets import amount_problem


def commands_value(value: object, what: str) -> list[str]:
    """tmuxinator's command forms: a string, a list of strings, or nothing."""
    if value is None:
        return []
    if isinstance(value, bool):
        raise ValueError(f"{what}: got {str(value).lower()}, a YAML boolean; quote it if it is a command")
    if isinstance(value, (str, int, float)):
        text = str(value)
        return [text] if text.strip() else []
    if isinstance(value, list):
        out: list[str] = []
        for item in value:
            if item is None:
                continue
            if isinstance(item, bool) or not isinstance(item, (str, int, float)):
                raise ValueError(f"{what}: each command must be a string, got {kind_of(item)}")
            if str(item).strip():
                out.append(str(item))
        return out
    raise ValueError(f"{what}: expected a command or a list of commands, got {kind_of(value)}")


def kind_of(value: object) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing"
    return f"{type(value).__name__} {value!r}"


def checked_name(value: str, what: str) -> str:
    if not value.strip():
        raise ValueError(f"{what} is empty")
    if any(ch in value for ch in "\t\n\r\x1f"):
        raise ValueError(f"{what} {value!r} contains a tab or newline")
    return value


_LABEL_COMMAND = re.compile(
    r"""\btmux\b[^;&|\n]*?\bset(?:-option)?\b[^;&|\n]*?@pane_label\s+(?:"([^"]*)"|'([^']*)'|([^\s;&|]+))"""
)


def label_in(commands: list[str]) -> str | None:
    """The label a bash-era pane's commands set (``tmux set-option -p ... @pane_label NAME``), if any."""
    for command in commands:
        match = _LABEL_COMMAND.search(command)
        if match:
            return next(g for g in match.groups() if g is not None)
    return None


def budget_value(value: object) -> Budget | None:
    """``budget: 5`` (USD for the fleet's life) or ``budget: {usd: 5, per: day|week|life}``."""
    form = f"is USD as a number (budget: 5) or {{usd: 5, per: {'|'.join(BUDGET_PERIODS)}}}"
    if value is None:
        return None
    per = "life"
    usd = value
    if isinstance(value, dict):
        unknown = set(map(str, value)) - {"usd", "per"}
        if unknown or "usd" not in value:
            raise ValueError(f"{form}; got {value!r}")
        usd, per = value["usd"], value.get("per", "life")
        if per not in BUDGET_PERIODS:
            raise ValueError(f"per is one of {', '.join(BUDGET_PERIODS)}; got {per!r}")
    if isinstance(usd, bool) or not isinstance(usd, (int, float)) or not 0 < usd <= MAX_BUDGET:
        raise ValueError(f"{form}, more than 0 and at most {MAX_BUDGET:,.0f}; got {usd!r}")
    if amount_problem(usd) is not None:
        raise ValueError(f"{form}, a whole number of cents (5, 2.50); got {usd!r}")
    return Budget(usd=float(usd), per=per)


WORKTREE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
"""A worktree name: one safe git ref component and folder name (``worktree-NAME`` is its branch)."""


def worktree_value(value: object, what: str) -> bool | str | None:
    """A ``worktree:`` as written: ``true`` (named after the agent), ``false`` (none), or a NAME."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str) and WORKTREE_NAME.fullmatch(value):
        return value
    raise ValueError(
        f"{what}: {value!r} is neither true, false nor a worktree name (letters, digits, - and _, "
        f"starting with a letter or digit, at most 64)"
    )


class KeyProblem(ValueError):
    """A problem with one key of a mapping: the error's location includes the key."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


class RefusedKey(KeyProblem):
    def __init__(self, key: str, reason: str) -> None:
        super().__init__(key, f"key {key!r} is not supported: {reason}")


# --------------------------------------------------------------------------- line numbers


YamlPath = tuple[str | int, ...]


def where_in(loc: t.Sequence[str | int], lines: dict[YamlPath, int]) -> tuple[int | None, str]:
    """The line of the deepest known prefix of *loc*, and *loc* as ``a.b[0].c``."""
    path: YamlPath = tuple(loc)
    line = None
    for end in range(len(path), -1, -1):
        if path[:end] in lines:
            line = lines[path[:end]]
            break
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return line, text


def located_error(source: Path, line: int | None, key: str, message: str) -> LayoutError:
    where = f"{source}:{line}" if line else str(source)
    return LayoutError(f"{where}: {key + ': ' if key else ''}{message}")


# --------------------------------------------------------------------------- tmux_command / tmux_options


COLOUR_FLAGS: dict[str, int] = {"-2": 256, "-8": 88}
"""tmux's colour flags and the colours each gives (written back by :func:`.build._tmux_written`)."""


class TmuxFlags(t.NamedTuple):
    program: str | None
    socket: str | None
    config: str | None
    colors: int | None


def tmux_flags(text: str, key: str, *, program: bool) -> TmuxFlags:
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise ValueError(f"cannot split {text!r}: {exc}") from None
    binary = None
    if program:
        if not words:
            raise ValueError("is empty; use e.g. `tmux -L fleet -f ~/.fleet.tmux.conf`")
        binary, words = words[0], words[1:]
        if not Path(binary).name.startswith("tmux"):
            raise ValueError(f"runs {binary!r}; the fleet drives tmux itself (use tmux -L NAME -f FILE)")
    socket = config = None
    colors = None
    i = 0
    while i < len(words):
        word = words[i]
        value: str | None = None
        if word in ("-L", "-f") or (word[:2] in ("-L", "-f") and len(word) > 2):
            flag = word[:2]
            if len(word) > 2:
                value = word[2:]
            elif i + 1 < len(words):
                i += 1
                value = words[i]
            else:
                raise ValueError(f"{flag} needs a value")
            if flag == "-L":
                socket = value
            else:
                config = value
        elif word in COLOUR_FLAGS:
            colors = COLOUR_FLAGS[word]
        elif word == "-u":
            pass  # UTF-8 is always on in tmux >= 3.2
        elif word.startswith("-S"):
            raise RefusedKey("-S", REFUSED_KEYS["socket_path"])
        else:
            raise ValueError(f"option {word!r} is not supported (fleet passes only -L, -f, -2, -u to tmux)")
        i += 1
    return TmuxFlags(binary, socket, config, colors)
