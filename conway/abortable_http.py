"""An httpx request that a stop can abort while it blocks (for any network tool or model client).

Closing a socket does not wake a thread blocked in its recv; shutting it down does. Under a `Cancel`
(`conway.cancel`), `send` learns the request's socket from httpcore's public trace hook and shuts it
down when the token is set, so the blocked request returns at once and `RequestAborted` says why.
The client should keep no idle connections (`httpx.Limits(max_keepalive_connections=0)`), so that
the socket shut down is exactly the one of the request in flight.
"""

from __future__ import annotations

import socket
import threading
from typing import Any

import httpx

from conway.cancel import Cancel


class RequestAborted(Exception):
    """A cancel broke the request in flight (the reason is the cancel's)."""


def send(client: httpx.Client, method: str, url: str, cancel: Cancel | None = None, deadline_s: float | None = None,
         **kwargs: Any) -> httpx.Response:
    """`client.request(method, url, **kwargs)`, aborted by `cancel` (None: an ordinary request) and cut at
    `deadline_s` for the whole answer (httpx's timeout bounds each read: a server that trickles its body
    or streams forever would pass it).

    httpx errors pass through as they are, unless the cancel caused them (RequestAborted) or the deadline
    did (httpx.ReadTimeout).
    """
    if cancel is None and deadline_s is None:
        return client.request(method, url, **kwargs)
    sockets: list[socket.socket] = []
    expired = threading.Event()

    def cut() -> None:
        for sock in list(sockets):
            shutdown(sock)

    def trace(name: str, info: dict[str, Any]) -> None:  # httpcore's public trace hook
        if name == "connection.connect_tcp.complete" and info.get("return_value") is not None:
            sock = info["return_value"].get_extra_info("socket")
            if sock is not None:
                sockets.append(sock)
                if expired.is_set() or (cancel is not None and cancel.is_set()):  # no callback will come now
                    shutdown(sock)

    def expire() -> None:
        expired.set()
        cut()

    kwargs["extensions"] = {**kwargs.get("extensions", {}), "trace": trace}
    unregister = cancel.on_cancel(cut) if cancel is not None else (lambda: None)
    timer = threading.Timer(deadline_s, expire) if deadline_s is not None else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    try:
        resp = client.request(method, url, **kwargs)
    except httpx.HTTPError:
        if cancel is not None and cancel.is_set():  # our own shutdown broke the connection
            raise RequestAborted(cancel.reason or "cancelled") from None
        if expired.is_set():
            raise httpx.ReadTimeout(f"no complete answer within {deadline_s:g} s") from None
        raise
    finally:
        unregister()
        if timer is not None:
            timer.cancel()
    if expired.is_set():  # a body without a length ends where the shutdown cut it: not an answer
        raise httpx.ReadTimeout(f"no complete answer within {deadline_s:g} s")
    return resp


def shutdown(sock: socket.socket) -> None:
    """End a connection another thread is blocked on (close alone would not wake its recv)."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
