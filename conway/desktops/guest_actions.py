"""The actuator of a guest desktop: each GUI action as pyautogui code, run by the guest server's /execute the way
OSWorld's `DesktopEnv.step` runs an agent's pyautogui action (`PythonController.execute_python_command`).

The code is written here from the action's validated fields (numbers, key names from the schema's set, text as a
Python literal), never taken from a model's raw answer, so nothing but pyautogui calls reaches the guest.
OSWorld fixes one pyautogui bug before it executes: `<` typed or pressed comes out as `>` on its VM's keymap,
so a `<` is sent as Shift+comma. That fix is made here as the code is written: the text is typed in runs
around each `<`.
"""

from __future__ import annotations

from typing import Any

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
from conway.desktops.guest_client import GuestClient, GuestError, GuestTimeout, GuestUnreachable
from conway.geometry import Convention, ScreenGeometry, captured_to_input, model_point_error
from conway.protocols import DispatchUncertain, Tool, ToolResult

DRAG_DURATION_S = 0.25
"""How long the pointer travels during a drag (the local GUI tool's), so applications see motion events."""
LESS_THAN = 'pyautogui.hotkey("shift", ",")'
"""OSWorld's replacement for a `<` (pyautogui's bug: github.com/asweigart/pyautogui/issues/198)."""


def _typed(text: str) -> list[str]:
    """`typewrite` calls for `text`, each `<` pressed as Shift+comma between them."""
    calls: list[str] = []
    for i, part in enumerate(text.split("<")):
        if i:
            calls.append(LESS_THAN)
        if part:
            calls.append(f"pyautogui.typewrite({part!r})")
    return calls


def _key(name: str) -> str:
    key = canonical_key(name) or name
    return LESS_THAN if key == "<" else f"pyautogui.press({key!r})"


def pyautogui_code(action: _Action, screen: ScreenGeometry) -> str:
    """The pyautogui code that carries out one GUI action on the guest (its input pixels from `screen`)."""
    def at(x: float, y: float) -> tuple[int, int]:
        return captured_to_input(x, y, screen)

    if isinstance(action, (Click, DoubleClick, TripleClick, RightClick, Move)):
        x, y = at(action.x, action.y)
        if isinstance(action, Click):
            return f"pyautogui.click({x}, {y}, button={action.button!r})"
        call = {DoubleClick: "doubleClick", TripleClick: "tripleClick", RightClick: "rightClick",
                Move: "moveTo"}[type(action)]
        return f"pyautogui.{call}({x}, {y})"
    if isinstance(action, Drag):
        (x, y), (tx, ty) = at(action.x, action.y), at(action.to_x, action.to_y)
        return (f"pyautogui.moveTo({x}, {y}); pyautogui.mouseDown(button='left'); "
                f"pyautogui.moveTo({tx}, {ty}, duration={DRAG_DURATION_S}); pyautogui.mouseUp(button='left')")
    if isinstance(action, TypeText):
        return "; ".join(_typed(action.text))
    if isinstance(action, Key):
        return _key(action.key)
    if isinstance(action, Hotkey):
        keys = [canonical_key(k) or k for k in action.keys]
        return "pyautogui.hotkey(" + ", ".join(repr(k) for k in keys) + ")"
    if isinstance(action, Scroll):
        calls = []
        if action.x is not None and action.y is not None:
            calls.append("pyautogui.moveTo({}, {})".format(*at(action.x, action.y)))
        if action.dy:
            calls.append(f"pyautogui.scroll({int(action.dy)})")
        if action.dx:
            calls.append(f"pyautogui.hscroll({int(action.dx)})")
        return "; ".join(calls)
    raise ValueError(f"not a GUI action: {getattr(action, 'type', action)!r}")


class GuestGuiTool(Tool):
    """Pointer and keyboard actions on a guest, through its /execute."""

    name = "gui"
    action_types = GUI_TYPES

    def __init__(self, client: GuestClient, size: tuple[int, int]):
        self.client = client
        self.size = size
        self.sent: list[str] = []
        """The code of every action sent (tests and the journal's detail read it)."""

    def availability(self) -> tuple[bool, str]:
        w, h = self.size
        return True, f"pyautogui on the guest at {self.client.url} ({w}x{h}) through /execute"

    def run(self, action: _Action, screen: ScreenGeometry | None = None) -> ToolResult:
        kind = getattr(action, "type", None)
        if kind not in GUI_TYPES:
            return ToolResult(ok=False, error=f"the gui tool cannot run {kind!r}")
        w, h = self.size
        screen = screen or ScreenGeometry(0, 0, w, h, w, h)
        problem = _problem(action, screen)
        if problem:
            return ToolResult(ok=False, error=f"{kind} rejected: {problem}")
        code = pyautogui_code(action, screen)
        self.sent.append(code)
        try:
            done = self.client.execute_python(code)
        except GuestUnreachable as exc:  # never reached the guest: nothing happened
            return ToolResult(ok=False, error=f"{action.summary()} not sent: {exc}")
        except GuestTimeout as exc:  # the server may still be running it
            raise DispatchUncertain(f"{action.summary()}: {exc}") from None
        except GuestError as exc:
            raise DispatchUncertain(f"{action.summary()} failed after it may have run: {exc}") from None
        if done.returncode != 0:  # pyautogui raised on the guest: its last line, as data
            said = " ".join((done.error.strip().splitlines() or [""])[-1].split())[:200]
            return ToolResult(ok=False, error=f"{action.summary()}: the guest's pyautogui exited {done.returncode}"
                              + (f": {said}" if said else ""))
        return ToolResult(ok=True, output=f"did {action.summary()}", data={"code": code})

    def close(self) -> None:
        pass


def _problem(action: _Action, screen: ScreenGeometry) -> str | None:
    size = screen.captured_size
    if isinstance(action, Scroll) and (action.x is None) != (action.y is None):
        return "scroll needs both x and y, or neither (scroll where the pointer is)"
    if isinstance(action, Scroll) and not action.dx and not action.dy:
        return "scroll needs dx or dy (wheel clicks)"
    for x, y in _points(action):
        problem = model_point_error(x, y, Convention.SCREEN, size, size)
        if problem:
            return problem
    keys = [action.key] if isinstance(action, Key) else list(action.keys) if isinstance(action, Hotkey) else []
    bad = [k for k in keys if canonical_key(k) is None]
    return f"unknown key {bad[0]!r}" if bad else None


def _points(action: Any) -> list[tuple[float, float]]:
    if isinstance(action, Drag):
        return [(action.x, action.y), (action.to_x, action.to_y)]
    x, y = getattr(action, "x", None), getattr(action, "y", None)
    return [] if x is None or y is None else [(x, y)]
