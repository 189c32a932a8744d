"""A layout built from its checked file, key by key, and written back to a document.

:func:`parse_layout` has :mod:`.file` read and check the YAML, each key alone; here the model is built
from it, with what takes more than one key (window names against each other, each pane's worktree over
the whole layout, the startup window). Each key's reader sits beside its writer: :func:`to_document` is
made of the writers, and a host's part is sent as such a document.
"""

from __future__ import annotations

import shlex
import typing as t
from dataclasses import replace
from pathlib import Path

from claude_shepherd.fleet.layout.model import Budget, Layout, PaneSpec, WindowSpec
from claude_shepherd.fleet.layout.values import (
    COLOUR_FLAGS,
    WORKTREE_NAME,
    YamlPath,
    checked_name,
    label_in,
    located_error,
    tmux_flags,
    where_in,
)
from claude_shepherd.supervisor.session.numbers import parse_count
from claude_shepherd.supervisor.tmux_names import DEFAULT_ALERT_ON, FLEET_SOCKET, is_fleet_socket

if t.TYPE_CHECKING:
    from claude_shepherd.fleet.layout.file import RawLayout, RawWindow


# --------------------------------------------------------------------------- loading


def parse_layout(text: str, source: Path, *, cwd: Path | None = None) -> Layout:
    """Validate tmuxinator YAML *text* (read from *source*) into a :class:`Layout`."""
    from claude_shepherd.fleet.layout.file import read  # PyYAML and pydantic: only when a file is parsed

    raw, lines = read(text, source)
    return _build(raw, source, lines, Path.cwd() if cwd is None else cwd)


# --------------------------------------------------------------------------- building, key by key
#
# Each key's reader (the checked file -> the model's fields) sits beside its writer (the model -> the key
# as a document writes it); to_document() is made of the writers. The round-trip test holds each
# pair to the other over whole layouts, so a key read here and never written back fails it.

_Fail = t.Callable[[YamlPath, str], t.NoReturn]


def to_document(layout: Layout) -> dict[str, t.Any]:
    """*layout* as a document that :func:`parse_layout` reads back to it, but for
    :data:`.model.PROVENANCE` (where it was read from): each key is written back by the function beside
    the one that reads it."""
    return {
        "name": layout.name,
        **_root_written(layout.root_text),
        **_tmux_written(layout),
        **_commands_written(layout),
        **_startup_written(layout),
        "attach": layout.attach,
        "windows": [{w.name: _window_written(w)} for w in layout.windows],
        **_notify_written(layout),
        **_budget_written(layout.budget),
    }


def _budget_written(budget: Budget | None) -> dict[str, t.Any]:
    """``budget:`` of the layout, a window or a pane (read by :func:`.values.budget_value`)."""
    return {} if budget is None else {"budget": budget.written()}


def _build(raw: RawLayout, source: Path, lines: dict[YamlPath, int], cwd: Path) -> Layout:
    def fail(path: YamlPath, message: str) -> t.NoReturn:
        line, key = where_in(path, lines)
        raise located_error(source, line, key, message)

    tmux = _tmux(raw, cwd, fail)
    root = _root(raw.root, cwd)
    windows = _worktrees(raw, tuple(_windows(raw, root, lines, fail)), fail)
    startup = _startup(raw, windows, fail)
    return Layout(
        name=_name(raw, source, fail),
        source=source,
        root=root,
        root_text=raw.root,
        root_line=lines.get(("root",)) if raw.root else None,
        base=cwd,
        **tmux,
        on_project_start=tuple(raw.on_project_start),
        pre_window=tuple(raw.pre_window),
        **startup,
        attach=raw.attach,
        windows=windows,
        **_notify(raw),
        budget=raw.budget,
    )


def _name(raw: RawLayout, source: Path, fail: _Fail) -> str:
    name = raw.name or source.stem
    if ":" in name or "." in name:
        fail((), f"the file name {source.name!r} gives session name {name!r}; set name: without ':' or '.'")
    return name


def _root(text: str | None, base: Path) -> Path:
    """A ``root:`` as written, made absolute: ``~`` expanded, relative to *base*; *base* when unset.

    ``~NAME`` for a user this machine does not have stays as written: another host may have one (a
    window there resolves its root there), and here it is a root that is not a directory.
    """
    root = Path(text) if text else base
    try:
        root = root.expanduser()
    except (RuntimeError, ValueError):
        pass
    return root if root.is_absolute() else base / root


def _root_written(text: str | None) -> dict[str, t.Any]:
    return {} if text is None else {"root": text}


