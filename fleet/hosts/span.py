"""A fleet across hosts: one layout, a part of it per host, every part asked at once.

Each host runs its own fleet of its part (:mod:`.part`) through its own
``fleet`` with ``--json``; this machine's part too, through the same seam
(:class:`~.transport.LocalHost`), so local and remote agents come back alike.
A host that does not answer within the deadline costs only its own part.

A span started here is recorded with the parts it sent each host
(``$XDG_STATE_HOME/claude-shepherd/spans/``, named by this machine, which a
home shared over NFS with another host does not confuse), so ``fleet status``,
``stop`` and ``watch`` without a LAYOUT find its hosts, and a host the layout no
longer names is still stopped and shown until its agents are stopped.
"""

from __future__ import annotations

import dataclasses
import json
import os
import typing as t
from dataclasses import dataclass
from pathlib import Path

from claude_shepherd.fleet.hosts.part import STDIN, part_document, this_machine
from claude_shepherd.fleet.hosts.transport import Host, LocalHost, Reply, host_named
from claude_shepherd.fleet.layout import Layout, LayoutError, load_layout, parse_layout
from claude_shepherd.supervisor.errors import ShepherdError, UsageError
from claude_shepherd.supervisor.session.private_dir import private_dir
from claude_shepherd.supervisor.session.roots import registry_dir

R = t.TypeVar("R")


@dataclass(frozen=True)
class Part:
    """What one host runs of the layout."""

    host: Host
    document: dict[str, t.Any]
    labels: tuple[tuple[str, str], ...]
    """(window, label) of each labelled pane (a bash-era pane's label comes from its command)."""
    retired: bool = False
    """The layout no longer names this host, but agents were started there: they run until stopped."""
    started: bool = True
    """False while no ``fleet start`` has reached its host (it could not be connected to): nothing of
    the fleet can run there, so a layout that no longer names it, or a stop, drops it from the record."""

    @property
    def name(self) -> str:
        return self.host.name

    def as_record(self) -> dict[str, object]:
        return {"host": _host_key(self), "document": self.document, "labels": [list(pair) for pair in self.labels],
                "retired": self.retired, "started": self.started}  # fmt: skip

    @classmethod
    def from_record(cls, record: t.Mapping[str, t.Any], retired: bool | None = None) -> Part:
        labels = tuple((str(w), str(lb)) for w, lb in record["labels"])
        was = record.get("retired") is True if retired is None else retired
        started = record.get("started") is not False
        return cls(host_named(record["host"]), dict(record["document"]), labels, was, started)

    def fleet(self, args: t.Sequence[str], timeout: float | None = None) -> Reply:
        """That host's ``fleet ARGS`` with this part as ``LAYOUT -`` on stdin (ARGS name ``-``)."""
        stdin = json.dumps(self.document).encode() if STDIN in args else None
        return self.host.run(self.host.fleet_argv(args), stdin=stdin, timeout=timeout)


@dataclass(frozen=True)
class Span:
    layout: Layout
    parts: tuple[Part, ...]

    @classmethod
    def of(cls, layout: Layout) -> Span:
        """The layout's parts (each ``started`` as recorded), and the recorded parts of hosts it no
        longer names where a start may have run (``retired``)."""
        recorded: dict[str, Part] = {}
        record = _record(layout.socket_name, layout.name)
        for old in record.get("parts", ()) if record else ():
            try:
                part = Part.from_record(old, retired=True)
            except (KeyError, TypeError, ValueError, ShepherdError):
                continue
            recorded[part.name] = part
        parts: list[Part] = []
        for name in layout.hosts:
            host = host_named(name)
            labels = tuple(
                (w.name, p.label) for w in layout.windows if w.host == name for p in w.panes if p.label
            )
            was = recorded.pop(host.name, None)
            parts.append(
                Part(host, part_document(layout, name), labels, started=was is not None and was.started)
            )
        parts += [part for part in recorded.values() if part.started]  # never reached: nothing runs there
        return cls(layout, tuple(parts))

    def with_parts(self, parts: t.Iterable[Part]) -> Span:
        return Span(self.layout, tuple(parts))

    @property
    def current(self) -> list[Part]:
        """The parts the layout names (not the retired ones)."""
        return [p for p in self.parts if not p.retired]

    @property
    def width(self) -> int:
        """How wide the HOST column is."""
        return max(len(p.name) for p in self.parts)

    def part(self, host: str) -> Part | None:
        return next((p for p in self.parts if p.name == host), None)

    def each(self, call: t.Callable[[Part], R], parts: t.Sequence[Part] | None = None) -> list[R]:
        """*call* on every part (or *parts*) at once, results in the layout's order."""
        chosen = list(self.parts if parts is None else parts)
        if len(chosen) <= 1:
            return [call(p) for p in chosen]
        from concurrent.futures import ThreadPoolExecutor  # off `fleet status`'s path (docs/HOT_CORE.md)

        with ThreadPoolExecutor(max_workers=min(32, len(chosen))) as pool:
            return list(pool.map(call, chosen))

    def fleet(
        self, args: t.Sequence[str], timeout: float | None = None, parts: t.Sequence[Part] | None = None
    ) -> list[Reply]:
        """``fleet ARGS`` on every part's host at once."""
        return self.each(lambda part: part.fleet(args, timeout), parts)

    def where(self, labels: t.Sequence[str]) -> dict[str, list[str]]:
        """Host → the labels of *labels* it runs; a label may be ``HOST/LABEL`` to say which host's."""
        found: dict[str, list[str]] = {}
        for label in labels:
            host, _, bare = label.rpartition("/")
            holders = [
                p
                for p in self.parts
                if any(lb == bare for _, lb in p.labels) and (not host or p.name == host)
            ]
            if not holders:
                known = ", ".join(f"{p.name}/{lb}" for p in self.parts for _, lb in p.labels) or "none"
                raise UsageError(f"no pane labelled {label} in fleet {self.layout.name!r}; labels: {known}")
            if len(holders) > 1:
                raise UsageError(
                    f"{bare} is a label on {', '.join(p.name for p in holders)}; say which: "
                    f"--pane {holders[0].name}/{bare}"
                )
            found.setdefault(holders[0].name, []).append(bare)
        return found


