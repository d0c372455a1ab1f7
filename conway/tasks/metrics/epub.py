"""OSWorld's `compare_epub` (others.py), written afresh: two EPUB books read as OSWorld reads them and compared
part by part, line by line.

Each book gives, in sorted order of their names, `toc.ncx` without its `navPoint` lines, `content.opf`
without its `dc:identifier` lines, and each top-level `.html` part re-serialised by lxml (line breaks removed,
then pretty-printed); a book that is not a zip gives nothing. The parts are paired in that order, each pair
scored by difflib's ratio of their lines (`diff_text_file`), and the sum divided by the number of the result's
parts (0 when it has none). Where OSWorld's function raises, its runner counts 0, and so does this: a part in a
sub-folder (OSWorld writes each part beside the book without creating the folder), a part that is not UTF-8.
"""

from __future__ import annotations

import difflib
import zipfile
from collections.abc import Callable
from typing import Any

from conway.tasks.metrics.inputs import library


class _Crash(Exception):
    """A book OSWorld's reading raises on."""


def _lines_without(data: bytes, marker: str) -> list[str]:
    return [line for line in data.decode("utf-8").splitlines() if marker not in line]


def _html_lines(data: bytes) -> list[str]:
    html = library("lxml.html")
    text = "".join(ch for ch in data.decode("utf-8") if ch not in "\r\n")
    return html.tostring(html.fromstring(text.encode()), pretty_print=True, encoding="unicode").splitlines()


def _parts(path: str) -> list[list[str]]:
    try:
        book = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        return []
    with book:
        names = book.namelist()
        parts: dict[str, list[str]] = {}
        if "toc.ncx" in names:
            parts["toc.ncx"] = _lines_without(book.read("toc.ncx"), "navPoint")
        if "content.opf" in names:
            parts["content.opf"] = _lines_without(book.read("content.opf"), "dc:identifier")
        for name in names:
            if name.endswith(".html"):
                if "/" in name:
                    raise _Crash(name)
                parts[name] = _html_lines(book.read(name))
    return [parts[k] for k in sorted(parts)]


def compare_epub(result: Any, expected: Any) -> float:
    if result is None:
        return 0.0
    try:
        mine, theirs = _parts(result), _parts(expected)
    except Exception:  # OSWorld raises here (no file, a sub-folder part, not UTF-8, not HTML): scored 0
        return 0.0
    total = sum(difflib.SequenceMatcher(a=a, b=b).ratio() for a, b in zip(mine, theirs))
    return total / len(mine) if mine else 0.0


METRICS: dict[str, Callable[..., float]] = {"compare_epub": compare_epub}
