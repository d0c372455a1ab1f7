"""Actions drawn on a screenshot, in its own pixel space (an SVG whose viewBox is the captured size).

The SVG lies over the image at the same size, so a click at (x, y) in
captured-screenshot pixels is drawn at exactly that pixel whether the image
is shown as a thumbnail or at full size.
"""

from __future__ import annotations

import math
from typing import Any

from conway.view.page import esc, num

POINT_TYPES = ("click", "double_click", "triple_click", "right_click", "move", "drag", "scroll")


def _point(a: dict[str, Any], kx: str = "x", ky: str = "y") -> tuple[float, float] | None:
    try:
        if a.get(kx) is None or a.get(ky) is None:
            return None
        x, y = float(a[kx]), float(a[ky])
    except (TypeError, ValueError):
        return None
    return (x, y) if math.isfinite(x) and math.isfinite(y) else None


def _arrow(x0: float, y0: float, x1: float, y1: float, head: float) -> str:
    ang = math.atan2(y1 - y0, x1 - x0)
    pts = [(x1, y1)] + [(x1 - head * math.cos(ang + s * 0.45), y1 - head * math.sin(ang + s * 0.45)) for s in (-1, 1)]
    line = f'<line x1="{num(x0)}" y1="{num(y0)}" x2="{num(x1)}" y2="{num(y1)}"/>'
    return (line.replace("<line", '<line class="halo"') + line +
            '<polygon class="head" points="' + " ".join(f"{num(px)},{num(py)}" for px, py in pts) + '"/>')


def crosshair(x: float, y: float, r: float) -> str:
    lines = (f'<line x1="{num(x - 2 * r)}" y1="{num(y)}" x2="{num(x - r / 2)}" y2="{num(y)}"/>'
             f'<line x1="{num(x + r / 2)}" y1="{num(y)}" x2="{num(x + 2 * r)}" y2="{num(y)}"/>'
             f'<line x1="{num(x)}" y1="{num(y - 2 * r)}" x2="{num(x)}" y2="{num(y - r / 2)}"/>'
             f'<line x1="{num(x)}" y1="{num(y + r / 2)}" x2="{num(x)}" y2="{num(y + 2 * r)}"/>')
    ring = f'<circle cx="{num(x)}" cy="{num(y)}" r="{num(r)}"/>'
    return (ring.replace("<circle", '<circle class="halo"') + lines.replace("<line", '<line class="halo"') + ring +
            lines + f'<circle class="dot" cx="{num(x)}" cy="{num(y)}" r="{num(max(r / 4, 1.5))}"/>')


def action_mark(a: dict[str, Any], size: tuple[int, int], cls: str = "", n: int | None = None) -> str:
    """SVG for one action (empty when it has no place on the screen)."""
    w, h = size
    r = max(w, h) / 70
    t = str(a.get("type", ""))
    p = _point(a)
    extra = f' data-n="{n}"' if n is not None else ""
    if t == "drag" and p and (q := _point(a, "to_x", "to_y")):
        body = crosshair(*p, r * 0.6) + _arrow(p[0], p[1], q[0], q[1], r * 1.2)
    elif t == "scroll":
        x, y = p or (w / 2, h / 2)
        dy, dx = float(a.get("dy") or 0), float(a.get("dx") or 0)
        length = min(max(w, h) / 5, max(r * 3, (abs(dy) + abs(dx)) * r))
        # positive dy scrolls up (the content moves down): the arrow points the way the view moves
        ang = math.atan2(-dy, dx) if (dx or dy) else -math.pi / 2
        body = (f'<circle class="dot" cx="{num(x)}" cy="{num(y)}" r="{num(r / 3)}"/>'
                + _arrow(x, y, x + length * math.cos(ang), y + length * math.sin(ang), r * 1.2))
    elif p and t in POINT_TYPES:
        body = crosshair(*p, r)
    else:
        return ""
    data = "".join(f' data-{k}="{num(a[k], 2)}"' for k in ("x", "y", "to_x", "to_y") if a.get(k) is not None)
    classes = " ".join(c for c in ("mark", cls, f"act-{t}") if c)
    return f'<g class="{esc(classes)}"{data}{extra}>{body}</g>'


def target_box(box: Any, pixels: bool = True) -> str:
    """A target's box (x0, y0, x1, y1): whole pixels x0..x1 inclusive (`pixels`), else the span x0 to x1."""
    try:
        x0, y0, x1, y1 = (float(v) for v in box)
    except (TypeError, ValueError):
        return ""
    extra = 1 if pixels else 0
    attrs = f'x="{num(x0)}" y="{num(y0)}" width="{num(x1 - x0 + extra)}" height="{num(y1 - y0 + extra)}"'
    return f'<rect class="target-halo" {attrs}/><rect class="target" {attrs}/>'


def svg(size: tuple[int, int], content: str) -> str:
    w, h = size
    return (f'<svg class="overlay" viewBox="0 0 {int(w)} {int(h)}" preserveAspectRatio="none" '
            f'aria-hidden="true">{content}</svg>')


def caption(a: dict[str, Any]) -> str:
    """Words for what a picture cannot show: typed text, keys, waits, commands."""
    t = a.get("type")
    if t == "type":
        return f"types “{a.get('text', '')}”"
    if t == "key":
        return f"presses {a.get('key', '')}"
    if t == "hotkey":
        return "presses " + "+".join(str(k) for k in a.get("keys") or [])
    if t == "scroll":
        return f"scrolls dy={a.get('dy', 0)} dx={a.get('dx', 0)}"
    if t == "wait":
        return "waits" + (f" {a['seconds']:g} s" if isinstance(a.get("seconds"), (int, float)) else "")
    if t == "finish":
        return f"reports {a.get('status')}: {a.get('message', '')}"
    if t == "drag":
        return f"drags ({a.get('x')}, {a.get('y')}) → ({a.get('to_x')}, {a.get('to_y')})"
    if t in POINT_TYPES:
        return f"{t.replace('_', ' ')} at ({a.get('x')}, {a.get('y')})"
    return summary(a)


def summary(a: dict[str, Any]) -> str:
    """`type(k=v, …)` like the action's own summary."""
    args = ", ".join(f"{k}={v!r}" for k, v in a.items() if k != "type" and v is not None)
    return f"{a.get('type', '?')}({args})"


def frame(url: str | None, why: str, size: tuple[int, int], content: str, label: str) -> str:
    """A report case's picture: the image (or why there is none) with `content` drawn over it, and a caption."""
    pic = (f'<img loading="lazy" src="{esc(url)}" data-full="{esc(url)}" data-thumb="{esc(url)}" alt="{esc(label)}">'
           if url else f'<div class="why">{esc(why or "no image")}</div>')
    return (f'<figure class="shot"><div class="frame" style="aspect-ratio:{size[0]}/{size[1]}" data-w="{size[0]}" '
            f'data-h="{size[1]}">{pic}{svg(size, content)}</div><figcaption>{esc(label)}</figcaption></figure>')
