"""``fleet ls``: the fleets started here, running or stopped, by the names every message uses."""

from __future__ import annotations

import typing as t

import typer

from claude_shepherd.fleet.output import printer_of

if t.TYPE_CHECKING:
    from claude_shepherd.fleet.known import Known


def ls(
    ctx: typer.Context,
    as_json: t.Annotated[
        bool, typer.Option("--json", help="A JSON list of the fleets, for scripts.")
    ] = False,
) -> None:
    """List the fleets started here, running or stopped: name, state, agents, hosts and layout file.

    A fleet is known by its name until `fleet forget NAME`.

    Example: fleet ls
    """
    from claude_shepherd.fleet import known, target  # lazy, as in every verb: keeps `fleet --help` fast
    from claude_shepherd.fleet.hosts.span import remembered
    from claude_shepherd.fleet.watch import fleet_name

    running = {(socket, session): layout for socket, session, layout in target.running_fleets()}
    started = {(s.layout.socket_name, s.layout.name) for s in remembered()}
    out = printer_of(ctx)
    rows = [_row(k, running, started) for k in known.every()]
    listed = {(r["socket"], r["name"]) for r in rows}
    rows += [
        {"name": session, "socket": socket, "state": "running", "agents": None, "hosts": ["local"],
         "layout": layout or None}
        for (socket, session), layout in sorted(running.items())
        if (socket, session) not in listed
    ]  # fmt: skip  # running, but started by another installation (or as a host's part): not recorded
    if as_json:
        out.document(rows)
        return
    if not rows:
        out.say("No fleet has been started here; start one: fleet start LAYOUT")
        return
    table = [("NAME", "STATE", "AGENTS", "HOSTS", "LAYOUT")]
    table += [
        (fleet_name(r["name"], r["socket"]), r["state"], "—" if r["agents"] is None else str(r["agents"]),
         ", ".join(r["hosts"]), r["layout"] or "—")
        for r in rows
    ]  # fmt: skip
    widths = [max(len(line[i]) for line in table) for i in range(4)]
    for line in table:
        out.say("  ".join(cell.ljust(width) for cell, width in zip(line, widths)) + "  " + line[4])


def _row(
    fleet: Known, running: t.Mapping[tuple[str, str], str], started: t.Collection[tuple[str, str]]
) -> dict[str, t.Any]:
    key = (fleet.socket, fleet.name)
    # A fleet across hosts whose part here is not running may still run elsewhere until every host
    # answered its stop (`fleet status NAME` asks them).
    state = "running" if key in running else "started" if key in started else "stopped"
    return {**fleet.as_json(), "state": state}
