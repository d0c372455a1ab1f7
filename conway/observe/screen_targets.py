"""What is on the screen, for grounding-check's live harvest: accessible nodes and the X window stack.

`atspi_nodes` reads every showing, named accessible node of some
applications (by process id) or of all of them, in a time-limited
subprocess (``_atspi_targets.py``), in screen (input) coordinates.
`window_stack` lists the X11 top-level windows that are viewable, bottom to
top, with their rectangles and process ids, so a caller can tell whether
another window covers a widget. Both say why when they cannot answer;
neither ever raises for a runtime failure.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conway.observe.accessibility import accessibility_problem, snapshot

HELPER = Path(__file__).with_name("_atspi_targets.py")


def atspi_nodes(pids: list[int] | None = None, timeout_s: float = 10.0,
                max_nodes: int = 4000) -> tuple[list[dict[str, Any]], str | None]:
    """(nodes, None) or ([], why not)."""
    problem = accessibility_problem()
    if problem:
        return [], problem
    argv = [sys.executable, str(HELPER), "--max-nodes", str(max_nodes)]
    for pid in pids or []:
        argv += ["--pid", str(pid)]
    env = dict(os.environ)
    if not env.get("DBUS_SESSION_BUS_ADDRESS"):
        bus = Path(env.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}", "bus")
        env["DBUS_SESSION_BUS_ADDRESS"] = f"unix:path={bus}"
    snap = snapshot(timeout_s=timeout_s, helper_argv=argv, env=env, max_chars=200)
    if not snap.ok:
        return [], snap.reason
    return snap.nodes, None


@dataclass(frozen=True)
class Window:
    """A viewable top-level X window: its rectangle in root (input) coordinates and its process ids."""

    xid: int
    rect: tuple[int, int, int, int]
    """(x, y, w, h)"""
    pids: frozenset[int]
    override_redirect: bool


def window_stack(display: str | None = None) -> tuple[list[Window] | None, str | None]:
    """(viewable top-level windows bottom to top, None) or (None, why not)."""
    name = display if display is not None else os.environ.get("DISPLAY")
    if not name:
        return None, "no X display (DISPLAY is not set)"
    try:
        from Xlib import X  # python-xlib (pyautogui's X backend)
        from Xlib import display as xdisplay
    except ImportError:
        return None, "python-xlib is not installed"
    try:
        d = _open_display(xdisplay, name)
    except Exception as exc:
        return None, f"cannot open X display {name}: {exc}"
    try:
        pid_atom = d.intern_atom("_NET_WM_PID")
        root = d.screen().root
        out = []
        for child in root.query_tree().children:  # bottom to top
            try:
                attrs = child.get_attributes()
                if attrs.map_state != X.IsViewable:
                    continue
                g = child.get_geometry()
                pids = set()
                for w in [child, *child.query_tree().children]:
                    prop = w.get_full_property(pid_atom, X.AnyPropertyType)
                    if prop is not None and len(prop.value):
                        pids.add(int(prop.value[0]))
                out.append(Window(xid=child.id, rect=(int(g.x), int(g.y), int(g.width) + 2 * int(g.border_width),
                                                      int(g.height) + 2 * int(g.border_width)),
                                  pids=frozenset(pids), override_redirect=bool(attrs.override_redirect)))
            except Exception:
                continue
        return out, None
    except Exception as exc:
        return None, f"cannot list X windows: {exc}"
    finally:
        try:
            d.close()
        except Exception:
            pass


def _open_display(xdisplay: Any, name: str) -> Any:
    """Xlib's Display; with no Xauthority file, connect without cookies as libX11 does.

    (python3-xlib 0.15, pulled in by pyautogui, raises on a missing ~/.Xauthority.)
    """
    default = Path(os.environ.get("XAUTHORITY") or Path.home() / ".Xauthority")
    if default.exists():
        return xdisplay.Display(name)
    import contextlib
    import io

    saved = os.environ.get("XAUTHORITY")
    os.environ["XAUTHORITY"] = os.devnull
    try:
        # it prints "no xauthority details available" on stdout
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return xdisplay.Display(name)
    finally:
        if saved is None:
            os.environ.pop("XAUTHORITY", None)
        else:
            os.environ["XAUTHORITY"] = saved


def _contains(outer: tuple[int, int, int, int], inner: tuple[float, float, float, float], slack: float = 2) -> bool:
    ox, oy, ow, oh = outer
    ix, iy, iw, ih = inner
    return ix >= ox - slack and iy >= oy - slack and ix + iw <= ox + ow + slack and iy + ih <= oy + oh + slack


def _overlaps(a: tuple[int, int, int, int], b: tuple[float, float, float, float]) -> bool:
    return not (a[0] + a[2] <= b[0] or b[0] + b[2] <= a[0] or a[1] + a[3] <= b[1] or b[1] + b[3] <= a[1])


def occlusion(stack: list[Window], box: tuple[float, float, float, float], pids: set[int],
              window_rect: tuple[int, int, int, int] | None) -> str | None:
    """None when the widget at `box` (input x, y, w, h) is uncovered, else why not.

    Its own window is the topmost one of its process(es) that contains it (or,
    for a toolkit that sets no _NET_WM_PID, the topmost one containing its
    accessible window's rectangle); any viewable window above that overlaps
    the box covers it.
    """
    own = None
    for i in range(len(stack) - 1, -1, -1):
        w = stack[i]
        if not _contains(w.rect, box):
            continue
        if (w.pids & pids) or (not w.pids and window_rect is not None and _contains(w.rect, window_rect, 4)):
            own = i
            break
    if own is None:
        return "its window is not in the X window stack"
    for w in stack[own + 1:]:
        if _overlaps(w.rect, box):
            return f"covered by window 0x{w.xid:x} at {list(w.rect)}"
    return None
