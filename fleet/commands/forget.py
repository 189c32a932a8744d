"""``fleet forget``: let go of a fleet's name, or of a host of a fleet across hosts gone for good."""

from __future__ import annotations

import typing as t

import typer

from claude_shepherd.fleet.commands.options import SocketOpt
from claude_shepherd.fleet.output import printer_of
from claude_shepherd.supervisor.errors import ShepherdError


def forget(
    ctx: typer.Context,
    name: t.Annotated[str, typer.Argument(metavar="NAME", help="The fleet's name, as `fleet ls` lists it.")],
    host: t.Annotated[
        str | None,
        typer.Option("--host", metavar="HOST", help="Forget only this host's part of a fleet across hosts."),
    ] = None,
    socket: SocketOpt = None,
) -> None:
    """Forget a stopped fleet started here (its name no longer finds its layout file), or, with --host,
    one host's part of a fleet across hosts that will not answer again (its agents may run on there).

    Sessions, conversations and the layout file are kept.

    Example: fleet forget agents-2x2   (after fleet stop; --host HOST for a host gone for good)
    """
    from claude_shepherd.fleet import known, target  # lazy, as in every verb: keeps `fleet --help` fast
    from claude_shepherd.fleet.hosts.span import keep, remembered

    say = printer_of(ctx).say
    spans = [s for s in remembered() if s.layout.name == name and socket in (None, s.layout.socket_name)]
    records = known.named(name, socket)
    if not spans and not records:
        raise ShepherdError(f"no fleet named {name!r} was started here; `fleet ls` lists them")
    if host is not None:
        span = spans[0] if spans else None
        part = span.part(host) if span else None
        if span is None or part is None:
            hosts = ", ".join(p.name for s in spans for p in s.parts) or "none"
            raise ShepherdError(
                f"fleet {name!r} has no part on {host} to forget; its hosts not yet stopped: {hosts}"
            )
        keep(span.with_parts(p for p in span.parts if p is not part))
        labels = ", ".join(label for _, label in part.labels) or "none"
        say(f"Forgot {host}'s part of fleet {name!r}: nothing will ask {host} again.")
        say(
            f"Its agents ({labels}) may still run there; if it comes back, `fleet stop {name}` run there ends them."
        )
        return
    here = [(sock, session) for sock, session, _ in target.running_fleets(socket) if session == name]
    if here:
        raise ShepherdError(
            f"fleet {name!r} is running (socket {here[0][0]}); stop it first: fleet stop {name}"
        )
    if spans:
        left = ", ".join(p.name for p in spans[0].parts)
        raise ShepherdError(
            f"fleet {name!r} may still run on {left} (no stop was answered there); stop it: fleet stop {name}, "
            f"or forget a host gone for good: fleet forget {name} --host {spans[0].parts[0].name}"
        )
    for record in records:
        known.forget(record)
        say(f"Forgot fleet {name!r} (layout {record.layout}); its sessions and conversations are kept.")
