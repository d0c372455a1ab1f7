"""GUI tool: pointer and keyboard input through pyautogui (xdotool for non-ASCII on X11).

Action coordinates are pixels of the *captured screenshot*; the tool maps
them to input coordinates with `conway.geometry.captured_to_input` (HiDPI
scale, monitor origin, clamp, one pixel away from the corners) using the
`ScreenGeometry` of the observation the action was decided on, which the
toolbox hands over with each `run(action, screen)` (without one: the
pyautogui screen, origin 0, scale 1).

Import safety. ``import pyautogui`` connects to the display at import time
and fails in many ways: ``KeyError: 'DISPLAY'`` without a display, an Xlib
``DisplayConnectionError`` with a dead one, an ``XauthError`` when
``~/.Xauthority`` is missing (python-xlib insists on the file; libX11 does
not), ``SystemExit`` without tkinter. The tool therefore checks the display
with a socket connect first, imports pyautogui lazily, catches everything
(except KeyboardInterrupt), and reports one line, ``GUI tools unavailable:
<reason>``, from `availability()` and as the failed result of `run()`.

Every `run()`:

1. validates the action: coordinates inside the captured image (the error
   names the bounds), known key names, text that can be typed here;
2. checks that the display is still there (socket connect, then one pointer
   query on pyautogui's connection; a dead connection is re-opened). If the
   display is gone nothing has happened: ``ToolResult(ok=False)`` with the
   reason;
3. dispatches. pyautogui's corner fail-safe (on by default) raises
   `FailSafeTriggered`; any other failure once input may have been sent
   raises `DispatchUncertain` (never replay it).

pyautogui drops characters it has no key for (all non-ASCII) silently; on
X11 such text goes through ``xdotool type`` instead (ASCII runs still go
through pyautogui, which is much faster). pyautogui's pause after each call
(0.1 s by default) is ``pause_s`` here.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import shutil
import subprocess
import sys
from typing import Any, Iterator

from conway.actions import (
    GUI_TYPES,
    Click,
    DoubleClick,
    Drag,
    Hotkey,
    Key,
    Move,
    RightClick,
    Scroll,
    TripleClick,
    TypeText,
    _Action,
    canonical_key,
)
from conway.geometry import Convention, ScreenGeometry, captured_to_input, model_point_error
from conway.machine.platform import display_problem, x11_platform
from conway.protocols import DispatchUncertain, FailSafeTriggered, Tool, ToolResult
from conway.tools.row import Setup, ToolRow, Unavailable

__all__ = ["GuiTool", "UNAVAILABLE", "load_pyautogui"]

UNAVAILABLE = "GUI tools unavailable"


_X11 = x11_platform()
_conn: dict[str, Any] = {"display": None, "stale": False}
"""pyautogui's X connection is one per process: the display it belongs to, and
whether it may be dead (python-xlib can hang on a dead connection's second
request, so it is reopened instead of retried)."""


@contextlib.contextmanager
def _xauthority_fallback() -> Iterator[None]:
    """Let python-xlib connect when no Xauthority file exists.

    libX11 treats a missing ``~/.Xauthority`` as "no cookies"; python-xlib
    raises instead. Point it at an empty file for the connect only, so child
    processes keep the user's environment. python-xlib then *prints* a
    warning to stdout, which would corrupt machine-readable CLI output: it is
    swallowed.
    """
    if not _X11:
        yield
        return
    path = os.environ.get("XAUTHORITY") or os.path.join(os.environ.get("HOME", ""), ".Xauthority")
    if os.path.isfile(path):
        yield
        return
    old = os.environ.get("XAUTHORITY")
    os.environ["XAUTHORITY"] = os.devnull
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        if old is None:
            os.environ.pop("XAUTHORITY", None)
        else:
            os.environ["XAUTHORITY"] = old


def _describe(exc: BaseException) -> str:
    if isinstance(exc, KeyError) and exc.args == ("DISPLAY",):
        return "DISPLAY is not set (no X display)"
    if isinstance(exc, SystemExit):
        return f"pyautogui exited while importing (code {exc.code!r}; is tkinter installed?)"
    if isinstance(exc, ModuleNotFoundError) and exc.name in ("pyautogui", "Xlib", "mss"):
        return f"{exc.name} is not installed (pip install 'conway[gui]')"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@contextlib.contextmanager
def _display_env(display: str | None) -> Iterator[None]:
    """pyautogui reads ``$DISPLAY`` when it connects: set it for that moment only."""
    if not _X11 or not display or os.environ.get("DISPLAY") == display:
        yield
        return
    old = os.environ.get("DISPLAY")
    os.environ["DISPLAY"] = display
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("DISPLAY", None)
        else:
            os.environ["DISPLAY"] = old


def load_pyautogui(display: str | None = None, *, fresh: bool = False) -> tuple[Any, str | None]:
    """Import pyautogui if the display allows it: ``(module, None)`` or ``(None, reason)``.

    ``display`` defaults to ``$DISPLAY``. pyautogui binds to one display per
    process, at its first successful import. ``fresh``: reconnect when it was
    imported before (a new X server may have taken an old display's name).
    """
    problem = display_problem(display) if _X11 else None
    if problem:
        return None, problem
    want = display or os.environ.get("DISPLAY")
    try:
        with _xauthority_fallback(), _display_env(display):
            known = "pyautogui" in sys.modules
            import pyautogui
            if _X11 and known and (fresh or _conn["display"] not in (None, want)):
                # bound to another display (an earlier task's desktop, maybe gone): a request on that
                # connection can hang, so reconnect to this one before the first
                _rebind(pyautogui)
                _conn.update(display=want, stale=False)
            pyautogui.position()  # one round trip: tried, not guessed
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # KeyError, Xlib errors, SystemExit, ...
        return None, _describe(exc)
    if _X11 and _conn["display"] is None:
        _conn["display"] = want
    return pyautogui, None


def _rebind(pg: Any) -> None:
    """Reopen pyautogui's X connection on `$DISPLAY` (its platform module connects at import)."""
    importlib.reload(pg.platformModule)
    w, h = pg.size()
    pg.FAILSAFE_POINTS[:] = [(0, 0), (0, h - 1), (w - 1, 0), (w - 1, h - 1)]


class GuiTool(Tool):
    """Pointer and keyboard actions on the local display.

    Args:
        pause_s: pyautogui.PAUSE, the sleep after each pyautogui call.
        failsafe: keep pyautogui's corner fail-safe on (raise
            `FailSafeTriggered` when the pointer sits in a screen corner).
        drag_duration_s: how long the pointer travels during a drag (apps
            need motion events between press and release).
        type_interval_s: pause between characters typed through pyautogui.
        xdotool_delay_ms: delay between characters typed by ``xdotool type``
            (non-ASCII; below ~10 ms X clients can miss the remapped key).
        display: the X display to use (default ``$DISPLAY`` at first use).
    """

    name = "gui"
    action_types = GUI_TYPES

    def __init__(
        self,
        pause_s: float = 0.02,
        failsafe: bool = True,
        *,
        drag_duration_s: float = 0.25,
        type_interval_s: float = 0.0,
        xdotool_delay_ms: int = 12,
        display: str | None = None,
    ):
        if pause_s < 0 or drag_duration_s < 0 or type_interval_s < 0 or xdotool_delay_ms < 0:
            raise ValueError("pauses, durations and delays must be >= 0")
        self.pause_s = pause_s
        self.failsafe = failsafe
        self.drag_duration_s = drag_duration_s
        self.type_interval_s = type_interval_s
        self.xdotool_delay_ms = xdotool_delay_ms
        self.display = display
        self._pg: Any = None
        self._reason: str | None = None
        self._chars: frozenset[str] | None = None

    # --- setup -----------------------------------------------------------------

    def _display_name(self) -> str | None:
        return self.display if self.display is not None else os.environ.get("DISPLAY")

    def _load(self) -> str | None:
        """Import pyautogui once; None when ready, else the reason (retried next time)."""
        if self._pg is not None:
            return None
        pg, reason = load_pyautogui(self._display_name(), fresh=True)  # a new tool: a new run, maybe a new X server
        if pg is None:
            self._reason = reason
            return reason
        self._pg, self._reason = pg, None
        if _X11:
            self.display = self._display_name()
            # pyautogui is bound to the display of its first import in this process
            if _conn["display"] != self.display:
                _conn["stale"] = True
        return None

    def _configure(self) -> None:
        pg = self._pg
        pg.PAUSE = self.pause_s
        pg.FAILSAFE = self.failsafe

    def availability(self) -> tuple[bool, str]:
        reason = self._load()
        if reason:
            return False, f"{UNAVAILABLE}: {reason}"
        w, h = self._pg.size()
        notes = [f"pointer and keyboard on {'display ' + str(self.display) if _X11 else sys.platform} ({w}x{h})",
                 f"pause {self.pause_s:g} s", "fail-safe " + ("on" if self.failsafe else "OFF")]
        if _X11 and not shutil.which("xdotool"):
            notes.append("non-ASCII typing unavailable: xdotool not found")
        elif not _X11:
            notes.append("non-ASCII typing not supported on this platform")
        return True, "; ".join(notes)

    def close(self) -> None:
        pass

    # --- run -------------------------------------------------------------------

    def run(self, action: _Action, screen: ScreenGeometry | None = None) -> ToolResult:
        """`screen`: the geometry of the screenshot the action's coordinates refer to (its observation's);
        None maps them onto the pyautogui screen (origin 0, scale 1)."""
        kind = getattr(action, "type", None)
        if kind not in GUI_TYPES:
            return ToolResult(ok=False, error=f"the gui tool cannot run {kind!r}")
        reason = self._load()
        if reason:
            return ToolResult(ok=False, error=f"{UNAVAILABLE}: {reason}")
        lost = self._check_display()
        if lost:
            return ToolResult(ok=False, error=lost)
        self._configure()
        try:
            screen = screen or self._default_screen()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            _conn["stale"] = True
            return ToolResult(ok=False, error=f"display lost before dispatch: {_describe(exc)}")
        problem = self._validate(action, screen)
        if problem:
            return ToolResult(ok=False, error=f"{kind} rejected: {problem}")
        if self.failsafe:
            try:
                self._pg.failSafeCheck()
            except self._pg.FailSafeException as exc:
                raise FailSafeTriggered(_failsafe_message(self._pg)) from exc
        try:
            return self._dispatch(action, screen)
        except self._pg.FailSafeException as exc:
            raise FailSafeTriggered(_failsafe_message(self._pg)) from exc
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            _conn["stale"] = True
            raise DispatchUncertain(f"{action.summary()} failed after input may have been sent: "
                                    f"{_describe(exc)}") from exc

    # --- pre-dispatch ----------------------------------------------------------

    def _check_display(self) -> str | None:
        """None when input can be sent now; else why not (nothing has been sent)."""
        if not _X11:
            return None
        problem = display_problem(self.display)
        if problem:
            _conn["stale"] = True
            return f"display lost before dispatch: {problem}"
        if not _conn["stale"] and _conn["display"] == self.display:  # another tool may have moved it elsewhere
            try:
                self._pg.position()
                return None
            except KeyboardInterrupt:
                raise
            except BaseException:
                _conn["stale"] = True  # python-xlib can hang on a second call: reopen instead
        return self._reconnect()

    def _reconnect(self) -> str | None:
        """Reopen pyautogui's X connection (its platform module connects at import)."""
        pg = self._pg
        try:
            with _xauthority_fallback(), _display_env(self.display):
                _rebind(pg)
                pg.position()
                _conn["display"] = self.display
                self._chars = None
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            return f"display lost before dispatch: cannot reconnect to {self.display}: {_describe(exc)}"
        _conn["stale"] = False
        return None

    def _default_screen(self) -> ScreenGeometry:
        w, h = self._pg.size()
        return ScreenGeometry(0, 0, int(w), int(h), int(w), int(h))

    def _validate(self, action: _Action, screen: ScreenGeometry) -> str | None:
        size = screen.captured_size
        if isinstance(action, Scroll) and (action.x is None) != (action.y is None):
            return "scroll needs both x and y, or neither (scroll where the pointer is)"
        for x, y in _points(action):
            problem = model_point_error(x, y, Convention.SCREEN, size, size)
            if problem:
                return problem
        if isinstance(action, Key):
            return self._key_problem(action.key)
        if isinstance(action, Hotkey):
            for k in action.keys:
                problem = self._key_problem(k)
                if problem:
                    return problem
        if isinstance(action, Scroll) and action.dx == 0 and action.dy == 0:
            return "scroll needs dx or dy (wheel clicks)"
        if isinstance(action, TypeText) and not self._typeable(action.text):
            if _X11:
                return "text has characters pyautogui cannot type and xdotool is not installed"
            return "text has non-ASCII characters, which can only be typed on X11 (xdotool) for now"
        return None

    def _key_name(self, key: str) -> str:
        return canonical_key(key) or key

    def _key_problem(self, key: str) -> str | None:
        k = canonical_key(key)  # the same key set the action schema, its grammars and validator use
        mapping = getattr(self._pg.platformModule, "keyboardMapping", None)
        known = k is not None and (k in self._pg.KEY_NAMES or (len(k) == 1 and k.isalnum() and k.isascii()))
        if known and (mapping is None or mapping.get(k)):
            return None
        return (f"unknown key {key!r} (examples: enter, esc, tab, backspace, delete, up, pagedown, f5, "
                "ctrl, alt, shift, win, a, 1)")

    def _char_ok(self, c: str) -> bool:
        """Whether pyautogui types ``c`` correctly here (else xdotool types it)."""
        if _X11:
            if self._chars is None:
                self._chars = _x11_verified_chars(self._pg)
            return c in self._chars
        mapping = getattr(self._pg.platformModule, "keyboardMapping", None)
        ok = c.isascii() and (c.isprintable() or c in "\n\t")
        return ok and (mapping is None or bool(mapping.get(c)))

    def _typeable(self, text: str) -> bool:
        if all(self._char_ok(c) for c in text):
            return True
        return _X11 and shutil.which("xdotool") is not None

    # --- dispatch --------------------------------------------------------------

    def _to_input(self, x: float, y: float, screen: ScreenGeometry) -> tuple[int, int]:
        return captured_to_input(x, y, screen)

    def _dispatch(self, action: _Action, screen: ScreenGeometry) -> ToolResult:
        pg = self._pg
        if isinstance(action, (Click, DoubleClick, TripleClick, RightClick, Move)):
            ix, iy = self._to_input(action.x, action.y, screen)
            if isinstance(action, Click):
                pg.click(ix, iy, button=action.button)
            elif isinstance(action, DoubleClick):
                pg.doubleClick(ix, iy)
            elif isinstance(action, TripleClick):
                pg.tripleClick(ix, iy)
            elif isinstance(action, RightClick):
                pg.rightClick(ix, iy)
            else:
                pg.moveTo(ix, iy)
            return _done(action, {"input": [ix, iy]})
        if isinstance(action, Drag):
            ix, iy = self._to_input(action.x, action.y, screen)
            tx, ty = self._to_input(action.to_x, action.to_y, screen)
            pg.moveTo(ix, iy)
            pg.mouseDown(button="left")
            try:
                pg.moveTo(tx, ty, duration=self.drag_duration_s)
            finally:
                pg.mouseUp(button="left")  # never leave the button held
            return _done(action, {"input": [ix, iy], "input_to": [tx, ty]})
        if isinstance(action, TypeText):
            how = self._type(action.text)
            return _done(action, {"chars": len(action.text), "via": how})
        if isinstance(action, Key):
            pg.press(self._key_name(action.key))
            return _done(action, {})
        if isinstance(action, Hotkey):
            pg.hotkey(*[self._key_name(k) for k in action.keys], interval=0.0)
            return _done(action, {})
        if isinstance(action, Scroll):
            data: dict[str, Any] = {}
            if action.x is not None and action.y is not None:
                ix, iy = self._to_input(action.x, action.y, screen)
                pg.moveTo(ix, iy)
                data["input"] = [ix, iy]
            if action.dy:
                pg.scroll(action.dy)
            if action.dx:
                pg.hscroll(action.dx)
            return _done(action, data)
        raise AssertionError(f"unhandled GUI action {action.type!r}")  # type: ignore[attr-defined]

    def _type(self, text: str) -> str:
        """Type ``text``: runs pyautogui can type go through it, the rest through xdotool."""
        runs: list[tuple[bool, str]] = []
        for c in text:
            ok = self._char_ok(c)
            if runs and runs[-1][0] == ok:
                runs[-1] = (ok, runs[-1][1] + c)
            else:
                runs.append((ok, c))
        used = set()
        for ok, chunk in runs:
            if ok:
                self._pg.write(chunk, interval=self.type_interval_s)
                used.add("pyautogui")
            else:
                self._xdotool_type(chunk)
                used.add("xdotool")
        return "+".join(sorted(used))

    def _xdotool_type(self, chunk: str) -> None:
        exe = shutil.which("xdotool")
        if exe is None:
            raise RuntimeError("xdotool is no longer installed")
        env = dict(os.environ)
        if self.display:
            env["DISPLAY"] = self.display
        timeout = 10 + len(chunk) * (self.xdotool_delay_ms / 1000 + 0.01) * 2
        proc = subprocess.run([exe, "type", "--delay", str(self.xdotool_delay_ms), "--", chunk],
                              env=env, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"xdotool type exited {proc.returncode}: {proc.stderr.strip()[:200]}")


def _x11_verified_chars(pg: Any) -> frozenset[str]:
    """Characters pyautogui's X11 backend really produces with the server's keymap.

    pyautogui presses the keycode of a character's keysym, with Shift when
    *it* thinks the character is shifted (a US layout guess). Where the
    keymap disagrees (e.g. Xvfb's default map puts ``<`` unshifted on the
    ISO key, so pyautogui types ``>``), the character goes to xdotool.
    """
    mod = pg.platformModule
    mapping = getattr(mod, "keyboardMapping", {})
    display = getattr(mod, "_display", None)
    ok = set()
    for c in mapping:
        if not isinstance(c, str) or len(c) != 1:
            continue
        keycode = mapping.get(c)
        if not keycode:
            continue
        if c in "\n\t":
            ok.add(c)
            continue
        if not (" " <= c <= "~") or display is None:
            continue
        try:
            index = 1 if pg.isShiftCharacter(c) else 0
            if display.keycode_to_keysym(keycode, index) == ord(c):  # Latin-1 keysyms are code points
                ok.add(c)
        except Exception:
            continue
    return frozenset(ok)


def _points(action: _Action) -> list[tuple[float, float]]:
    if isinstance(action, Drag):
        return [(action.x, action.y), (action.to_x, action.to_y)]
    if isinstance(action, Scroll):
        return [] if action.x is None or action.y is None else [(action.x, action.y)]
    x, y = getattr(action, "x", None), getattr(action, "y", None)
    return [] if x is None or y is None else [(x, y)]


def _done(action: _Action, data: dict[str, Any]) -> ToolResult:
    return ToolResult(ok=True, output=f"did {action.summary()}", data=data)


def _failsafe_message(pg: Any) -> str:
    try:
        where = tuple(pg.position())
    except BaseException:
        where = "?"
    return (f"pyautogui fail-safe: the pointer is in a screen corner {where}; the run ends "
            "(move the pointer away from the corners to run again)")


def _make(s: Setup) -> Tool:
    if not s.gui:
        return Unavailable("gui", GUI_TYPES, "the mock policy runs without the desktop")
    return GuiTool(pause_s=s.cfg.gui_pause_s, failsafe=s.cfg.gui_failsafe, display=s.display)


ROW = ToolRow("gui", _make)
