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
"""

from __future__ import annotations

import os
import re
import shlex
import typing as t
from dataclasses import dataclass, field, replace
from pathlib import Path

from claude_shepherd.supervisor.errors import ShepherdError
from claude_shepherd.supervisor.session.budgets import amount_problem
from claude_shepherd.supervisor.session.numbers import parse_count
from claude_shepherd.supervisor.session.paths import sessions_root
from claude_shepherd.supervisor.tmux_names import DEFAULT_ALERT_ON, FLEET_SOCKET, is_fleet_socket

if t.TYPE_CHECKING:
    from claude_shepherd.fleet.layout_file import RawLayout, RawWindow


class LayoutError(ShepherdError):
    """A layout file that cannot be used, described in one line."""


HONOURED_KEYS: tuple[str, ...] = (
    "name",
    "root",
    "socket_name",
    "tmux_command",
    "tmux_options",
    "on_project_start",
    "pre_window",
    "startup_window",
    "startup_pane",
    "attach",
    "windows",
    "notify",
    "notify_on",
    "budget",
)
WINDOW_KEYS: tuple[str, ...] = ("layout", "root", "pre", "panes", "host", "budget", "worktree")
PANE_KEYS: tuple[str, ...] = ("commands", "budget", "worktree")
"""The keys of a labelled pane written as a mapping (``LABEL: {commands: ..., budget: ..., worktree: ...}``)."""
BUDGET_PERIODS: tuple[str, ...] = ("life", "day", "week")
MAX_BUDGET = 1e6

REFUSED_KEYS: dict[str, str] = {
    "project_name": "deprecated by tmuxinator; use name",
    "project_root": "deprecated by tmuxinator; use root",
    "tabs": "deprecated by tmuxinator; use windows",
    "pre": "deprecated by tmuxinator; use on_project_start",
    "post": "deprecated by tmuxinator; run it after `fleet start` yourself",
    "pre_tab": "deprecated by tmuxinator; use pre_window",
    "cli_args": "deprecated by tmuxinator; use tmux_options",
    "rbenv": "deprecated by tmuxinator; use pre_window",
    "rvm": "deprecated by tmuxinator; use pre_window",
    "on_project_first_start": "fleet runs only on_project_start, before every start",
    "on_project_restart": "fleet runs only on_project_start, before every start",
    "on_project_exit": "the fleet outlives your terminal; nothing runs on detach",
    "on_project_stop": "`fleet stop` ends the agents itself; wrap it in a script instead",
    "socket_path": "fleets are found by socket name in tmux's socket directory; use socket_name (fleet or fleet-*)",
    "enable_pane_titles": "fleet draws every pane border itself (label, state, context %)",
    "pane_title_position": "fleet draws every pane border itself (label, state, context %)",
    "pane_title_format": "fleet draws every pane border itself (label, state, context %)",
    "tmux_detached": "not a layout setting; use `fleet start --no-attach`",
}
REFUSED_WINDOW_KEYS: dict[str, str] = {
    "synchronize": "would type the same keystrokes into every agent of the window",
}

TMUX_LAYOUTS = frozenset({"even-horizontal", "even-vertical", "main-horizontal", "main-vertical", "tiled"})
CUSTOM_LAYOUT = re.compile(r"^[0-9a-f]{4},\d+x\d+,\d+,\d+")
_LABEL_COMMAND = re.compile(
    r"""\btmux\b[^;&|\n]*?\bset(?:-option)?\b[^;&|\n]*?@pane_label\s+(?:"([^"]*)"|'([^']*)'|([^\s;&|]+))"""
)
_RUNS_AGENT = re.compile(r"(?:^|[\s;&|(/])claude-run(?:$|[\s;&|)])")
_SHELL_CONTROL = re.compile(r"[;&|()`<>]|\$\(|^\s*(?:if|for|while|until|case|exec|\{|!)(?:\s|$)")
_ASSIGNMENT = re.compile(r"^\s*[A-Za-z_][A-Za-z0-9_]*=")
HOST = re.compile(
    r"^(?:[A-Za-z0-9._-]+@)?(?:[A-Za-z0-9_][A-Za-z0-9._-]*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$"
)
"""``[user@]name[:port]`` as a layout's ``host:`` takes it: nothing ``ssh`` could read as an option."""


# --------------------------------------------------------------------------- the model


