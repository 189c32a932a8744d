"""``fleet web``: every fleet of this user as a page for a phone, until Ctrl-C or SIGTERM."""

from __future__ import annotations

import typing as t

import typer

from claude_shepherd.fleet.output import printer_of
from claude_shepherd.supervisor.errors import ShepherdError

INSTALL = "pip install 'claude-shepherd[web]'"


def web(
    ctx: typer.Context,
    bind: t.Annotated[
        str,
        typer.Option("--bind", metavar="ADDR", help="Listen on ADDR (default: this machine only)."),
    ] = "127.0.0.1",
    port: t.Annotated[
        int,
        typer.Option("--port", metavar="N", min=0, max=65535, help="Listen on port N (default: a free one)."),
    ] = 0,
    interval: t.Annotated[
        float, typer.Option("--interval", metavar="S", min=0.5, help="Seconds between looks at the fleets.")
    ] = 2.0,
) -> None:
    """Serve a page of every fleet and what needs you (restart, raise a budget, snooze) until Ctrl-C.

    It prints one URL with a fresh access token: open it in a browser, on a phone through an SSH
    tunnel (ssh -L 8080:127.0.0.1:PORT HOST, then the URL with port 8080) or a private network.

    Example: fleet web --interval 5
    """
    try:
        import starlette  # noqa: F401  # lazy: `fleet --help` never loads the web part
        import uvicorn  # noqa: F401
    except ImportError:
        raise ShepherdError(f"fleet web needs the web extra: {INSTALL}") from None
    from claude_shepherd.fleet.web.server import serve

    code = serve(bind, port, interval, printer_of(ctx).say)
    if code:
        raise typer.Exit(code)
