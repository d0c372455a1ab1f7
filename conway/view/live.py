"""The live view (`conway view --serve`, page /live): every running session's screen as it changes, its current
decision and last actions, and its controls (pause, resume, stop, take over, hand back), one tile a session.

Sessions are found by their `live.json` (`conway.store.live`) under the served home and the `--live` folders
(a tasks report's homes: one tile per running task). The screen is a stream of screenshots of the session's own
display, taken here when the page asks (`/api/screen`); a control is the same request `conway pause|resume|stop|
takeover|handback` writes (`send_control`), so a button acts on that session exactly as the CLI does and on no
other. While a session is taken over, a click or a key on its tile is forwarded to its display with xdotool
(`/api/input`), where the session's recorder sees it as the person's input; otherwise the tiles are read-only.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from conway.errors import UserError
from conway.store.home import Home
from conway.store.live import find_live
from conway.store.state import CONTROL_REQUESTS
from conway.view.page import asset, esc

SCREEN_QUALITY = 70
BROWSER_KEYS = {"Enter": "Return", "Backspace": "BackSpace", "Escape": "Escape", "Tab": "Tab", "Delete": "Delete",
                "ArrowUp": "Up", "ArrowDown": "Down", "ArrowLeft": "Left", "ArrowRight": "Right", "Home": "Home",
                "End": "End", "PageUp": "Prior", "PageDown": "Next", " ": "space"}
"""A browser's key name → the X key name xdotool presses (F1…F12 and letters are the same in both)."""


class LiveRefused(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def live_id(home: str) -> str:
    return hashlib.sha256(home.encode()).hexdigest()[:12]


class LiveSessions:
    def __init__(self, roots: list[Path]):
        self.roots = roots

    def running(self) -> list[dict[str, Any]]:
        from conway.session.app import status_report

        out = []
        for rec in find_live(self.roots):
            report = status_report(Home(Path(rec["home"])))
            out.append({"id": live_id(rec["home"]), "home": rec["home"], "session": rec.get("session"),
                        "display": rec.get("display"), "video": rec.get("video"), "status": report["status"],
                        "step": report["step"], "phase": report["phase"], "model": report["model_id"],
                        "decision": _current_decision(Path(rec["home"]), rec.get("session")),
                        "last": [e["summary"] and f"{e['kind']}: {e['summary']}" or e["kind"]
                                 for e in report["last_events"] if e.get("session") == rec.get("session")
                                 and e["kind"] in ("result", "error", "human", "suppressed", "finish")][-5:]})
        return out

    def find(self, sid: Any) -> dict[str, Any]:
        for rec in find_live(self.roots):
            if live_id(rec["home"]) == sid:
                return rec
        raise LiveRefused(404, f"no running session {sid!r} (it may have ended)")

    def screen(self, sid: Any) -> bytes:
        """A JPEG of the session's display now."""
        rec = self.find(sid)
        if not rec.get("display"):
            raise LiveRefused(404, "this session has no screen")
        try:
            import mss
            from PIL import Image

            with mss.MSS(display=rec["display"]) as grab:
                shot = grab.grab(grab.monitors[0])
            img = Image.frombytes("RGB", shot.size, shot.bgra, "raw", "BGRX")
            buf = io.BytesIO()
            img.save(buf, "JPEG", quality=SCREEN_QUALITY)
            return buf.getvalue()
        except Exception as exc:  # the display went away between two looks
            raise LiveRefused(503, f"cannot capture {rec['display']}: {exc}") from None

    def control(self, body: Any) -> dict[str, Any]:
        from conway.session.app import send_control

        if not isinstance(body, dict) or body.get("request") not in CONTROL_REQUESTS:
            raise LiveRefused(400, f"request must be one of {', '.join(CONTROL_REQUESTS)}")
        rec = self.find(body.get("id"))
        try:
            answer = send_control(Home(Path(rec["home"])), body["request"], wait_s=3.0)
        except UserError as exc:
            raise LiveRefused(409, str(exc)) from None
        return {"ok": True, "answer": answer}

    def input(self, body: Any) -> dict[str, Any]:
        """Forward one click, key or text to a taken-over session's display (xdotool)."""
        if not isinstance(body, dict):
            raise LiveRefused(400, "the body must be a JSON object")
        rec = self.find(body.get("id"))
        from conway.session.app import status_report

        if status_report(Home(Path(rec["home"])))["status"] != "taken over":
            raise LiveRefused(409, "the session is not taken over: take it over first (the view is read-only)")
        if not rec.get("display") or shutil.which("xdotool") is None:
            raise LiveRefused(503, "input needs the session's display and xdotool (apt-get install xdotool)")
        args = _xdotool_args(body)
        env = {**os.environ, "DISPLAY": rec["display"]}
        done = subprocess.run(["xdotool", *args], env=env, capture_output=True, text=True, timeout=10)
        if done.returncode != 0:
            raise LiveRefused(502, f"xdotool failed: {done.stderr.strip()[:200]}")
        return {"ok": True, "sent": args}


def _xdotool_args(body: dict[str, Any]) -> list[str]:
    kind = body.get("type")
    if kind == "click":
        x, y = body.get("x"), body.get("y")
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 100_000 for v in (x, y)):
            raise LiveRefused(400, "a click needs x and y (screen pixels)")
        button = {"left": "1", "middle": "2", "right": "3"}.get(body.get("button", "left"))
        if button is None:
            raise LiveRefused(400, "button must be left, middle or right")
        return ["mousemove", str(round(x)), str(round(y)), "click", button]
    if kind == "type":
        text = body.get("text")
        if not isinstance(text, str) or not 0 < len(text) <= 1000:
            raise LiveRefused(400, "type needs text (1 to 1000 characters)")
        return ["type", "--delay", "30", "--", text]
    if kind == "key":
        key = body.get("key")
        name = BROWSER_KEYS.get(key, key) if isinstance(key, str) else None
        if not name or not (name.isalnum() or name in BROWSER_KEYS.values()) or len(name) > 20:
            raise LiveRefused(400, "key must be a key name (Enter, Tab, ArrowUp, F5, a …)")
        return ["key", "--", name]
    raise LiveRefused(400, "type must be click, type or key")