@dataclass(frozen=True, kw_only=True)
class Budget:
    """USD an agent (or a window's, or the fleet's agents together) may spend over *per*."""

    usd: float
    per: str = "life"

    def text(self) -> str:
        """``$5.00``, ``$5.00 a day``, ``$5.00 a week``."""
        return f"${self.usd:.2f}" + {"day": " a day", "week": " a week"}.get(self.per, "")

    def written(self) -> t.Any:
        """As a layout writes it: the number alone for the fleet's life."""
        return self.usd if self.per == "life" else {"usd": self.usd, "per": self.per}


@dataclass(frozen=True, kw_only=True)
class PaneSpec:
    """One pane: its label (identity) and the commands it runs."""

    label: str | None = None
    commands: tuple[str, ...] = ()
    budget: Budget | None = None
    label_from_command: bool = False
    """The label was found in a ``tmux set-option ... @pane_label`` command (bash-era)."""
    worktree: str | None = None
    """The git worktree its Claude runs in (``claude -w NAME``), resolved: the pane's own ``worktree:``,
    else its window's, named after the agent when ``true`` (:func:`_worktrees`); None: the checkout."""
    line: int | None = None

    @property
    def runs_agent(self) -> bool:
        """Does this pane run a supervised Claude (``claude-run``)?"""
        return any(_RUNS_AGENT.search(command) for command in self.commands)


@dataclass(frozen=True, kw_only=True)
class WindowSpec:
    name: str
    layout: str | None = None
    root: Path
    """Absolute on this machine; for a window on another host, what ``root_text`` means there."""
    root_text: str | None = None
    """The window's ``root:`` as written (a window on another host resolves it there)."""
    host: str | None = None
    """The host the window runs on (``[user@]name[:port]``, anything ``ssh`` takes); None: this machine."""
    pre: tuple[str, ...] = ()
    panes: tuple[PaneSpec, ...]
    line: int | None = None
    root_line: int | None = None
    """The line of the window's own ``root:``; None when it inherits the layout's."""
    budget: Budget | None = None
    worktree: bool | str | None = None
    """The window's ``worktree:`` as written (each agent pane's own is resolved into :attr:`PaneSpec.worktree`)."""


