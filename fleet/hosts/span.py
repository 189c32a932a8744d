"""A fleet across hosts: one layout, a part of it per host, every part asked at once.

Each host runs its own fleet of its part (:mod:`.part`) through its own
``fleet`` with ``--json``; this machine's part too, through the same seam
(:class:`~.transport.LocalHost`), so local and remote agents come back alike.
A host that does not answer within the deadline costs only its own part.

A span started here is recorded (``$XDG_STATE_HOME/claude-shepherd/spans/``),
so ``fleet status``, ``stop`` and ``watch`` without a LAYOUT find its hosts.
"""

from __future__ import annotations

import json
import os
import typing as t
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from claude_shepherd.fleet.hosts.part import STDIN, part_document
from claude_shepherd.fleet.hosts.transport import Host, Reply, host_named
from claude_shepherd.fleet.layout import Layout, LayoutError, load_layout
from claude_shepherd.supervisor.session.roots import registry_dir

R = t.TypeVar("R")


@dataclass(frozen=True)
class Part:
    """What one host runs of the layout."""

    host: Host
    document: dict[str, t.Any]

    @property
    def name(self) -> str:
        return self.host.name

    @property
    def labels(self) -> list[tuple[str, str]]:
        """(window, label) of each labelled pane of this part."""
        out = []
        for window in self.document["windows"]:
            ((name, body),) = window.items()
            for pane in body["panes"]:
                if isinstance(pane, dict):
                    out.append((name, next(iter(pane))))
        return out

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
        parts = tuple(Part(host_named(host), part_document(layout, host)) for host in layout.hosts)
        return cls(layout, parts)

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
        with ThreadPoolExecutor(max_workers=min(32, len(chosen))) as pool:
            return list(pool.map(call, chosen))

    def fleet(
        self, args: t.Sequence[str], timeout: float | None = None, parts: t.Sequence[Part] | None = None
    ) -> list[Reply]:
        """``fleet ARGS`` on every part's host at once."""
        return self.each(lambda part: part.fleet(args, timeout), parts)

    def where(self, labels: t.Sequence[str]) -> dict[str, list[str]]:
        """Host → the labels of *labels* it runs; a label may be ``HOST/LABEL`` to say which host's."""
        from claude_shepherd.supervisor.errors import UsageError

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


def remember(span: Span) -> None:
    """Record that *span* was started here (its layout file and hosts), for the verbs without LAYOUT."""
    folder = spans_dir()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = folder / f"{span.layout.socket_name}.{span.layout.name}.json"
    record = {
        "layout": str(span.layout.source),
        "socket": span.layout.socket_name,  # --socket may have named another than the file's
        "hosts": [p.name for p in span.parts],
    }
    tmp = folder / f".{path.name}.{os.getpid()}"
    tmp.write_text(json.dumps(record), encoding="utf-8")
    os.replace(tmp, path)


def forget(span: Span) -> None:
    (spans_dir() / f"{span.layout.socket_name}.{span.layout.name}.json").unlink(missing_ok=True)


def remembered() -> list[Span]:
    """Every span recorded here whose layout still loads and still spans hosts."""
    spans: list[Span] = []
    try:
        paths = sorted(spans_dir().glob("*.json"))
    except OSError:
        return spans
    for path in paths:
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            layout = load_layout(Path(record["layout"]))
            if record.get("socket", layout.socket_name) != layout.socket_name:
                layout = layout.with_socket(record["socket"])
        except (OSError, ValueError, KeyError, TypeError, LayoutError):
            continue
        if layout.spans_hosts:
            spans.append(Span.of(layout))
    return spans


def remembered_named(name: str | None, socket: str | None = None) -> Span | None:
    """The recorded span named *name* (the one there is, when None and only one is recorded)."""
    spans = [s for s in remembered() if socket is None or s.layout.socket_name == socket]
    if name is not None:
        spans = [s for s in spans if s.layout.name == name]
    return spans[0] if len(spans) == 1 else None


def spanning(layout_arg: str | None, socket: str | None = None) -> Span | None:
    """The span a verb's LAYOUT means, or None for a fleet of this machine alone.

    A layout file (or name) whose windows name hosts; else a span recorded
    here by that fleet name; with no LAYOUT, the one recorded span, when no
    other fleet runs here.
    """
    if layout_arg == STDIN:
        return None  # a host's own part: never fans out again
    from claude_shepherd.fleet import target
    from claude_shepherd.fleet.lookup import LayoutNotFoundError

    try:
        layout = target.load(layout_arg, socket)
    except LayoutNotFoundError:
        layout = None
    if layout is not None:
        return Span.of(layout) if layout.spans_hosts else None
    if layout_arg is not None:
        return remembered_named(layout_arg, socket)
    spans = [s for s in remembered() if socket is None or s.layout.socket_name == socket]
    if not spans:
        return None
    running = {(sock, session) for sock, session, _ in target.running_fleets(socket)}
    known = {(s.layout.socket_name, s.layout.name) for s in spans}
    if running - known:
        return None  # a fleet of this machine alone runs too: the verb's own resolution asks which
    if len(spans) > 1:
        spans = [s for s in spans if (s.layout.socket_name, s.layout.name) in running] or spans
    if len(spans) > 1:
        from claude_shepherd.supervisor.errors import UsageError

        names = ", ".join(f"{s.layout.name} ({s.layout.source})" for s in spans)
        raise UsageError(
            f"{len(spans)} fleets span hosts: {names}; name one, e.g. fleet status {spans[0].layout.name}"
        )
    return spans[0]
