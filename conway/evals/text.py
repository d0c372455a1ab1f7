"""Plain-text pieces every report renderer uses: aligned tables and short cell values."""

from __future__ import annotations

from typing import Any


def table(headers: list[str], rows: list[list[Any]]) -> str:
    """A plain text table with aligned columns."""
    cells = [[str(h) for h in headers]] + [["" if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _fmt_point(p: Any) -> str:
    if not p:
        return "-"
    return f"({p[0]:.0f},{p[1]:.0f})"


def _fmt_box(b: Any) -> str:
    if not b:
        return "-"
    return f"[{b[0]},{b[1]}..{b[2]},{b[3]}]"


def _short(text: Any, n: int = 60) -> str:
    s = " ".join(str(text or "").split())
    return s if len(s) <= n else s[: n - 1] + "…"


def _yn(v: Any) -> str:
    return "yes" if v is True else "no" if v is False else "-"