# --------------------------------------------------------------------------- the record of spans started here


def spans_dir(env: t.Mapping[str, str] | None = None) -> Path:
    return Path(registry_dir(os.environ if env is None else env)) / "spans"


def _path(socket: str, name: str) -> Path:
    return spans_dir() / f"{this_machine()}.{socket}.{name}.json"


def _record(socket: str, name: str) -> dict[str, t.Any] | None:
    try:
        record = json.loads(_path(socket, name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def remember(span: Span) -> None:
    """Record that *span* was started here: its layout file and the part each host was sent (retired
    hosts included, until their agents are stopped), for the verbs without LAYOUT."""
    path = _path(span.layout.socket_name, span.layout.name)
    private_dir(path.parent, within=registry_dir(os.environ))
    record = {
        "layout": str(span.layout.source),
        "socket": span.layout.socket_name,  # --socket may have named another than the file's
        "name": span.layout.name,
        "parts": [p.as_record() for p in span.parts],
    }
    tmp = path.parent / f".{path.name}.{os.getpid()}"
    tmp.write_text(json.dumps(record), encoding="utf-8")
    os.replace(tmp, path)


def forget(span: Span) -> None:
    _path(span.layout.socket_name, span.layout.name).unlink(missing_ok=True)


def keep(span: Span) -> None:
    """Record *span*'s parts, or forget it when none is left (every host has stopped its part)."""
    if span.parts:
        remember(span)
    else:
        forget(span)


def remembered() -> list[Span]:
    """Every span recorded here, with the parts it was started with (and the layout file's settings
    while it still loads as that fleet)."""
    spans: list[Span] = []
    try:
        paths = sorted(spans_dir().glob(f"{this_machine()}.*.json"))
    except OSError:
        return spans
    for path in paths:
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            parts = tuple(Part.from_record(p) for p in record["parts"])
            layout = _layout_of(record, parts)
        except (OSError, ValueError, KeyError, TypeError, LayoutError, ShepherdError):
            continue
        if layout.spans_hosts:  # the file still loads as this fleet: it says which hosts it names
            named = set(layout.hosts)
            kept = tuple(dataclasses.replace(p, retired=_host_key(p) not in named) for p in parts)
        else:
            kept = parts  # as recorded
        spans.append(Span(layout, kept))
    return spans


def _host_key(part: Part) -> str | None:
    """The part's host as a layout names it (None: this machine)."""
    return None if isinstance(part.host, LocalHost) else part.name


def _layout_of(record: t.Mapping[str, t.Any], parts: tuple[Part, ...]) -> Layout:
    """The recorded layout file, when it still loads as this fleet; else a part's own document."""
    try:
        layout = load_layout(Path(record["layout"]))
        if record.get("socket", layout.socket_name) != layout.socket_name:
            layout = layout.with_socket(record["socket"])
        if layout.name == record.get("name", layout.name) and layout.socket_name == record["socket"]:
            from claude_shepherd.fleet.known import where_it_ran  # its local windows' roots: where it ran

            return where_it_ran(layout)
    except (OSError, LayoutError):
        pass
    return parse_layout(json.dumps(parts[0].document), Path(record["layout"]))


def remembered_named(name: str | None, socket: str | None = None) -> Span | None:
    """The recorded span named *name* (the one there is, when None and only one is recorded)."""
    spans = [s for s in remembered() if socket is None or s.layout.socket_name == socket]
    if name is not None:
        spans = [s for s in spans if s.layout.name == name]
    return spans[0] if len(spans) == 1 else None
