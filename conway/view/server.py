"""`conway view --serve`: the same pages from 127.0.0.1, and the one way the browser can write labels.

Everything here needs the owner's secret: a random token that reaches the
owner only, in the address printed to their terminal (a `token` query parameter). Any
process on this machine can connect to 127.0.0.1 (another user's, a task
run with `--network`), so a page anyone may fetch must show nothing and
carry nothing that controls a session. A page is answered to a request that
carries the token in the address, in the cookie that address sets (HttpOnly,
SameSite=Strict, per port: the pages link to each other without it), or in
an `X-Conway-Token` header; without it, a 403 page that says where the
address is, with no token and nothing of the sessions. The data under
`/api/` and every POST need the header, which only the pages' own scripts
send (another origin cannot set it without this server's consent).

A label is a POST to /api/label with a JSON body; it is written with the
same `Label` model and `append_labels` as `conway review` (source `review`),
so export picks it up unchanged. Requests whose Host is not this server's
address (DNS rebinding) and cross-origin POSTs are refused.
"""

from __future__ import annotations

import hmac
import json
import secrets
import threading
from http.cookies import CookieError, SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

from pydantic import ValidationError

from conway.actions import ActionProblem, parse_action
from conway.errors import UserError
from conway.experience.labels import VERDICTS, Label, append_labels, label_summary, labels_path
from conway.store.journal import journal_files
from conway.view.site import Site

BODY_MAX = 64 * 1024
NEEDS_TOKEN_PAGE = (
    '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'\"><title>conway view</title></head>\n"
    "<body><h1>This viewer needs its token</h1><p>It shows its pages only to the person who started it: open the "
    "address <code>conway view --serve</code> printed in that terminal (it carries a <code>token</code> parameter).</p>"
    "</body></html>\n").encode()
"""The answer to a page asked for without the token: nothing of the sessions, and no token."""
POST_ROUTES = ("/api/label", "/api/control", "/api/input")
TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".png": "image/png",
         ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp"}


