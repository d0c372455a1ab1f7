"""A person's input on an X display, recorded while they have taken over, as actions of Conway's schema.

`HumanRecorder(display)` watches the X server's device events through the RECORD extension (python-xlib),
which sees every pointer and key event whoever sends it (a person's keyboard and mouse, VNC, xdotool's XTEST),
without grabbing anything: the person's input reaches the applications as it would anyway. `drain()` returns the
actions completed so far; `stop()` ends the recording and returns what was still pending.

`Assembler` turns the raw events into actions (a pure state machine, tested on its own):

* a button press and release at one place → `click` (left), `right_click`, or `click` with `button: middle`;
  two or three left clicks at one place within `MULTI_CLICK_S` → `double_click` / `triple_click`;
* a left press, a move of at least `DRAG_PX`, a release → `drag` from the press to the release;
* wheel buttons (4/5 up/down, 6/7 left/right) → `scroll` at the pointer, consecutive ones at one place merged;
* printable keys (shift allowed) → `type` of the text, flushed by any other input or `TYPE_GAP_S` of quiet;
* a named key (Return, Tab, arrows, F5 …) → `key`; any key with ctrl, alt or super held → `hotkey`.

Pointer moves alone are not actions (the next click says where the pointer went).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from conway.actions import canonical_key

MULTI_CLICK_S = 0.4
DRAG_PX = 5
TYPE_GAP_S = 1.0
SCROLL_GAP_S = 0.5
BUTTON_NAMES = {1: "left", 2: "middle", 3: "right"}
WHEEL = {4: (0, 1), 5: (0, -1), 6: (-1, 0), 7: (1, 0)}
"""Wheel button → (dx, dy) in the scroll action's convention (positive dy scrolls up, positive dx right)."""
MODIFIER_KEYS = {"shift_l": "shift", "shift_r": "shift", "control_l": "ctrl", "control_r": "ctrl",
                 "alt_l": "alt", "alt_r": "alt", "meta_l": "alt", "meta_r": "alt", "super_l": "win",
                 "super_r": "win", "iso_level3_shift": None, "caps_lock": None, "num_lock": None}
X_KEY_NAMES = {"prior": "pageup", "next": "pagedown", "kp_enter": "enter", "iso_left_tab": "tab"}


class RecorderUnavailable(Exception):
    """The display cannot be recorded (no display, no python-xlib, no RECORD extension): one line."""


@dataclass
class RawEvent:
    """One device event, already decoded: kind is press/release/motion/key/keyup."""

    kind: str
    t: float
    x: int = 0
    y: int = 0
    button: int = 0
    key: str = ""
    """The key's X name (`a`, `Return`, `Shift_L`) for key and keyup."""
    char: str = ""
    """The text the key types with the shift state it was pressed in ("" for none)."""
    mods: tuple[str, ...] = ()
    """ctrl, alt, win held when the key was pressed."""


