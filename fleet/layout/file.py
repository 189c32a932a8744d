"""A layout file as written: YAML read with the line of each key, checked against tmuxinator's forms.

The checked raw document (:class:`RawLayout`) is what :func:`.build.parse_layout` builds a
:class:`~.model.Layout` from, key by key. PyYAML and pydantic are imported here only, when a file is
parsed: the verbs that find their layout already parsed (:mod:`.cache`) never pay for them.
"""

from __future__ import annotations

import difflib
import typing as t
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from claude_shepherd.fleet.layout.model import (
    CUSTOM_LAYOUT,
    HONOURED_KEYS,
    HOST,
    PANE_KEYS,
    REFUSED_KEYS,
    REFUSED_WINDOW_KEYS,
    TMUX_LAYOUTS,
    WINDOW_KEYS,
    Budget,
    LayoutError,
)
from claude_shepherd.fleet.layout.values import (
    KeyProblem,
    RefusedKey,
    YamlPath,
    budget_value,
    checked_name,
    commands_value,
    kind_of,
    located_error,
    where_in,
    worktree_value,
)
from claude_shepherd.supervisor.tmux_names import ALERT_STATES


def _honoured(
    mapping: dict[t.Any, t.Any], refused: dict[str, str], honoured: tuple[str, ...], what: str, takes: str
) -> None:
    """Each key of *mapping* is honoured; else the reason it is not, or the key it likely misspells."""
    for key in mapping:
        if key in refused:
            raise RefusedKey(str(key), refused[key])
        if key not in honoured:
            close = difflib.get_close_matches(str(key), honoured, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise KeyProblem(str(key), f"unknown {what} {key!r} ({hint}{takes} {', '.join(honoured)})")


def _budget_key(value: object) -> Budget | None:
    """A ``budget:`` as written, checked (a problem names the key)."""
    try:
        return budget_value(value)
    except ValueError as exc:
        raise KeyProblem("budget", str(exc)) from None


class RawPane(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: str | None = None
    commands: list[str] = []
    budget: Budget | None = None
    worktree: bool | str | None = None

    @model_validator(mode="before")
    @classmethod
    def _forms(cls, value: object) -> t.Any:
        if isinstance(value, dict):
            if len(value) > 1 and set(map(str, value)) <= set(PANE_KEYS):
                keys = ", ".join(f"{k}: {value[k]}" for k in value)
                raise ValueError(
                    f"a pane's {', '.join(k for k in map(str, value) if k != 'commands')} needs a label: "
                    f"write `- LABEL: {{{keys}}}`"
                )
            if len(value) != 1:
                raise ValueError(
                    f"a labelled pane is one `LABEL: COMMAND` entry, got {len(value)} keys "
                    f"({', '.join(map(str, value))})"
                )
            ((label, body),) = value.items()
            if label is None or isinstance(label, (dict, list)):
                raise ValueError("a pane label must be a name")
            budget = None
            worktree = None
            if isinstance(body, dict):
                for key in body:
                    if key not in PANE_KEYS:
                        raise KeyProblem(
                            str(key),
                            f"unknown pane key {key!r} (a labelled pane takes {', '.join(PANE_KEYS)})",
                        )
                budget = _budget_key(body.get("budget"))
                worktree = worktree_value(body.get("worktree"), f"pane {label}: worktree")
                body = body.get("commands")
            return {
                "label": checked_name(str(label), "pane label"),
                "commands": commands_value(body, f"pane {label}"),
                "budget": budget,
                "worktree": worktree,
            }
        return {"commands": commands_value(value, "pane")}


class RawWindow(BaseModel):
    model_config = ConfigDict(extra="forbid")
    layout: str | None = None
    root: str | None = None
    pre: list[str] = []
    panes: list[RawPane] | None = None  # None: one pane with a shell
    host: str | None = None
    budget: Budget | None = None
    worktree: bool | str | None = None

    @model_validator(mode="before")
    @classmethod
    def _forms(cls, value: object) -> t.Any:
        # tmuxinator: a window is a command, a list of commands (one pane), nothing (a shell), or a mapping.
        if value is None or isinstance(value, (str, int, float, list)):
            return {"panes": [value]}
        if isinstance(value, dict):
            _honoured(value, REFUSED_WINDOW_KEYS, WINDOW_KEYS, "window key", "a window takes")
            value = dict(value)
            if "pre" in value:
                value["pre"] = commands_value(value["pre"], "pre")
            if "panes" in value and not isinstance(value["panes"], list):
                raise ValueError(f"panes must be a list, got {kind_of(value['panes'])}")
            if value.get("panes") == []:
                raise ValueError("panes is empty; give at least one pane")
            if "budget" in value:
                value["budget"] = _budget_key(value["budget"])
            if "worktree" in value:
                value["worktree"] = worktree_value(value["worktree"], "worktree")
            return value
        raise ValueError(f"a window must be a command, a list of commands or a mapping, got {kind_of(value)}")

    @field_validator("layout")
    @classmethod
    def _layout(cls, value: str | None) -> str | None:
        if value is not None and value not in TMUX_LAYOUTS and not CUSTOM_LAYOUT.match(value):
            raise ValueError(
                f"layout {value!r} is not a tmux layout ({', '.join(sorted(TMUX_LAYOUTS))}, "
                f"or a layout string from `tmux list-windows`)"
            )
        return value

    @field_validator("host", mode="before")
    @classmethod
    def _host(cls, value: object) -> t.Any:
        if value is None:
            return None
        if not isinstance(value, str) or not HOST.fullmatch(value):
            raise ValueError(
                f"host {value!r} is not [user@]name[:port] (a name from ~/.ssh/config works too); "
                "omit host for this machine"
            )
        if value == "local":
            raise ValueError(
                "host 'local' is what fleet calls this machine; omit host for it, or name the host"
            )
        return value


class RawLayout(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = None
    root: str | None = None
    socket_name: str | None = None
    tmux_command: str | None = None
    tmux_options: str | None = None
    on_project_start: list[str] = []
    pre_window: list[str] = []
    startup_window: str | None = None
    startup_pane: int | None = Field(None, ge=0)
    attach: bool = True
    windows: list[dict[str, RawWindow]]
    notify: bool | list[str] | None = None
    notify_on: list[str] | None = None
    budget: Budget | None = None

    @model_validator(mode="before")
    @classmethod
    def _keys(cls, value: object) -> t.Any:
        if not isinstance(value, dict):
            raise ValueError(f"a layout is a YAML mapping (name:, windows:, ...), got {kind_of(value)}")
        _honoured(value, REFUSED_KEYS, HONOURED_KEYS, "key", "fleet honours:")
        value = dict(value)
        for key in ("on_project_start", "pre_window"):
            if key in value:
                value[key] = commands_value(value[key], key)
        for key in ("name", "startup_window"):
            if isinstance(value.get(key), (int, float)) and not isinstance(value.get(key), bool):
                value[key] = str(value[key])
        if "windows" not in value:
            raise ValueError("windows is missing; a layout needs at least one window")
        if "budget" in value:
            value["budget"] = _budget_key(value["budget"])
        return value

    @field_validator("windows", mode="before")
    @classmethod
    def _windows(cls, value: object) -> t.Any:
        if not isinstance(value, list) or not value:
            raise ValueError(
                f"windows must be a non-empty list of `- NAME: ...` entries, got {kind_of(value)}"
            )
        return [{str(k): v for k, v in item.items()} if isinstance(item, dict) else item for item in value]

    @field_validator("notify", mode="before")
    @classmethod
    def _notify(cls, value: object) -> t.Any:
        example = (
            'a list of arguments, e.g. ["notify-send", "{fleet}", "{label}: {state}"] (never run by a shell)'
        )
        if isinstance(value, str):
            raise ValueError(f"is {example}, or false; got a string")
        if isinstance(value, list) and (not value or not all(isinstance(a, str) and a for a in value)):
            raise ValueError(f"is {example}; got {value!r}")
        return value

    @field_validator("notify_on", mode="before")
    @classmethod
    def _notify_on(cls, value: object) -> t.Any:
        states = [value] if isinstance(value, str) else value
        if not isinstance(states, list) or not all(s in ALERT_STATES for s in states):
            raise ValueError(f"lists states that alert, of {', '.join(ALERT_STATES)}; got {value!r}")
        return states

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        if value is not None:
            checked_name(value, "name")
            if ":" in value or "." in value:
                raise ValueError(f"name {value!r} is the tmux session name and may not contain ':' or '.'")
        return value


def _line_map(node: yaml.Node | None) -> dict[YamlPath, int]:
    """YAML path → 1-based line, for every key and list item of the document."""
    lines: dict[YamlPath, int] = {}

    def walk(n: yaml.Node, path: YamlPath) -> None:
        lines.setdefault(path, n.start_mark.line + 1)
        if isinstance(n, yaml.MappingNode):
            for key_node, value_node in n.value:
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
                lines[(*path, key)] = key_node.start_mark.line + 1
                walk(value_node, (*path, key))
        elif isinstance(n, yaml.SequenceNode):
            for i, item in enumerate(n.value):
                walk(item, (*path, i))

    if node is not None:
        walk(node, ())
    return lines


def _yaml_problem(exc: yaml.YAMLError) -> tuple[t.Any, str]:
    """Where a YAML syntax error is (the mark to show) and what to fix, in words for a person.

    PyYAML's own text names parser states ("expected <block end>") over
    several lines; the mark is the spot a person has to change.
    """
    problem = str(getattr(exc, "problem", None) or "")
    context = str(getattr(exc, "context", None) or "")
    at = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    opened = getattr(exc, "context_mark", None) or at
    if "'\\t'" in problem:
        return at, "a tab indents this line; YAML indents with spaces only"
    if "cannot start any token" in problem:
        char = problem.split("'")[1] if problem.count("'") >= 2 else "this character"
        return at, f"a value cannot start with {char}; put the value in quotes"
    if "quoted scalar" in context:
        return opened, "this quote is never closed; close it on the same value or remove it"
    if "flow sequence" in context or "flow mapping" in context:
        bracket = "[" if "sequence" in context else "{"
        return opened, f"this {bracket} is never closed; close it, or put the value in quotes"
    if "mapping values are not allowed" in problem:
        return at, (
            "a 'key: value' where none can start; indent this line like the keys it belongs with, "
            "or quote a value that contains ': '"
        )
    if "could not find expected ':'" in problem:
        return opened, (
            "this line is neither 'key: value' nor a '- item'; add the ':' or indent it like the lines "
            "it belongs with"
        )
    if "expected <block end>" in problem or "expected <block" in problem:
        return at, (
            "this line is indented differently from the lines it belongs with; line it up with them "
            "(the '- ' of one list in one column, the keys of one mapping in one column)"
        )
    if "undefined alias" in problem:
        return at, "*NAME refers to no &NAME anchor; put the value in quotes if the * is meant literally"
    if "another document" in problem:
        return at, "a second YAML document (---) starts here; a layout is one document"
    if "unhashable key" in problem:
        return at, "a key that is a list or a mapping; keys are plain names"
    first = problem or str(exc).splitlines()[0]
    return at, f"{first}; check the indentation and quoting here"


class _HalfCharacter(ValueError):
    def __init__(self, path: YamlPath) -> None:
        super().__init__(
            "a \\u escape here is half a character (a lone UTF-16 surrogate); escape both halves, "
            "or write the character itself"
        )
        self.path = path


def _whole_characters(value: object, path: YamlPath) -> t.Any:
    """*value* with each ``\\uD83E\\uDD16``-style pair of escapes made the one character it spells.

    JSON escapes a character beyond U+FFFF as two UTF-16 halves (``json.dumps`` does, and each host's
    part of a layout is sent as JSON); PyYAML reads each half as a character of its own, a string
    that no file, terminal or tmux can take.
    """
    if isinstance(value, str):
        if not any("\ud800" <= c <= "\udfff" for c in value):
            return value
        try:
            return value.encode("utf-16", "surrogatepass").decode("utf-16")
        except UnicodeDecodeError:
            raise _HalfCharacter(path) from None
    if isinstance(value, list):
        return [_whole_characters(item, (*path, i)) for i, item in enumerate(value)]
    if isinstance(value, dict):
        return {_whole_characters(k, (*path, k)): _whole_characters(v, (*path, k)) for k, v in value.items()}
    return value


# --------------------------------------------------------------------------- loading


_FAST_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's loader where PyYAML was built with it: the same documents, several times faster."""


def _parsed(text: str, loader_class: type[yaml.SafeLoader]) -> tuple[yaml.Node | None, t.Any]:
    """*text*'s node tree (for the line of each key) and its data, from one parse."""
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        return node, None if node is None else loader.construct_document(node)
    finally:
        loader.dispose()


def read(text: str, source: Path) -> tuple[RawLayout, dict[YamlPath, int]]:
    """Tmuxinator YAML *text* (read from *source*) checked against tmuxinator's forms, with the line of
    each key; :class:`LayoutError` in one line for anything a person has to fix."""
    for number, row in enumerate(text.splitlines(), 1):
        if "<%" in row:
            raise located_error(
                source, number, "", "ERB templates (<% ... %>) are not supported; write the values out"
            )
    try:
        node, data = _parsed(text, _FAST_LOADER)
    except Exception:  # the pure-Python loader's error is the one _yaml_problem reads
        try:
            node, data = _parsed(text, yaml.SafeLoader)
        except yaml.YAMLError as exc:
            mark, message = _yaml_problem(exc)
            where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(source)
            raise LayoutError(f"{where}: YAML syntax: {message}") from None
    lines = _line_map(node)
    try:
        data = _whole_characters(data, ())
    except _HalfCharacter as exc:
        line, key = where_in(exc.path, lines)
        raise located_error(source, line, key, str(exc)) from None
    if data is None:
        raise located_error(source, None, "", "the file is empty; a layout needs name: and windows:")
    try:
        raw = RawLayout.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = list(err.get("loc", ()))
        inner = err.get("ctx", {}).get("error")
        if isinstance(inner, KeyProblem):
            loc.append(inner.key)
        if err.get("type") == "extra_forbidden" and loc:
            message = f"unknown key {loc[-1]!r}"
        elif err.get("type") == "missing" and loc:
            message = "is missing"
        elif err.get("type") == "dict_type" and loc[:1] == ["windows"]:
            message = f"a window is one `- NAME: ...` entry, got {kind_of(err.get('input'))}"
        else:
            message = str(err.get("msg", "is invalid")).removeprefix("Value error, ")
        line, key = where_in(loc, lines)
        raise located_error(source, line, key, message) from None
    return raw, lines