class LabelRefused(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def make_label(site: Site, body: Any) -> Label:
    """A review label from a POSTed body, checked like `conway review` checks what a person typed."""
    if not isinstance(body, dict):
        raise LabelRefused(400, "the body must be a JSON object")
    unknown = set(body) - {"session", "step", "verdict", "corrected_action", "note"}
    if unknown:
        raise LabelRefused(400, f"unknown field(s): {', '.join(sorted(unknown))}")
    session, step, verdict = body.get("session"), body.get("step"), body.get("verdict")
    if not isinstance(session, str) or not isinstance(step, int) or isinstance(step, bool):
        raise LabelRefused(400, "session (text) and step (integer) are required")
    if verdict not in VERDICTS:
        raise LabelRefused(400, f"verdict must be one of {', '.join(VERDICTS)}")
    if site.find_step(session, step) is None:
        raise LabelRefused(404, f"no recorded step {step} in session {session!r}")
    corrected = body.get("corrected_action")
    if corrected is not None:
        if verdict != "wrong":
            raise LabelRefused(400, "a corrected action only goes with wrong")
        parsed = parse_action(corrected)
        if isinstance(parsed, ActionProblem):
            raise LabelRefused(400, f"the corrected action is not valid: {parsed.message}")
        corrected = parsed.model_dump()
    note = body.get("note") or ""
    if not isinstance(note, str):
        raise LabelRefused(400, "note must be text")
    try:
        return Label(session=session, step=step, source="review", verdict=verdict, corrected_action=corrected,
                     note=note)
    except ValidationError as exc:
        raise LabelRefused(400, "; ".join(e["msg"] for e in exc.errors())) from None


class ViewServer:
    """A ThreadingHTTPServer on 127.0.0.1 answering the site's routes; `start()` runs it in a thread.

    With `rebuild` and `journal`, a page asked for after the journal grew is
    answered from a site rebuilt from it (a running agent can be watched).
    """

    def __init__(self, site: Site, port: int = 0, *, rebuild: Callable[[], Site] | None = None,
                 journal: Path | None = None, live: list[Path] | None = None):
        from conway.view.live import LiveSessions

        self.site = site
        self.live = LiveSessions(live if live is not None else [site.home_root])
        self.rebuild = rebuild
        self.journal = journal
        self._seen = self._journal_state()
        self.token = site.token or secrets.token_urlsafe(24)
        site.token = self.token
        self.lock = threading.Lock()
        self.httpd = _QuietServer(("127.0.0.1", port), _handler(self))
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/"
        self._thread: threading.Thread | None = None

    def owner_url(self, path: str = "") -> str:
        """The address to give the owner (and no one else): `path` on this server with the token, which lets a
        browser in (and sets its cookie)."""
        return f"{self.url}{path}?" + urlencode({"token": self.token})

    @property
    def cookie(self) -> str:
        """The cookie's name: per port, as cookies are shared by every port of 127.0.0.1."""
        return f"conway-view-{self.port}"

    def token_matches(self, given: str | None) -> bool:
        return bool(given) and hmac.compare_digest(str(given).encode("utf-8", "surrogateescape"),
                                                   self.token.encode())

    @property
    def hosts(self) -> set[str]:
        return {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}

    def serve_forever(self) -> None:
        self.httpd.serve_forever(poll_interval=0.2)

    def start(self) -> str:
        self._thread = threading.Thread(target=self.serve_forever, name="conway-view", daemon=True)
        self._thread.start()
        return self.url

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _journal_state(self) -> tuple[tuple[str, int, int], ...]:
        if self.journal is None:
            return ()
        out = []
        for f in journal_files(self.journal):
            try:  # the time too: appends into the file's zeroed tail leave its length as it was
                st = f.stat()
                out.append((f.name, st.st_size, st.st_mtime_ns))
            except OSError:
                continue
        return tuple(out)

    def refresh(self) -> None:
        """Rebuild the site when the journal changed since it was read (call with the lock held)."""
        if self.rebuild is None:
            return
        now = self._journal_state()
        if now != self._seen:
            try:
                site = self.rebuild()
            except UserError:  # e.g. the journal was emptied: keep showing what was read
                return
            site.token = self.token
            self.site, self._seen = site, now

    def write_label(self, body: Any) -> dict[str, Any]:
        with self.lock:
            lab = make_label(self.site, body)
            append_labels(labels_path(self.site.home_root), [lab])
        s = label_summary(lab)
        words = [s.get("verdict"), f"source {s['source']}"] + (
            [f"corrected: {lab.corrected_action}"] if lab.corrected_action else []) + (
            [f"note: {lab.note}"] if lab.note else [])
        return {"ok": True, "label": lab.record(), "summary": "; ".join(str(w) for w in words if w)}


class _QuietServer(ThreadingHTTPServer):
    """A browser that drops a connection (a reload, a closed tab) is routine, not a traceback on the terminal."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


def _handler(server: ViewServer) -> type[BaseHTTPRequestHandler]:
    """The request handler class bound to one ViewServer (http.server builds one handler per request)."""
    return type("Handler", (_Handler,), {"view": server})


class _Handler(BaseHTTPRequestHandler):
    server_version = "conway-view"
    sys_version = ""
    view: ViewServer  # set by `_handler`; `self.server` is the socket server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    _set_cookie = False

    def _send(self, status: int, content: bytes, ctype: str) -> None:
        self.send_response(status)
        if self._set_cookie:  # the owner came in by the printed address: the pages it links to need no token
            self.send_header("Set-Cookie", f"{self.view.cookie}={self.view.token}; Path=/; HttpOnly; "
                                           "SameSite=Strict")
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(content)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Referrer-Policy", "no-referrer")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(content)

    def _json(self, status: int, data: dict[str, Any]) -> None:
        self._send(status, json.dumps(data).encode(), "application/json")

    def _host_ok(self) -> bool:
        if self.headers.get("Host", "") not in self.view.hosts:
            self._json(403, {"error": "wrong Host header"})
            return False
        return True

    def _header_token(self) -> bool:
        return self.view.token_matches(self.headers.get("X-Conway-Token"))

    def _page_token(self) -> bool:
        """Whether a page may be shown: the token in the header, the address (then the cookie is set) or the
        cookie."""
        if self._header_token():
            return True
        if any(self.view.token_matches(t) for t in parse_qs(urlsplit(self.path).query).get("token", [])):
            self._set_cookie = True
            return True
        try:
            jar = SimpleCookie(self.headers.get("Cookie", ""))
        except CookieError:
            return False
        morsel = jar.get(self.view.cookie)
        return morsel is not None and self.view.token_matches(morsel.value)

    def do_GET(self) -> None:
        self._set_cookie = False  # per request, should a connection ever carry several
        if not self._host_ok():
            return
        route = unquote(urlsplit(self.path).path).lstrip("/") or "index.html"
        if route.startswith("api/"):
            self._live_get(route)
            return
        if not self._page_token():
            self._send(403, NEEDS_TOKEN_PAGE, TYPES[".html"])
            return
        if route == "live":
            from conway.view.live import live_page

            self._send(200, live_page(self.view.token).encode(), TYPES[".html"])
            return
        if route.endswith("/"):
            route += "index.html"
        if ".." in route.split("/"):
            self._json(404, {"error": "not found"})
            return
        with self.view.lock:
            if route.endswith((".html", ".js")):
                self.view.refresh()
            content = self.view.site.get(route)
        if content is None:
            self._json(404, {"error": "not found"})
            return
        ctype = TYPES.get(Path(route).suffix.lower(), "application/octet-stream")
        data = content.read_bytes() if isinstance(content, Path) else content
        self._send(200, data, ctype)

    do_HEAD = do_GET

    def _live_get(self, route: str) -> None:
        """The live page's data: only with the token in the header, which the page's script sends."""
        from conway.view.live import LiveRefused

        if not self._header_token():
            self._json(403, {"error": "missing or wrong token (reload the page from this server)"})
            return
        query = parse_qs(urlsplit(self.path).query)
        try:
            if route == "api/live":
                self._json(200, {"sessions": self.view.live.running()})
            elif route == "api/screen":
                self._send(200, self.view.live.screen((query.get("id") or [""])[0]), "image/jpeg")
            else:
                self._json(404, {"error": "not found"})
        except LiveRefused as exc:
            self._json(exc.status, {"error": str(exc)})

    def do_POST(self) -> None:
        if not self._host_ok():
            return
        refusal = self._request_refusal()
        if refusal is not None:
            self._json(refusal[0], {"error": refusal[1]})
            return
        try:
            body = json.loads(self.rfile.read(self._content_length()) or b"null")
        except (ValueError, UnicodeDecodeError):
            self._json(400, {"error": "the body is not JSON"})
            return
        self._answer_post(urlsplit(self.path).path, body)

    def _answer_post(self, path: str, body: Any) -> None:
        from conway.view.live import LiveRefused

        try:
            if path == "/api/label":
                self._json(200, self.view.write_label(body))
            elif path == "/api/control":
                self._json(200, self.view.live.control(body))
            else:
                self._json(200, self.view.live.input(body))
        except (LabelRefused, LiveRefused) as exc:
            self._json(exc.status, {"error": str(exc)})

    def _request_refusal(self) -> tuple[int, str] | None:
        """Why a POST is refused before its body is read (status, message), or None when it may be read."""
        if urlsplit(self.path).path not in POST_ROUTES:
            return 404, "not found"
        origin = self.headers.get("Origin")
        if origin is not None and origin.rstrip("/") not in {f"http://{h}" for h in self.view.hosts}:
            return 403, "cross-origin request refused"
        if not self._header_token():
            return 403, "missing or wrong token (reload the page from this server)"
        if "application/json" not in self.headers.get("Content-Type", ""):
            return 415, "send JSON (Content-Type: application/json)"
        length = self._content_length()
        if length < 0 or length > BODY_MAX:
            return 413, f"the body must be at most {BODY_MAX} bytes"
        return None

    def _content_length(self) -> int:
        """The declared body length; -1 when the header is not a number."""
        try:
            return int(self.headers.get("Content-Length", "0"))
        except ValueError:
            return -1