def _tmux(raw: RawLayout, cwd: Path, fail: _Fail) -> dict[str, t.Any]:
    """``socket_name``, ``tmux_command`` and ``tmux_options``: one fleet socket (however many of them name
    it), the tmux config file (which must exist), the tmux program and its colours."""
    sockets: dict[str, YamlPath] = {}
    config: str | None = None
    config_key: YamlPath = ()
    tmux_bin: str | None = None
    colors: int | None = None
    for key, program in (("tmux_command", True), ("tmux_options", False)):
        text = getattr(raw, key)
        if text is None:
            continue
        try:
            flags = tmux_flags(text, key, program=program)
        except ValueError as exc:
            fail((key,), str(exc))
        if flags.program and flags.program != "tmux":
            tmux_bin = flags.program
        if flags.socket:
            sockets[flags.socket] = (key,)
        if flags.config:
            config, config_key = flags.config, (key,)
        colors = flags.colors or colors
    if raw.socket_name:
        sockets[raw.socket_name] = ("socket_name",)
    if len(sockets) > 1:
        fail(next(iter(sockets.values())), f"two different sockets are named: {', '.join(sockets)}")
    socket = next(iter(sockets), FLEET_SOCKET)
    if not is_fleet_socket(socket):
        fail(
            sockets.get(socket, ()),
            f"socket {socket!r} is not a fleet socket; name it fleet or fleet-SOMETHING "
            f"(hooks and pane ids act only on fleet sockets)",
        )
    config_path: Path | None = None
    if config:
        config_path = _root(config, cwd)
        if not config_path.is_file():
            fail(config_key, f"tmux config file {config_path} does not exist")
    return {"socket_name": socket, "config_file": config_path, "tmux_bin": tmux_bin, "colors": colors}


def _tmux_written(layout: Layout) -> dict[str, t.Any]:
    doc: dict[str, t.Any] = {"socket_name": layout.socket_name}
    if layout.tmux_bin:
        doc["tmux_command"] = shlex.quote(layout.tmux_bin)
    options = ["-f", str(layout.config_file)] if layout.config_file is not None else []
    if layout.colors is not None:
        options.append({colors: flag for flag, colors in COLOUR_FLAGS.items()}[layout.colors])
    if options:
        doc["tmux_options"] = shlex.join(options)
    return doc


def _commands_written(layout: Layout) -> dict[str, t.Any]:
    """``on_project_start`` and ``pre_window`` (read by :meth:`.file.RawLayout._keys`)."""
    return {
        key: list(commands)
        for key, commands in (
            ("on_project_start", layout.on_project_start),
            ("pre_window", layout.pre_window),
        )
        if commands
    }


def _startup(raw: RawLayout, windows: tuple[WindowSpec, ...], fail: _Fail) -> dict[str, t.Any]:
    """``startup_window`` (a window's name, or its index) and ``startup_pane``."""
    if raw.startup_window is not None:
        names = [w.name for w in windows]
        index = parse_count(raw.startup_window, maximum=len(names) - 1) if names else None
        if raw.startup_window not in names and index is None:
            fail(("startup_window",), f"names no window (windows: {', '.join(names)})")
    return {"startup_window": raw.startup_window, "startup_pane": raw.startup_pane}


def _startup_written(layout: Layout) -> dict[str, t.Any]:
    doc: dict[str, t.Any] = {}
    if layout.startup_window is not None:
        doc["startup_window"] = layout.startup_window
    if layout.startup_pane is not None:
        doc["startup_pane"] = layout.startup_pane
    return doc


def _notify(raw: RawLayout) -> dict[str, t.Any]:
    """``notify`` (a command, or false for no alert at all) and ``notify_on``."""
    return {
        "notify_command": tuple(raw.notify) if isinstance(raw.notify, list) else None,
        "notify_on": tuple(dict.fromkeys(raw.notify_on)) if raw.notify_on is not None else DEFAULT_ALERT_ON,
        "notify_tmux": raw.notify is not False,
    }


def _notify_written(layout: Layout) -> dict[str, t.Any]:
    doc: dict[str, t.Any] = {}
    if not layout.notify_tmux:
        doc["notify"] = False
    elif layout.notify_command is not None:
        doc["notify"] = list(layout.notify_command)
    doc["notify_on"] = list(layout.notify_on)
    return doc


def _windows(raw: RawLayout, root: Path, lines: dict[YamlPath, int], fail: _Fail) -> t.Iterator[WindowSpec]:
    seen: set[str] = set()
    for i, item in enumerate(raw.windows):
        if len(item) != 1:
            fail(
                ("windows", i),
                f"a window is one `- NAME: ...` entry, got {len(item)} keys ({', '.join(item)}); "
                f"indent the window's settings under its name",
            )
        ((name, body),) = item.items()
        where: YamlPath = ("windows", i, name)
        try:
            checked_name(name, "window name")
        except ValueError as exc:
            fail(where, str(exc))
        if name in seen:
            fail(where, f"window {name!r} appears twice; window names are part of each pane's identity")
        seen.add(name)
        yield WindowSpec(
            name=name,
            layout=body.layout,
            root=_root(body.root, root),
            root_text=body.root,
            host=body.host,
            pre=tuple(body.pre),
            panes=tuple(_panes(name, body, where, lines, fail)),
            line=lines.get(where),
            root_line=lines.get((*where, "root")) if body.root else None,
            budget=body.budget,
            worktree=body.worktree,
        )


