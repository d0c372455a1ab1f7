"""The page shell shared by every viewer page, and the escaping every piece of text goes through.

Everything that came from the model, the screen or the journal reaches a
page only through `esc` (HTML text and attributes) or `script_json` (data
for the page's script). A Content-Security-Policy with a per-page nonce
stops any script the page did not put there itself, as a second wall.
"""

from __future__ import annotations

import html
import json
import secrets
from functools import lru_cache
from importlib import resources
from typing import Any


def esc(value: Any) -> str:
    """Text or attribute value, escaped (None is empty)."""
    return "" if value is None else html.escape(str(value), quote=True)


def script_json(data: Any) -> str:
    """JSON safe inside a <script> element or a .js file: no `</script>`, no HTML comment, no line separators."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


@lru_cache(maxsize=None)
def asset(name: str) -> str:
    return resources.files("conway.view").joinpath("static", name).read_text(encoding="utf-8")


def num(v: Any, digits: int = 1) -> str:
    """A coordinate or size for an SVG attribute (always a plain number)."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return "0"
    if f != f or f in (float("inf"), float("-inf")):
        return "0"
    return f"{round(f, digits):g}"


def shell(title: str, body: str, *, data_src: str | None = None, body_attrs: dict[str, Any] | None = None,
          token: str | None = None) -> str:
    """A whole page: CSP with a fresh nonce, the stylesheet, the body, the data file and the script."""
    nonce = secrets.token_urlsafe(16)
    csp = ("default-src 'none'; img-src 'self' file: data:; style-src 'unsafe-inline'; "
           f"script-src 'nonce-{nonce}'; connect-src 'self'; base-uri 'none'; form-action 'none'")
    attrs = "".join(f' data-{esc(k)}="{esc(v)}"' for k, v in (body_attrs or {}).items())
    token_meta = f'<meta name="conway-token" content="{esc(token)}">' if token else ""
    data = f'<script nonce="{nonce}" src="{esc(data_src)}"></script>' if data_src else ""
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{esc(csp)}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">{token_meta}'
            f"<title>{esc(title)}</title><style>{asset('viewer.css')}</style></head>\n"
            f"<body{attrs}>\n{body}\n{data}<script nonce=\"{nonce}\">{asset('viewer.js')}</script></body></html>\n")


def facts_table(rows: list[tuple[str, Any]]) -> str:
    """Rows of (name, already-escaped HTML)."""
    return '<table class="facts">' + "".join(f"<tr><th>{esc(k)}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"


def pager(page: int, pages: int, name: str = "page") -> str:
    if pages <= 1:
        return ""
    prev = f'<a rel="prev" href="{page_file(page - 1)}">‹ previous</a>' if page > 1 else '<span>‹ previous</span>'
    nxt = f'<a rel="next" href="{page_file(page + 1)}">next ›</a>' if page < pages else '<span>next ›</span>'
    return f'<nav class="pager">{prev}<span>{esc(name)} {page} of {pages}</span>{nxt}</nav>'


def page_file(page: int) -> str:
    return f"page-{page:04d}.html"
