"""HTML for a learning curve (`learning-curve` reports, conway.evals.learning_curve): the curve drawn as an SVG
in the summary (held-out success per round with its 95% interval, train success, and the chance line it must
clear) and one card per round. Drawn inline, so the page needs no image file and no plotting library."""

from __future__ import annotations

from typing import Any

from conway.view.page import esc

W, H, PAD = 480, 220, 36


def _x(i: int, n: int) -> float:
    return PAD + (W - 2 * PAD) * (i / max(1, n - 1))


def _y(v: float) -> float:
    return H - PAD - (H - 2 * PAD) * max(0.0, min(1.0, v))


def chart(points: list[dict[str, Any]], chance: float | None) -> str:
    """The curve as an SVG: x the round, y success in [0, 1]."""
    n = len(points)
    parts = [f'<svg class="curve" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
             f'viewBox="0 0 {W} {H}" role="img" aria-label="learning curve">',
             f'<rect x="0" y="0" width="{W}" height="{H}" fill="white"/>']
    for v in (0.0, 0.5, 1.0):
        parts.append(f'<line x1="{PAD}" y1="{_y(v):.1f}" x2="{W - PAD}" y2="{_y(v):.1f}" stroke="#ddd"/>'
                     f'<text x="4" y="{_y(v) + 4:.1f}" font-size="10">{v:.0%}</text>')
    if chance is not None:
        parts.append(f'<line class="chance" x1="{PAD}" y1="{_y(chance):.1f}" x2="{W - PAD}" y2="{_y(chance):.1f}" '
                     f'stroke="grey" stroke-dasharray="5,4"/><text x="{W - PAD - 70}" y="{_y(chance) - 4:.1f}" '
                     f'font-size="10" fill="grey">chance {chance:.0%}</text>')
    for key, colour in (("train_success", "#1f77b4"), ("held_out_success", "#2ca02c")):
        xy = [(_x(i, n), p.get(key) or {}) for i, p in enumerate(points)]
        path = " ".join(f"{x:.1f},{_y(s.get('rate') or 0.0):.1f}" for x, s in xy)
        parts.append(f'<polyline class="{key}" points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for x, s in xy:
            lo, hi = s.get("ci95") or [None, None]
            if lo is not None and hi is not None:
                parts.append(f'<line x1="{x:.1f}" y1="{_y(lo):.1f}" x2="{x:.1f}" y2="{_y(hi):.1f}" '
                             f'stroke="{colour}" stroke-opacity="0.6"/>')
            parts.append(f'<circle cx="{x:.1f}" cy="{_y(s.get("rate") or 0.0):.1f}" r="3" fill="{colour}"/>')
    for i, p in enumerate(points):
        parts.append(f'<text x="{_x(i, n) - 3:.1f}" y="{H - PAD + 14}" font-size="10">{esc(p.get("round"))}</text>')
    parts.append(f'<text x="{PAD}" y="{H - 6}" font-size="10">round (0: the base) · '
                 '<tspan fill="#2ca02c">held-out</tspan> · <tspan fill="#1f77b4">train</tspan> · bars: 95% CI</text>')
    return "".join(parts) + "</svg>"


def _pct(v: Any) -> str:
    return f"{v:.1%}" if isinstance(v, (int, float)) else "—"


def _rate(s: dict[str, Any]) -> str:
    ci = s.get("ci95") or [None, None]
    return f"{s.get('hits')}/{s.get('n')} = {_pct(s.get('rate'))} (95% CI {_pct(ci[0])}–{_pct(ci[1])})"


def summary_rows(data: dict[str, Any], cases: list[dict[str, Any]]) -> list[tuple[str, str]]:
    s = data.get("summary") or {}
    level = s.get("chance")
    above = ", ".join(f"round {r}" for r in s.get("above_chance") or []) or "no round"
    return [("curve", chart(cases, level)),
            ("chance", esc((f"{_pct(level)} for a policy that acts validly at random" if level is not None
                            else "unknown (a task declares none)") + f"; held-out interval above it: {above}"))]


def card_lines(c: dict[str, Any]) -> str:
    held, train = c.get("held_out_success") or {}, c.get("train_success") or {}
    lines = [("held-out", f"{_rate(held)} · {held.get('verdict') or 'chance unknown'}"),
             ("train", _rate(train)), ("mean reward", str(c.get("mean_reward"))), ("KL to the base", str(c.get("kl")))]
    if c.get("note"):
        lines.append(("note", str(c["note"])))
    return "".join(f'<div class="line"><span class="k">{esc(k)}</span>{esc(v)}</div>' for k, v in lines)