def _window_written(window: WindowSpec) -> dict[str, t.Any]:
    """A window's body, every key of :data:`.model.WINDOW_KEYS` it sets."""
    body: dict[str, t.Any] = {}
    if window.layout:
        body["layout"] = window.layout
    body.update(_root_written(window.root_text))
    if window.pre:
        body["pre"] = list(window.pre)
    body["panes"] = [_pane_written(p, window) for p in window.panes]
    if window.host is not None:
        body["host"] = window.host
    body.update(_budget_written(window.budget))
    if window.worktree is not None:
        body["worktree"] = window.worktree
    return body


def _worktrees(raw: RawLayout, windows: tuple[WindowSpec, ...], fail: _Fail) -> tuple[WindowSpec, ...]:
    """``worktree:`` of panes and windows, resolved over the whole layout into each pane's name.

    A pane's own value wins; a window's applies to its agent panes. ``true`` names the worktree after
    the agent's identity, so every start of the pane finds the same one: its label, or
    ``WINDOW-LABEL`` when another window has a pane of that label in a worktree too. Resolved here,
    once, so that a host's part carries the names the whole layout gave.
    """
    wanted: list[tuple[int, int, bool | str]] = []
    for i, (item, window) in enumerate(zip(raw.windows, windows)):
        body = next(iter(item.values()))
        raw_panes = body.panes or []
        agents = sum(1 for pane in window.panes if pane.runs_agent)
        for j, pane in enumerate(window.panes):
            own = raw_panes[j].worktree if j < len(raw_panes) else None
            value = own if own is not None else (window.worktree if pane.runs_agent else None)
            if value is None or value is False:
                continue
            where: YamlPath = ("windows", i, window.name, "panes", j)
            if own is None and isinstance(value, str) and agents > 1:
                fail(
                    ("windows", i, window.name, "worktree"),
                    f"{value!r} would put the window's {agents} agents in one worktree; use worktree: true "
                    f"(one each, named after each agent) or set worktree: on each pane",
                )
            if value is True and not pane.label:
                fail(where, "a pane in a worktree needs a label (the worktree is named after it)")
            wanted.append((i, j, value))
    derived = [windows[i].panes[j].label for i, j, value in wanted if value is True]
    names: dict[str, YamlPath] = {}
    resolved: dict[tuple[int, int], str] = {}
    for i, j, value in wanted:
        window, pane = windows[i], windows[i].panes[j]
        where = ("windows", i, window.name, "panes", j)
        name = value if isinstance(value, str) else str(pane.label)
        if value is True and derived.count(pane.label) > 1:
            name = f"{window.name}-{pane.label}"
        if not WORKTREE_NAME.fullmatch(name):
            fail(
                where,
                f"worktree name {name!r} (from the agent's identity) is not a safe git name; "
                f"name it: worktree: NAME (letters, digits, - and _)",
            )
        if name in names:
            fail(where, f"worktree {name!r} is already another pane's; each agent needs its own worktree")
        names[name] = where
        resolved[(i, j)] = name
    return tuple(
        replace(
            window,
            panes=tuple(replace(pane, worktree=resolved.get((i, j))) for j, pane in enumerate(window.panes)),
        )
        for i, window in enumerate(windows)
    )


def _panes(
    name: str, body: RawWindow, where: YamlPath, lines: dict[YamlPath, int], fail: _Fail
) -> t.Iterator[PaneSpec]:
    labels: dict[str, int] = {}
    for j, raw_pane in enumerate(body.panes if body.panes is not None else [None]):  # None: a shell
        pane_path: YamlPath = (*where, "panes", j)
        commands = raw_pane.commands if raw_pane is not None else []
        # A bash-era pane sets its own label; that label is the identity its sessions are
        # bound to, so it wins over the mapping key (then only tmuxinator's pane title).
        self_label = label_in(commands)
        label = self_label or (raw_pane.label if raw_pane is not None else None)
        if label:
            if label in labels:
                fail(
                    pane_path,
                    f"label {label!r} is used twice in window {name!r} "
                    f"(panes {labels[label] + 1} and {j + 1}); each pane needs its own identity",
                )
            labels[label] = j
        yield PaneSpec(
            label=label,
            commands=tuple(commands),
            label_from_command=bool(self_label),
            line=lines.get(pane_path),
            budget=raw_pane.budget if raw_pane is not None else None,
        )


def _pane_written(pane: PaneSpec, window: WindowSpec) -> t.Any:
    """A pane in the form that gives back its label: ``LABEL: COMMANDS``, or the commands alone when they
    set the label themselves (a bash-era pane) or there is none; ``LABEL: {commands, ...}`` with its
    budget, and with its worktree when that is not what its window's would give it (the resolved name,
    or ``false``)."""
    commands = list(pane.commands) or None
    inherited = window.worktree not in (None, False) and pane.runs_agent
    tree = {"worktree": pane.worktree or False} if pane.worktree is not None or inherited else {}
    if pane.label and (pane.budget is not None or tree):  # a bash-era label is found in the commands again
        return {pane.label: {"commands": commands, **_budget_written(pane.budget), **tree}}
    if pane.label and not pane.label_from_command:
        return {pane.label: commands}
    return commands
