"""The HTTP plumbing the guest-server stand-ins share: the recording proxy of
`scripts/build/record_osworld_guest.py`, the replay of its recordings (`tests/helpers/replay_guest.py`) and the
stand-in guest of the provider's tests (`tests/helpers/standin_guest.py`). Each is a real HTTP server on
127.0.0.1 that hands every GET and POST, body read, to one function of its own and sends back what it returns.
"""

from __future__ import annotations

import email.parser
import email.policy
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

Answer = Callable[[str, str, Any, bytes], tuple[int, str, bytes]]
"""(method, path, request headers, body) → (status, content type, body)."""


class LoopbackServer:
    """`answer` served on a free port of 127.0.0.1 from a thread (`url`); `close` stops it."""

    def __init__(self, answer: Answer):
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet: the recording says what happened
                pass

            def _serve(self, method: str) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) if method == "POST" else b""
                status, ctype, out = answer(method, self.path, self.headers, body)
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def do_GET(self) -> None:
                self._serve("GET")

            def do_POST(self) -> None:
                self._serve("POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def multipart_fields(body: bytes, ctype: str) -> dict[str, bytes]:
    """A multipart form's fields by name (OSWorld's /upload and /setup/upload send one)."""
    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {ctype}\r\n\r\n".encode() + body)
    return {part.get_param("name", header="content-disposition"): part.get_payload(decode=True)
            for part in msg.iter_parts()}
