"""An httpx request that a stop can abort while it blocks (for any network tool or model client).

Closing a socket does not wake a thread blocked in its recv; shutting it down does. Under a `Cancel`
(`conway.cancel`), `send` learns the request's socket from httpcore's public trace hook and shuts it
down when the token is set, so the blocked request returns at once and `RequestAborted` says why.
The client should keep no idle connections (`httpx.Limits(max_keepalive_connections=0)`), so that
the socket shut down is exactly the one of the request in flight.
"""

from __future__ import annotations

import ipaddress
import math
import socket
import threading
import time
from typing import Any
from urllib.parse import urlsplit

import httpx

from conway.cancel import Cancel


class RequestAborted(Exception):
    """A cancel broke the request in flight (the reason is the cancel's)."""


CONNECT_SLICE_S = 0.25
"""A connect to this machine is tried this long at a time, the cancel checked between tries (`send`)."""


def on_loopback(url: str) -> bool:
    """The URL's host is this machine (localhost, 127.0.0.0/8, ::1)."""
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def send(client: httpx.Client, method: str, url: str, cancel: Cancel | None = None, deadline_s: float | None = None,
         **kwargs: Any) -> httpx.Response:
    """`client.request(method, url, **kwargs)`, aborted by `cancel` (None: an ordinary request) and cut at
    `deadline_s` for the whole answer (httpx's timeout bounds each read: a server that trickles its body
    or streams forever would pass it).

    A connect has no socket to shut down until it completes. To this machine it completes at once, unless
    the server stopped accepting and its backlog is full: then it hangs up to the connect timeout. So
    under a cancel a loopback connect is tried `CONNECT_SLICE_S` at a time, within the same connect
    timeout in all, and a cancel is noticed between tries (nothing was sent before a connect, so trying
    again is safe). A remote connect is left whole: a slow link may need longer than a slice.

    httpx errors pass through as they are, unless the cancel caused them (RequestAborted) or the deadline
    did (httpx.ReadTimeout).
    """
    if cancel is None or not on_loopback(url):
        return _send(client, method, url, cancel, deadline_s, **kwargs)
    given = kwargs.get("timeout", client.timeout)
    base = given if isinstance(given, httpx.Timeout) else httpx.Timeout(given)
    started = time.monotonic()
    connect_ends = started + (base.connect if base.connect is not None else math.inf)
    while True:
        now = time.monotonic()
        kwargs["timeout"] = httpx.Timeout(connect=max(0.01, min(CONNECT_SLICE_S, connect_ends - now)),
                                          read=base.read, write=base.write, pool=base.pool)
        left = None if deadline_s is None else max(0.01, deadline_s - (now - started))
        try:
            return _send(client, method, url, cancel, left, **kwargs)
        except httpx.ConnectTimeout:
            if cancel.is_set():
                raise RequestAborted(cancel.reason or "cancelled") from None
            if time.monotonic() >= connect_ends or (deadline_s is not None and time.monotonic() - started >= deadline_s):
                raise


def _send(client: httpx.Client, method: str, url: str, cancel: Cancel | None, deadline_s: float | None,
          **kwargs: Any) -> httpx.Response:
    """One try of `send`."""
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