@dataclass
class Assembler:
    """Raw events in, actions (plain dicts of the action schema, with the time they began) out."""

    done: list[dict[str, Any]] = field(default_factory=list)
    _press: RawEvent | None = None
    _text: str = ""
    _text_t: float = 0.0
    _text_last: float = 0.0
    _pending: dict[str, Any] | None = None
    """The last click or scroll, held a moment: a second click or wheel turn at the same place joins it."""
    _pending_t: float = 0.0

    def feed(self, ev: RawEvent) -> None:
        if ev.kind in ("key", "keyup"):
            self._key(ev)
        elif ev.kind == "press":
            self._button_press(ev)
        elif ev.kind == "release":
            self._button_release(ev)

    def take(self, now: float) -> list[dict[str, Any]]:
        """The actions finished by `now` (typing quiet for TYPE_GAP_S, clicks past the multi-click time)."""
        if self._text and now - self._text_last >= TYPE_GAP_S:
            self._flush_text()
        if self._pending and now - self._pending_t >= max(MULTI_CLICK_S, SCROLL_GAP_S):
            self._flush_pending()
        out, self.done = self.done, []
        return out

    def finish(self) -> list[dict[str, Any]]:
        """Everything still pending (the recording ends)."""
        self._flush_text()
        self._flush_pending()
        out, self.done = self.done, []
        return out

    # -- pointer ----------------------------------------------------------------

    def _button_press(self, ev: RawEvent) -> None:
        self._flush_text()
        if ev.button in WHEEL:
            dx, dy = WHEEL[ev.button]
            p = self._pending
            same_way = p is not None and p["type"] == "scroll" and (p["dx"] * dx > 0 or p["dy"] * dy > 0)
            if p and same_way and (p["x"], p["y"]) == (ev.x, ev.y) \
                    and ev.t - self._pending_t < SCROLL_GAP_S and abs(p["dx"] + dx) <= 100 and abs(p["dy"] + dy) <= 100:
                p["dx"] += dx
                p["dy"] += dy
                self._pending_t = ev.t
                return
            self._hold({"type": "scroll", "x": ev.x, "y": ev.y, "dx": dx, "dy": dy, "t": ev.t}, ev.t)
            return
        if ev.button in BUTTON_NAMES:
            self._press = ev

    def _button_release(self, ev: RawEvent) -> None:
        start, self._press = self._press, None
        if start is None or start.button != ev.button:
            return
        if ev.button == 1 and max(abs(ev.x - start.x), abs(ev.y - start.y)) >= DRAG_PX:
            self._flush_pending()
            self._emit({"type": "drag", "x": start.x, "y": start.y, "to_x": ev.x, "to_y": ev.y, "t": start.t})
            return
        if ev.button == 3:
            self._flush_pending()
            self._emit({"type": "right_click", "x": start.x, "y": start.y, "t": start.t})
            return
        if ev.button == 2:
            self._flush_pending()
            self._emit({"type": "click", "x": start.x, "y": start.y, "button": "middle", "t": start.t})
            return
        p = self._pending
        if p and p["type"] in ("click", "double_click") and abs(p["x"] - start.x) <= 2 and abs(p["y"] - start.y) <= 2 \
                and start.t - self._pending_t < MULTI_CLICK_S:
            p["type"] = "double_click" if p["type"] == "click" else "triple_click"
            p.pop("button", None)
            self._pending_t = ev.t
            if p["type"] == "triple_click":
                self._flush_pending()
            return
        self._hold({"type": "click", "x": start.x, "y": start.y, "button": "left", "t": start.t}, ev.t)

    def _hold(self, action: dict[str, Any], t: float) -> None:
        self._flush_pending()
        self._pending, self._pending_t = action, t

    def _flush_pending(self) -> None:
        if self._pending is not None:
            p, self._pending = self._pending, None
            self._emit(p)

    # -- keys ---------------------------------------------------------------------

    def _key(self, ev: RawEvent) -> None:
        if ev.kind == "keyup":
            return
        low = ev.key.lower()
        if low in MODIFIER_KEYS:
            return
        name = canonical_key(X_KEY_NAMES.get(low, low)) if len(ev.key) > 1 else canonical_key(ev.key.lower())
        if ev.mods:
            self._flush_text()
            self._flush_pending()
            keys = [*ev.mods, name] if name else list(ev.mods)
            self._emit({"type": "hotkey", "keys": keys, "t": ev.t})
            return
        if ev.char and ev.char.isprintable():
            self._flush_pending()
            if not self._text:
                self._text_t = ev.t
            self._text += ev.char
            self._text_last = ev.t
            return
        if name:
            self._flush_text()
            self._flush_pending()
            self._emit({"type": "key", "key": name, "t": ev.t})

    def _flush_text(self) -> None:
        if self._text:
            self._emit({"type": "type", "text": self._text, "t": self._text_t})
            self._text = ""

    def _emit(self, action: dict[str, Any]) -> None:
        self.done.append(action)


# --- the X side ------------------------------------------------------------------------


_NAMES: dict[int, str] = {}


def _keysym_names(XK: Any) -> dict[int, str]:
    """keysym → its X name (`Return`, `a`, `F5`), from python-xlib's tables (made once)."""
    if not _NAMES:
        for key, value in vars(XK).items():
            if key.startswith("XK_") and isinstance(value, int):
                _NAMES.setdefault(value, key[3:])
    return _NAMES


