"""Is a Bash command exactly one invocation of a whitelisted program?

This is a security boundary: the agent writes the command. The bash original
matched a prefix, so ``engine session find; cat /etc/shadow`` passed
(docs/DESIGN.md appendix A). Here the *whole* command must be one simple command:

* words made of plain characters, ``'single'`` or ``"double"`` quoted strings
  (double quotes without ``$``, backticks or backslashes);
* the program word unquoted and spelled exactly as whitelisted;
* at most one here-document with a *quoted* delimiter (its body is not
  expanded, so it is inert text), terminated, and nothing after it;
* optionally ``2>&1``.

Anything else — ``;``, ``&``, ``|``, ``$``, backticks, ``(``, ``<`` and ``>``
elsewhere, globs, braces, ``#``, backslashes, control characters, an unquoted
heredoc delimiter, an env assignment or wrapper before the program, a newline
outside the heredoc — makes the command *not* whitelisted. When in doubt the
lexer says no; the deny reason tells the agent the accepted form.
Standard library only.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds per hook call; annotations are never evaluated
    import typing as t


_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:,+%@=~^")
_BLANK = " \t"
_DELIM_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")
_STDERR_TO_STDOUT = "2>&1"
MAX_COMMAND_LINE = 64 * 1024
"""Characters of the command's first line the lexer reads: a ``session`` call is far shorter, so a
longer line is not one (and lexing it char by char would make the hook's time grow with it)."""


class Invocation:
    """One simple command: its program word, its arguments, its here-document body."""

    __slots__ = ("program", "args", "heredoc")

    def __init__(self, program: str, args: tuple[str, ...], heredoc: str | None) -> None:
        self.program = program
        self.args = args
        self.heredoc = heredoc  # the body, when the command has one

    def __repr__(self) -> str:
        return f"Invocation({self.program!r}, {self.args!r}, heredoc={self.heredoc!r})"


def _plain_char(c: str) -> bool:
    return c in _PLAIN or (ord(c) > 127 and c.isprintable() and not c.isspace())


def parse(command: str) -> Invocation | None:
    """The single simple command *command* consists of, or None if it is anything more."""
    if not isinstance(command, str):
        return None
    n = len(command)
    line_end = command.find("\n", 0, MAX_COMMAND_LINE + 1)
    if (n if line_end < 0 else line_end) > MAX_COMMAND_LINE:
        return None
    i = 0
    words: list[str] = []
    word: list[str] | None = None  # None: between words
    program_quoted = False
    heredoc: tuple[str, bool] | None = None

    def end_word() -> None:
        nonlocal word
        if word is not None:
            words.append("".join(word))
            word = None

    while i < n:
        c = command[i]
        if c in _BLANK:
            end_word()
            i += 1
            continue
        if c == "\n":
            break
        if word is None and words and command.startswith(_STDERR_TO_STDOUT, i):
            i += len(_STDERR_TO_STDOUT)
            if i < n and command[i] not in _BLANK and command[i] != "\n":
                return None
            continue
        if c == "<":
            end_word()
            if heredoc is not None or not words or not command.startswith("<<", i):
                return None
            parsed = _heredoc_operator(command, i + 2)
            if parsed is None:
                return None
            delim, strip_tabs, i = parsed
            heredoc = (delim, strip_tabs)
            continue
        if word is None:
            word = []
        if c == "'":
            end = command.find("'", i + 1)
            if end < 0 or "\n" in command[i + 1 : end]:
                return None
            word.append(command[i + 1 : end])
            i = end + 1
        elif c == '"':
            end = command.find('"', i + 1)
            if end < 0:
                return None
            inner = command[i + 1 : end]
            if any(bad in inner for bad in ("$", "`", "\\")) or not inner.isprintable():
                return None
            word.append(inner)
            i = end + 1
        elif _plain_char(c):
            word.append(c)
            i += 1
            continue
        else:
            return None
        if not words:
            program_quoted = True  # quoting tricks on the program name: not a spelling we accept
    end_word()
    if not words or program_quoted or "=" in words[0]:
        return None  # no program, a quoted one, or an environment assignment in front
    rest = command[i:]
    body = None
    if heredoc is not None:
        body = _heredoc_body(rest, *heredoc)
        if body is None:
            return None
    elif rest.strip(" \t\n"):
        return None  # a second line: a second command
    return Invocation(words[0], tuple(words[1:]), body)


def _heredoc_operator(command: str, i: int) -> tuple[str, bool, int] | None:
    """After ``<<``: optional ``-``, blanks, then a fully quoted delimiter word."""
    n = len(command)
    strip_tabs = i < n and command[i] == "-"
    if strip_tabs:
        i += 1
    while i < n and command[i] in _BLANK:
        i += 1
    if i >= n or command[i] not in "'\"":
        return None  # unquoted delimiter: the body would be expanded (``$(...)`` runs)
    quote = command[i]
    end = command.find(quote, i + 1)
    if end < 0:
        return None
    delim = command[i + 1 : end]
    if not delim or not all(c in _DELIM_CHARS for c in delim):
        return None
    i = end + 1
    if i < n and command[i] not in _BLANK and command[i] != "\n":
        return None  # e.g. 'EOF'x or 'E'OF: a partly quoted delimiter
    return delim, strip_tabs, i


def _heredoc_body(rest: str, delim: str, strip_tabs: bool) -> str | None:
    """The body between the command line and the delimiter line; nothing may follow it."""
    if not rest.startswith("\n"):
        return None
    text = rest[1:]
    # The first line that is the delimiter (after leading tabs with <<-), found in one pass of the regex
    # engine: a Python loop over the lines made the hook's time grow with the body.
    end = re.search(("^\t*" if strip_tabs else "^") + re.escape(delim) + "$", text, re.MULTILINE)
    if end is None:
        return None  # never terminated
    if text[end.end() :].strip(" \t\n"):
        return None
    return text[: max(end.start() - 1, 0)]


def whitelisted(command: object, programs: t.Collection[str]) -> Invocation | None:
    """The invocation when *command* is one call of one of *programs*, else None."""
    invocation = parse(command) if isinstance(command, str) else None
    if invocation is None or invocation.program not in programs:
        return None
    return invocation
