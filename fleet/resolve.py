"""Which fleet a verb's LAYOUT means, answered once: a :class:`~claude_shepherd.fleet.handle.Fleet`.

LAYOUT (a file, a name in the layout folders, the name of a fleet started
here, or nothing) is read and checked once. A layout whose windows name hosts,
or a fleet across hosts recorded here by that name, is a
:class:`~claude_shepherd.fleet.hosts.span_fleet.SpanFleet`; anything else is
this machine's fleet as :mod:`claude_shepherd.fleet.target` finds it, a
:class:`~claude_shepherd.fleet.local.LocalFleet`. ``-`` (a host's own part, on
stdin) and ``--here`` never fan out again.
"""

from __future__ import annotations

import typing as t

from claude_shepherd.fleet import target
from claude_shepherd.fleet.handle import Agent, Fleet
from claude_shepherd.fleet.hosts import LOCAL
from claude_shepherd.fleet.hosts.part import STDIN
from claude_shepherd.fleet.local import LocalFleet
from claude_shepherd.fleet.lookup import LayoutNotFoundError
from claude_shepherd.fleet.output import Printer
from claude_shepherd.supervisor.errors import ShepherdError, UsageError

if t.TYPE_CHECKING:
    from claude_shepherd.fleet.hosts.span import Span

LAYOUT_VERBS = ("start", "restart")
"""The verbs that need the fleet's layout, not only its running sessions."""


def resolve(
    out: Printer,
    layout_arg: str | None,
    socket: str | None,
    *,
    verb: str,
    here: bool = False,
    lenient: tuple[type[ShepherdError], ...] = (),
    expect_digest: str | None = None,
) -> Fleet:
    """The fleet *verb* acts on, saying what it does through *out*.

    *lenient*: errors that mean "no fleet of this machine to act on" for this
    verb (``stop`` of a stopped fleet succeeds); the handle is then given the
    error instead of a target.
    """
    loaded: target.Loaded = None
    if not here and layout_arg != STDIN:  # a host's own part, or --here: never fans out again
        try:
            loaded = target.load(layout_arg, socket)
        except LayoutNotFoundError as missing:
            loaded = missing
        if expect_digest is not None and (isinstance(loaded, Exception) or loaded.digest != expect_digest):
            name = loaded.name if not isinstance(loaded, Exception) and loaded is not None else layout_arg
            raise ShepherdError(
                f"its layout file {layout_arg} changed since it last started (or is gone): an agent may have "
                f"written it; read it, then start it yourself: fleet start {name}"
            )
        span = _span(loaded, layout_arg, socket)
        if span is not None:
            from claude_shepherd.fleet.hosts.span_fleet import SpanFleet

            return SpanFleet(out, span, layout_arg)
    try:
        if verb in LAYOUT_VERBS:
            where = target.resolve_layout(layout_arg, socket, verb, loaded=loaded)
        else:
            where = target.resolve(layout_arg, socket, loaded=loaded)
    except lenient as exc:
        return LocalFleet(out, None, layout_arg, missing=exc)
    return LocalFleet(out, where, layout_arg)


def of_row(row: Agent) -> Fleet:
    """The fleet of a row of the watch: this machine's fleet on the row's socket, or the fleet across
    hosts recorded here whose part on the row's host runs its agent."""
    out = Printer()  # a key's action returns what to tell the person: it says no line
    if row.host == LOCAL:
        return LocalFleet(out, target.Target(row.socket))
    from claude_shepherd.fleet.hosts.span import remembered
    from claude_shepherd.fleet.hosts.span_fleet import SpanFleet

    for span in remembered():
        part = span.part(row.host)
        if part is not None and (span.layout.name, span.layout.socket_name) == (row.fleet, row.socket):
            return SpanFleet(out, span)
    raise ShepherdError(f"{row.where}: its fleet is no longer recorded here; use fleet status LAYOUT")


def _span(loaded: target.Loaded, layout_arg: str | None, socket: str | None) -> Span | None:
    """The span LAYOUT means, or None for a fleet of this machine alone.

    A layout file (or name) whose windows name hosts; else a span recorded
    here by that fleet name; with no LAYOUT, the one recorded span, when no
    other fleet runs here.
    """
    if loaded is not None and not isinstance(loaded, LayoutNotFoundError) and not loaded.spans_hosts:
        return None
    # What only a fleet across hosts needs, and `fleet status` of this machine's fleet never loads (docs/HOT_CORE.md).
    from claude_shepherd.fleet.hosts.span import Span, remembered, remembered_named

    if loaded is not None and not isinstance(loaded, LayoutNotFoundError):
        return Span.of(loaded)
    if layout_arg is not None:
        return remembered_named(layout_arg, socket)
    spans = [s for s in remembered() if socket is None or s.layout.socket_name == socket]
    if not spans:
        return None
    running = {(sock, session) for sock, session, _ in target.running_fleets(socket)}
    known = {(s.layout.socket_name, s.layout.name) for s in spans}
    alone = sorted(running - known)
    if len(spans) == 1 and not alone:
        return spans[0]
    names = [f"{s.layout.name} (on {', '.join(p.name for p in s.parts)})" for s in spans]
    names += [f"{session} (socket {sock})" for sock, session in alone]
    first = spans[0].layout.name
    raise UsageError(f"{len(names)} fleets: {', '.join(names)}; name one, e.g. fleet status {first}")