class HumanRecorder:
    """Records device events of `display` on a thread of its own; `drain()` / `stop()` give the actions."""

    def __init__(self, display: str | None):
        if not display:
            raise RecorderUnavailable("no X display to record (the session has no screen)")
        try:
            from Xlib import X
            from Xlib import display as xdisplay
            from Xlib.ext import record
        except ImportError as exc:
            raise RecorderUnavailable(f"recording a person's input needs python-xlib (the gui extra): {exc}") from None
        from conway.observe.screen_targets import _open_display

        try:
            self._local = _open_display(xdisplay, display)
            self._data = _open_display(xdisplay, display)
        except Exception as exc:
            raise RecorderUnavailable(f"cannot open display {display}: {exc}") from None
        if not self._data.has_extension("RECORD"):
            self.close_displays()
            raise RecorderUnavailable(f"display {display} has no RECORD extension: a person's input cannot be recorded")
        self.display = display
        self.assembler = Assembler()
        self.lock = threading.Lock()
        self.started = threading.Event()
        self.error: str | None = None
        self._ctx = self._data.record_create_context(0, [record.AllClients], [{
            "core_requests": (0, 0), "core_replies": (0, 0), "ext_requests": (0, 0, 0, 0),
            "ext_replies": (0, 0, 0, 0), "delivered_events": (0, 0),
            "device_events": (X.KeyPress, X.MotionNotify), "errors": (0, 0),
            "client_started": False, "client_died": False}])
        self._thread = threading.Thread(target=self._run, name="conway-human-input", daemon=True)
        self._thread.start()
        self.started.wait(2.0)

    def _run(self) -> None:
        try:
            self.started.set()
            self._data.record_enable_context(self._ctx, self._on_data)
        except Exception as exc:  # the display went away: the recording ends with what it has
            self.error = f"{type(exc).__name__}: {exc}"

    def _on_data(self, reply: Any) -> None:
        from Xlib import X
        from Xlib.ext import record
        from Xlib.protocol import rq

        if reply.category != record.FromServer or reply.client_swapped or not reply.data:
            return
        data = reply.data
        now = time.monotonic()
        while len(data):
            event, data = rq.EventField(None).parse_binary_value(data, self._data.display, None, None)
            raw = self._decode(event, now, X)
            if raw is not None:
                with self.lock:
                    self.assembler.feed(raw)

    def _decode(self, event: Any, now: float, X: Any) -> RawEvent | None:
        kind = {X.ButtonPress: "press", X.ButtonRelease: "release", X.KeyPress: "key",
                X.KeyRelease: "keyup"}.get(event.type)
        if kind is None:
            return None
        if kind in ("press", "release"):
            return RawEvent(kind, now, x=event.root_x, y=event.root_y, button=event.detail)
        shift = bool(event.state & X.ShiftMask)
        mods = tuple(m for m, mask in (("ctrl", X.ControlMask), ("alt", X.Mod1Mask), ("win", X.Mod4Mask))
                     if event.state & mask)
        key, char = self._key_names(event.detail, shift)
        return RawEvent(kind, now, x=event.root_x, y=event.root_y, key=key, char=char, mods=mods)

    def _key_names(self, keycode: int, shift: bool) -> tuple[str, str]:
        from Xlib import XK

        plain = self._local.keycode_to_keysym(keycode, 0)
        sym = self._local.keycode_to_keysym(keycode, 1) if shift else plain
        sym = sym or plain
        name = _keysym_names(XK).get(plain, "")
        if 0x20 <= sym <= 0x7E or 0xA0 <= sym <= 0xFF:
            return name, chr(sym)
        if 0x01000100 <= sym <= 0x0110FFFF:
            return name, chr(sym - 0x01000000)
        return name, ""

    def drain(self) -> list[dict[str, Any]]:
        with self.lock:
            return self.assembler.take(time.monotonic())

    def stop(self) -> list[dict[str, Any]]:
        """End the recording; the actions still pending (typing not yet flushed, a held click)."""
        try:
            time.sleep(0.05)  # the last events already sent reach the data connection
            self._local.record_disable_context(self._ctx)
            self._local.flush()
        except Exception:
            pass
        self._thread.join(2.0)
        try:
            self._local.record_free_context(self._ctx)
        except Exception:
            pass
        self.close_displays()
        with self.lock:
            return self.assembler.finish()

    def close_displays(self) -> None:
        for d in (getattr(self, "_local", None), getattr(self, "_data", None)):
            try:
                if d is not None:
                    d.close()
            except Exception:
                pass
