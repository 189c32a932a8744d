"""Bind, say the URL, serve ``fleet web`` with uvicorn until Ctrl-C or SIGTERM, then end cleanly (exit 0).

The socket is bound here (port 0: a free one), before the URL is said, so the URL is the one that
answers. uvicorn logs no request: the first one's URL carries the token.
"""

from __future__ import annotations

import ipaddress
import secrets
import signal
import socket
import typing as t

from claude_shepherd.supervisor.errors import ShepherdError


def loopback(address: str) -> bool:
    """Is *address* this machine's own (127.0.0.0/8, ::1, localhost)?"""
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def bind(address: str, port: int) -> socket.socket:
    """A listening socket on *address*:*port* (0: any free port); one line saying what to do if not."""
    try:
        family, kind, proto, _, where = socket.getaddrinfo(
            address, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise ShepherdError(
            f"--bind {address}: {exc.strerror}; give an IP address such as 127.0.0.1"
        ) from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(where)
        sock.listen(64)
    except OSError as exc:
        sock.close()
        raise ShepherdError(
            f"cannot listen on {address}:{port} ({exc.strerror}); choose another --port, or leave it out for a free one"
        ) from None
    sock.set_inheritable(False)
    return sock


def url_of(sock: socket.socket, address: str, token: str) -> str:
    host = sock.getsockname()[0]
    host = address if address == "localhost" else host
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{sock.getsockname()[1]}/?token={token}"


def serve(address: str, port: int, interval: float, say: t.Callable[[str], None]) -> int:
    """Serve until stopped; 0 once stopped by Ctrl-C or SIGTERM."""
    import uvicorn

    from claude_shepherd.fleet.web.app import Source, make_app

    sock = bind(address, port)
    token = secrets.token_urlsafe(32)
    local = loopback(address)
    if not local:
        wildcard = address in ("0.0.0.0", "::")
        where = (
            " (every address of this machine: open the URL with the one your phone reaches)"
            if wildcard
            else ""
        )
        say(
            f"fleet web: WARNING: listening on {address}{where}, not on this machine alone: anyone who can reach "
            "it and holds this URL controls the fleet (restarts agents, raises budgets); prefer an SSH tunnel to "
            "127.0.0.1"
        )
    source = Source(interval)
    app = make_app(token, source, port=sock.getsockname()[1], loopback=local)
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        server_header=False,
        date_header=False,
        timeout_graceful_shutdown=3,
    )
    server = uvicorn.Server(config)

    def stop(signum: int, frame: object) -> None:
        server.should_exit = True

    # uvicorn handles both signals while it serves, then sends the one that stopped it again to what
    # handled it before: this, which only asks it to stop (again), so the exit status stays 0; before
    # uvicorn starts, the same makes it stop as soon as it has.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, stop)
    say(url_of(sock, address, token))  # once a stop is handled: what is started after the URL may stop it
    try:
        server.run(sockets=[sock])
    finally:
        source.stop()
        sock.close()
    return 0
