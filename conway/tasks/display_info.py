"""Getters on the task's display: its size and an application's window size (OSWorld's `vm_screen_size` and
`vm_window_size`, which its VM's server reads through Xlib), read here with xdotool inside the sandbox on the
task's display."""

from __future__ import annotations

import re
from typing import Any

from conway.tasks.env import TaskEnv

XDOTOOL_TIMEOUT_S = 10.0


def _xdotool(env: TaskEnv, *args: str) -> str:
    try:
        done = env.run(["xdotool", *args], timeout_s=XDOTOOL_TIMEOUT_S)
    except OSError as exc:
        raise RuntimeError(f"xdotool could not start: {exc.strerror or exc}") from None
    if done.timed_out:
        raise TimeoutError(f"xdotool {args[0]} did not finish within {XDOTOOL_TIMEOUT_S:g} s")
    return done.stdout if done.returncode == 0 else ""


def vm_screen_size(env: TaskEnv, config: dict[str, Any]) -> dict[str, int]:
    """{width, height} of the display in pixels."""
    found = re.fullmatch(r"\s*(\d+)\s+(\d+)\s*", _xdotool(env, "getdisplaygeometry"))
    if found is None:
        raise RuntimeError("xdotool could not read the display's size")
    return {"width": int(found.group(1)), "height": int(found.group(2))}


def vm_window_size(env: TaskEnv, config: dict[str, Any]) -> dict[str, int] | None:
    """{width, height} of the first visible window whose WM_CLASS class or instance is `app_class_name` (letter
    case ignored, as OSWorld's server matches); None when there is none, as its server answers."""
    pattern = "^" + re.escape(str(config["app_class_name"])) + "$"
    ids: list[str] = []
    for how in ("--class", "--classname"):
        ids += [w for w in _xdotool(env, "search", "--onlyvisible", how, pattern).split() if w not in ids]
    for window in ids:
        found = re.search(r"Geometry:\s*(\d+)x(\d+)", _xdotool(env, "getwindowgeometry", window))
        if found is not None:
            return {"width": int(found.group(1)), "height": int(found.group(2))}
    return None


GETTERS = {f.__name__: f for f in (vm_screen_size, vm_window_size)}
