"""A replay of OSWorld's unmodified guest server, from the recordings `scripts/build/record_osworld_guest.py`
made (tests/data/osworld_guest/*.json): a real HTTP server on 127.0.0.1 that answers each request with the
recorded answer to the same request (same method, path and body: JSON compared parsed, a multipart form by its
fields), each recorded exchange used once, in order. A request the recording does not hold is answered 404 and
kept in `unexpected`."""

from __future__ import annotations

import base64
import email.parser
import email.policy
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


def _key(method: str, path: str, ctype: str, body: bytes) -> tuple[str, str, str]:
    if ctype.startswith("application/json"):
        shown = json.dumps(json.loads(body or b"null"), sort_keys=True)
    elif ctype.startswith("multipart/"):
        msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
            f"Content-Type: {ctype}\r\n\r\n".encode() + body)
        shown = json.dumps({p.get_param("name", header="content-disposition"):
                            base64.b64encode(p.get_payload(decode=True)).decode() for p in msg.iter_parts()},
                           sort_keys=True)
    else:
        shown = body.decode("latin-1")
    return method, path, shown


class ReplayGuest:
    def __init__(self, recording: Path | dict[str, Any]):
        self.recording = json.loads(Path(recording).read_text()) if not isinstance(recording, dict) else recording
        self.pending = [(_key(e["method"], e["path"], e["request_type"], base64.b64decode(e["request"])), e)
                        for e in self.recording["exchanges"]]
        self.used: list[dict[str, Any]] = []
        self.unexpected: list[tuple[str, str, str]] = []
        lock = threading.Lock()
        replay = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, method: str) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                key = _key(method, self.path, self.headers.get("Content-Type", ""), body)
                with lock:
                    found = next((i for i, (k, _) in enumerate(replay.pending) if k == key), None)
                    if found is None:
                        replay.unexpected.append(key)
                        status, ctype, out = 404, "text/plain", b"not in the recording"
                    else:
                        _, e = replay.pending.pop(found)
                        replay.used.append(e)
                        status, ctype, out = e["status"], e["response_type"], base64.b64decode(e["response"])
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def do_GET(self) -> None:
                self._answer("GET")

            def do_POST(self) -> None:
                self._answer("POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
