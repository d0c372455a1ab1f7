"""`conway.cancel.http`: a request blocked on a silent server returns as soon as its cancel is set."""

from __future__ import annotations

import socket
import threading
import time

import httpx
import pytest

from conway.cancel import Cancel
from conway.cancel.http import RequestAborted, send


@pytest.fixture
def silent_server():
    """Accepts connections, reads the request, never answers."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            held.append(conn)

    threading.Thread(target=serve, daemon=True).start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/"
    server.close()
    for conn in held:
        conn.close()


def _client() -> httpx.Client:
    return httpx.Client(timeout=30, limits=httpx.Limits(max_keepalive_connections=0))


def test_a_cancel_aborts_the_blocked_request_at_once(silent_server):
    cancel = Cancel()
    threading.Timer(0.3, cancel.set, args=("stop requested",)).start()
    started = time.monotonic()
    with _client() as client, pytest.raises(RequestAborted, match="stop requested"):
        send(client, "GET", silent_server, cancel)
    assert time.monotonic() - started < 5  # the server would have held it for the 30 s timeout


def test_without_a_cancel_errors_pass_through_as_httpx_errors(silent_server):
    with httpx.Client(timeout=0.3) as client, pytest.raises(httpx.ReadTimeout):
        send(client, "GET", silent_server)
    with _client() as client, pytest.raises(httpx.ReadTimeout):  # a cancel that was never set changes nothing
        send(client, "GET", silent_server, Cancel(), timeout=0.3)


@pytest.fixture
def full_backlog():
    """A local server that stopped accepting (hung, SIGSTOPped) with its backlog full: connects hang."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    fill = []
    for _ in range(4):
        c = socket.socket()
        c.setblocking(False)
        try:
            c.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        fill.append(c)
    time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/v1/models"
    for c in fill:
        c.close()
    server.close()


def test_a_cancel_during_a_hung_local_connect_is_noticed_between_short_tries(full_backlog):
    """A connect has no socket to shut down yet; to this machine it is tried in slices, the cancel read between."""
    client = httpx.Client(timeout=httpx.Timeout(30, connect=20), limits=httpx.Limits(max_keepalive_connections=0))
    cancel = Cancel()
    threading.Timer(0.3, cancel.set, args=("stop requested",)).start()
    t0 = time.monotonic()
    with pytest.raises(RequestAborted, match="stop requested"):
        send(client, "GET", full_backlog, cancel)
    assert time.monotonic() - t0 < 3  # a slice (0.25 s) after the cancel, not the 20 s connect timeout


def test_the_sliced_local_connect_still_gives_up_at_the_connect_timeout(full_backlog):
    client = httpx.Client(timeout=httpx.Timeout(30, connect=1.2), limits=httpx.Limits(max_keepalive_connections=0))
    t0 = time.monotonic()
    with pytest.raises(httpx.ConnectTimeout):
        send(client, "GET", full_backlog, Cancel())
    took = time.monotonic() - t0
    assert 1.0 < took < 4, took  # several slices, the whole connect budget: not one slice