@dataclass(frozen=True, kw_only=True)
class Layout:
    """A validated fleet layout; paths are absolute."""

    name: str
    source: Path
    root: Path
    socket_name: str = FLEET_SOCKET
    config_file: Path | None = None
    tmux_bin: str | None = None
    colors: int | None = None
    on_project_start: tuple[str, ...] = ()
    pre_window: tuple[str, ...] = ()
    startup_window: str | None = None
    startup_pane: int | None = None
    attach: bool = True
    windows: tuple[WindowSpec, ...]
    notify_command: tuple[str, ...] | None = None
    """The layout's ``notify`` command (argv with {fleet} {label} {state} {session}), if any."""
    notify_on: tuple[str, ...] = DEFAULT_ALERT_ON
    notify_tmux: bool = True
    """False with ``notify: false``: no tmux message, no bell, no command."""
    budget: Budget | None = None
    """The fleet's budget: what all its agents together may spend."""
    root_line: int | None = None
    """The line of the layout's ``root:``; None when the root is the working directory."""
    root_text: str | None = None
    """The layout's ``root:`` as written (windows on other hosts resolve it there)."""
    base: Path | None = None
    """The folder a relative ``root:`` (or none) was resolved from: where the layout was read, or where its
    fleet first started (:func:`claude_shepherd.fleet.known.where_it_ran`)."""
    digest: str = field(default="", compare=False)
    """The SHA-256 of the very bytes this layout was parsed from ("" for one not read from a file): what a
    start records, and what ``fleet start --all`` holds a layout to at boot."""

    @property
    def hosts(self) -> tuple[str | None, ...]:
        """The hosts the layout's windows run on, in order of first appearance; None is this machine."""
        return tuple(dict.fromkeys(w.host for w in self.windows))

    @property
    def spans_hosts(self) -> bool:
        """Does a window name a host? Then each host runs its own part (:mod:`claude_shepherd.fleet.hosts`)."""
        return any(w.host is not None for w in self.windows)

    def root_problem(self) -> str | None:
        """The first root that is not a directory, blamed on the ``root:`` that set it; None when all are.

        A window's root is relative to the layout's, so a missing layout root is the layout's fault
        whichever window meets it first.
        """
        for index, window in enumerate(self.windows):
            if window.host is not None or window.root.is_dir():  # another host's root is checked there
                continue
            if window.root_line is None or not self.root.is_dir():
                where = f"{self.source}:{self.root_line}" if self.root_line else str(self.source)
                return (
                    f"{where}: root: {self.root} is not a directory; create it or change the layout's root:"
                )
            return (
                f"{self.source}:{window.root_line}: windows[{index}].{window.name}.root: {window.root} is not "
                "a directory; create it or change the window's root:"
            )
        return None

    def window(self, name: str) -> WindowSpec | None:
        return next((w for w in self.windows if w.name == name), None)

    @property
    def pane_count(self) -> int:
        return sum(len(w.panes) for w in self.windows)

    def pane_ids(self) -> list[str]:
        """The fleet pane ids this layout creates (labelled panes only)."""
        return [f"{self.name}:{w.name}:{p.label}" for w in self.windows for p in w.panes if p.label]

    def sessions_roots(self) -> set[Path]:
        """Where the layout's agents keep their sessions (ledgers, budgets): the sessions root each finds
        from where its pane starts, its window's root (the builder's ``-c``)."""
        return {sessions_root(cwd=w.root, env=os.environ) for w in self.windows if w.panes}

    def with_socket(self, socket_name: str) -> Layout:
        if not is_fleet_socket(socket_name):
            raise LayoutError(f"--socket {socket_name!r} is not a fleet socket; use fleet or fleet-NAME")
        return replace(self, socket_name=socket_name)

    @property
    def startup(self) -> WindowSpec:
        """The window the fleet opens on: ``startup_window`` by name, else by index, else the first."""
        target = self.startup_window
        if not target:
            return self.windows[0]
        named = self.window(target)
        return named if named is not None else self.windows[int(target)]  # the parser checked the index

    def budget_share(self, host: str | None) -> Budget | None:
        """The part of the fleet's budget *host* holds: no host sees another's spend, so each holds
        its share by its labelled panes (a host without any holds none), and together they hold the
        fleet's budget. A fleet of this machine alone holds all of it."""
        budget = self.budget
        if budget is None or not self.spans_hosts:
            return budget
        total = sum(1 for w in self.windows for p in w.panes if p.label)
        mine = sum(1 for w in self.windows if w.host == host for p in w.panes if p.label)
        if not total or not mine:
            return None
        return Budget(usd=cents_share(budget.usd, mine / total), per=budget.per)

    def part(self, host: str | None) -> Layout:
        """What *host* runs (None: this machine), a layout for that host's ``fleet`` (:func:`to_document`
        writes it).

        Its windows only, never naming a host; not attached. This machine's part carries absolute
        roots; another host's carries the roots as written, resolved there (from the login's home
        when relative), and not what only this machine has: the ``-f`` config file, the tmux
        program, ``on_project_start``, and the notify command, which runs where the person is
        (:mod:`claude_shepherd.fleet.hosts.relay`); the host keeps the alert states and tmux's own
        bell and message. The fleet's budget becomes the host's share (:meth:`budget_share`).
        """
        windows = tuple(replace(w, host=None) for w in self.windows if w.host == host)
        if not windows:
            raise LayoutError(f"{self.source}: no window runs on {host or 'this machine'}")
        startup = self.startup
        opens_here = startup.host == host
        part = replace(
            self,
            budget=self.budget_share(host),
            windows=windows,
            attach=False,
            # An index would count this host's windows only: the window is named.
            startup_window=startup.name if opens_here and self.startup_window is not None else None,
            startup_pane=self.startup_pane if opens_here else None,
        )
        if host is None:
            here = tuple(replace(w, root_text=str(w.root)) for w in windows)
            return replace(part, root_text=str(self.root), windows=here)
        return replace(part, config_file=None, tmux_bin=None, on_project_start=(), notify_command=None)


PROVENANCE: frozenset[str] = frozenset({"source", "line", "root_line", "base"})
"""The fields of :class:`Layout`, :class:`WindowSpec` and :class:`PaneSpec` that say where the layout was
read from (its file, lines and folder), not what it is: a document carries none of them."""


def pane_script(layout: Layout, window: WindowSpec, pane: PaneSpec) -> str | None:
    """The ``/bin/sh -c`` script of a pane, or None for a plain shell.

    ``pre_window`` and the window's ``pre`` come first. The last command is
    ``exec``'d when it is a simple command, so the agent *is* the pane's
    process (its pid is ``pane_pid``, and a finished agent leaves a dead pane
    that ``remain-on-exit`` keeps readable).
    """
    pre = [*layout.pre_window, *window.pre]
    if not pane.commands:
        if not pre:
            return None
        return "\n".join([*pre, 'exec "${SHELL:-/bin/sh}"'])
    *head, last = pane.commands
    if not _SHELL_CONTROL.search(last) and not _ASSIGNMENT.match(last) and "\n" not in last:
        last = f"exec {last}"
    return "\n".join([*pre, *head, last])


