"""A replay of OSWorld's unmodified guest server, from the recordings `scripts/build/record_osworld_guest.py`
made (tests/data/osworld_guest/*.json): a real HTTP server on 127.0.0.1 that answers each request with the
recorded answer to the same request (same method, path and body: JSON compared parsed, a multipart form by its
fields), each recorded exchange used once, in order. A request the recording does not hold is answered 404 and
kept in `unexpected`."""

from __future__ import annotations

import base64
import json
import threading
from pathlib import Path
from typing import Any

from scripts.build.guest_http import LoopbackServer, multipart_fields


def _key(method: str, path: str, ctype: str, body: bytes) -> tuple[str, str, str]:
    if ctype.startswith("application/json"):
        shown = json.dumps(json.loads(body or b"null"), sort_keys=True)
    elif ctype.startswith("multipart/"):
        shown = json.dumps({k: base64.b64encode(v).decode() for k, v in multipart_fields(body, ctype).items()},
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
        self._lock = threading.Lock()
        self._server = LoopbackServer(self._answer)
        self.url = self._server.url

    def _answer(self, method: str, path: str, headers: Any, body: bytes) -> tuple[int, str, bytes]:
        key = _key(method, path, headers.get("Content-Type", ""), body)
        with self._lock:
            found = next((i for i, (k, _) in enumerate(self.pending) if k == key), None)
            if found is None:
                self.unexpected.append(key)
                return 404, "text/plain", b"not in the recording"
            _, e = self.pending.pop(found)
            self.used.append(e)
        return e["status"], e["response_type"], base64.b64decode(e["response"])

    def close(self) -> None:
        self._server.close()