def _current_decision(home: Path, session: Any) -> dict[str, Any] | None:
    from conway.store.journal import tail_events

    for ev in reversed(tail_events(home / "journal", 40) if (home / "journal").exists() else []):
        if ev.get("session") == session and ev.get("kind") == "decision":
            p = ev.get("payload") or {}
            acts = [a.get("type", "?") + _args(a) for a in p.get("actions") or [] if isinstance(a, dict)]
            return {"step": ev.get("step"), "thought": (p.get("thought") or "")[:500], "actions": acts,
                    "discarded": bool(p.get("discarded"))}
    return None


def _args(action: dict[str, Any]) -> str:
    shown = {k: v for k, v in action.items() if k != "type" and v is not None}
    return "(" + ", ".join(f"{k}={str(v)[:60]}" for k, v in shown.items()) + ")"


def live_page(token: str) -> str:
    import secrets

    nonce = secrets.token_urlsafe(16)
    csp = ("default-src 'none'; img-src 'self' blob: data:; style-src 'unsafe-inline'; "
           f"script-src 'nonce-{nonce}'; connect-src 'self'; base-uri 'none'; form-action 'none'")
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{esc(csp)}">'
            f'<meta name="conway-token" content="{esc(token)}"><title>conway: live</title>'
            f"<style>{asset('viewer.css')}{asset('live.css')}</style></head>\n"
            '<body class="live"><header><h1>Running sessions, live</h1><p id="live-note">looking…</p>'
            '<p><a href="/index.html">recorded sessions</a></p></header>\n<main id="tiles"></main>\n'
            f'<script nonce="{nonce}">{asset("live.js")}</script></body></html>\n')
