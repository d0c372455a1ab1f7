"""OSWorld's `compare_htmls` (chrome.py), written afresh on lxml (BeautifulSoup is no dependency): two HTML files
walked node by node in document order, as BeautifulSoup's `recursiveChildGenerator` walks a tree its `lxml`
builder made (the same libxml2 parser: the same elements and text nodes).

The walk yields, in order, the doctype, then each element, its text, its children and each child's tail text;
a comment yields its text. Pairs are compared until the shorter walk ends (OSWorld's `zip`: nodes past the end
of one file are not looked at): two texts must be equal; an element must have the same name, the same text
(all its descendants' text, comments left out, stripped) and the same attributes, a multi-valued attribute
(`class`, `rel` …) read as its list of words as BeautifulSoup reads it; with `ignore_sdnum` an `sdnum` attribute
(LibreOffice's number format) is left out. A file that is missing or not UTF-8 makes OSWorld's function raise:
scored 0, as its runner counts it. An empty file is an empty tree, whose walk ends at once: it scores 1 against
anything, as OSWorld's does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from conway.tasks.metrics.errors import zero_where_osworld_raises
from conway.tasks.metrics.inputs import library

MULTI_VALUED = ("class", "rel", "rev", "accept-charset", "headers", "accesskey", "dropzone")
"""BeautifulSoup's HTML attributes read as lists of words."""


def _walk(element: Any) -> Iterator[Any]:
    etree = library("lxml.etree")
    if isinstance(element, etree._Comment):
        yield element.text or ""
        return
    if isinstance(element, etree._ProcessingInstruction):
        return
    yield element
    if element.text is not None:
        yield element.text
    for child in element:
        yield from _walk(child)
        if child.tail is not None:
            yield child.tail


def _nodes(path: Any) -> Iterator[Any]:
    html = library("lxml.html")
    with open(path, encoding="utf-8") as f:  # as OSWorld opens it: a file that is not UTF-8 raises
        text = f.read()
    if not text.strip():  # BeautifulSoup makes an empty tree of it (lxml refuses it): nothing to walk
        return
    root = html.document_fromstring(text)
    doctype = root.getroottree().docinfo.doctype
    if doctype:
        yield doctype
    yield from _walk(root)


def _attrs(element: Any, ignore_sdnum: bool) -> dict[str, Any]:
    out: dict[str, Any] = {k: (v.split() if k in MULTI_VALUED else v) for k, v in element.attrib.items()}
    if ignore_sdnum:
        out.pop("sdnum", None)
    return out


def _same(a: Any, b: Any, ignore_sdnum: bool) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if a.tag != b.tag or "".join(a.itertext()).strip() != "".join(b.itertext()).strip():
        return False
    return _attrs(a, False) == _attrs(b, False) or (ignore_sdnum and _attrs(a, True) == _attrs(b, True))


@zero_where_osworld_raises
def compare_htmls(html_path1: Any, html_path2: Any, **options: Any) -> float:
    ignore = bool(options.get("ignore_sdnum"))
    for a, b in zip(_nodes(html_path1), _nodes(html_path2)):
        if not _same(a, b, ignore):
            return 0.0
    return 1.0


METRICS: dict[str, Callable[..., float]] = {"compare_htmls": compare_htmls}