# --------------------------------------------------------------------------- the raw file


def commands_value(value: t.Any, what: str) -> list[str]:
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


def kind_of(value: t.Any) -> str:
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


def _label_in(commands: list[str]) -> str | None:
    for command in commands:
        match = _LABEL_COMMAND.search(command)
        if match:
            return next(g for g in match.groups() if g is not None)
    return None


def cents_share(usd: float, share: float) -> float:
    """*share* of *usd*, to the cent (at least one): a budget is a whole number of cents."""
    return max(0.01, round(usd * share, 2))


def budget_value(value: t.Any) -> Budget | None:
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


def _budget_written(budget: Budget | None) -> dict[str, t.Any]:
    return {} if budget is None else {"budget": budget.written()}


WORKTREE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
"""A worktree name: one safe git ref component and folder name (``worktree-NAME`` is its branch)."""


def worktree_value(value: t.Any, what: str) -> bool | str | None:
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


_COLOUR_FLAGS: dict[str, int] = {"-2": 256, "-8": 88}
"""tmux's colour flags and the colours each gives (written back by :func:`_tmux_written`)."""


class _TmuxFlags(t.NamedTuple):
    program: str | None
    socket: str | None
    config: str | None
    colors: int | None


def _tmux_flags(text: str, key: str, *, program: bool) -> _TmuxFlags:
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
        elif word in _COLOUR_FLAGS:
            colors = _COLOUR_FLAGS[word]
        elif word == "-u":
            pass  # UTF-8 is always on in tmux >= 3.2
        elif word.startswith("-S"):
            raise RefusedKey("-S", REFUSED_KEYS["socket_path"])
        else:
            raise ValueError(f"option {word!r} is not supported (fleet passes only -L, -f, -2, -u to tmux)")
        i += 1
    return _TmuxFlags(binary, socket, config, colors)


# --------------------------------------------------------------------------- loading


def parse_layout(text: str, source: Path, *, cwd: Path | None = None) -> Layout:
    """Validate tmuxinator YAML *text* (read from *source*) into a :class:`Layout`."""
    from claude_shepherd.fleet.layout_file import read  # PyYAML and pydantic: only when a file is parsed

    raw, lines = read(text, source)
    return _build(raw, source, lines, Path.cwd() if cwd is None else cwd)


# --------------------------------------------------------------------------- building, key by key
#
# Each key's reader (the checked file -> the model's fields) sits beside its writer (the model -> the key
# as a document writes it); to_document() is made of the writers. The round-trip test holds each
# pair to the other over whole layouts, so a key read here and never written back fails it.

_Fail = t.Callable[[YamlPath, str], t.NoReturn]


def to_document(layout: Layout) -> dict[str, t.Any]:
    """*layout* as a document that :func:`parse_layout` reads back to it, but for :data:`PROVENANCE`
    (where it was read from): each key is written back by the function beside the one that reads it."""
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
            flags = _tmux_flags(text, key, program=program)
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
        options.append({colors: flag for flag, colors in _COLOUR_FLAGS.items()}[layout.colors])
    if options:
        doc["tmux_options"] = shlex.join(options)
    return doc


def _commands_written(layout: Layout) -> dict[str, t.Any]:
    """``on_project_start`` and ``pre_window`` (read by :meth:`RawLayout._keys`)."""
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
    """A window's body, every key of :data:`WINDOW_KEYS` it sets."""
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
        self_label = _label_in(commands)
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


def load_layout(path: Path, *, cwd: Path | None = None) -> Layout:
    """Read and validate the layout file at *path* (checked once for a text: :mod:`.layout_cache`)."""
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
    from claude_shepherd.fleet import layout_cache  # it builds these models: imported once they are

    cwd = Path.cwd() if cwd is None else cwd
    layout = layout_cache.cached(path, text, cwd)
    if layout is None:
        layout = parse_layout(text, path, cwd=cwd)
        layout_cache.keep(path, text, cwd, layout)
    return replace(layout, digest=hashlib.sha256(raw).hexdigest())
