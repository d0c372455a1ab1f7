"""OSWorld's checks of the accessibility tree (`accessibility_tree` getter's XML): `check_accessibility_tree`
(its general.py: CSS selectors or XPath, each rule's elements present and, where asked, their text matching
exactly or by rapidfuzz's ratio) and `check_left_panel` (its slides.py: Impress's "Slides View" panel is there).

Written afresh from what OSWorld's functions do. Where OSWorld's raises (no tree, XML that does not parse, a rule
with neither `xpath` nor `selectors`, a `text` rule without `exact`, an expression that does not compile or does
not select elements), these raise a MetricError saying which: the score is 0 either way, as OSWorld's runner
counts a raising metric.
"""

from __future__ import annotations

import operator
import xml.etree.ElementTree as ET
from typing import Any

from rapidfuzz import fuzz

from conway.tasks.metrics.errors import MetricError
from conway.tasks.metrics.inputs import library


def _ns(host: str, *extra: str) -> dict[str, str]:
    base = f"https://accessibility.{host}.example.org/ns/"
    names = {"st": "state", "attr": "attributes", "cp": "component", "doc": "document",
             "docattr": "document/attributes", "txt": "text", "val": "value", "act": "action"}
    names.update({e: e for e in extra})
    return {prefix: base + path for prefix, path in names.items()}


NAMESPACES = {"ubuntu": _ns("ubuntu"), "windows": _ns("windows", "class"), "macos": _ns("macos", "role")}
"""The prefixes OSWorld's rules use, per `osname` (its `_accessibility_ns_map`; macOS has no `docattr` there)."""
del NAMESPACES["macos"]["docattr"]


def _parsed(result: Any) -> Any:
    etree = library("lxml.etree")
    if not isinstance(result, (str, bytes)):
        raise MetricError(f"the result is not an accessibility tree's XML: {type(result).__name__}")
    try:
        return etree.fromstring(result.encode("utf-8") if isinstance(result, str) else result)
    except etree.XMLSyntaxError as exc:
        raise MetricError(f"the accessibility tree is not well-formed XML: {exc}") from None


def _selected(tree: Any, rule: dict[str, Any], namespaces: dict[str, str]) -> list[Any]:
    etree = library("lxml.etree")
    if "xpath" not in rule and "selectors" not in rule:
        raise MetricError("an accessibility-tree rule needs `xpath` or `selectors`")
    css = library("lxml.cssselect") if "xpath" not in rule else None  # OSWorld: xpath wins where both are given
    try:
        if css is None:
            found = tree.xpath(rule["xpath"], namespaces=namespaces)
        else:
            found = css.CSSSelector(", ".join(rule["selectors"]), namespaces=namespaces)(tree)
    except (etree.XPathError, ValueError, TypeError, SyntaxError, *((css.SelectorError,) if css else ())) as exc:
        raise MetricError(f"the rule's expression does not apply: {type(exc).__name__}: {exc}") from None
    if not isinstance(found, list):
        raise MetricError(f"the rule's XPath gives a {type(found).__name__}, not elements")
    return found


def _text_score(rule: dict[str, Any], elements: list[Any]) -> float:
    if "exact" not in rule:
        raise MetricError("a rule with `text` needs `exact` (OSWorld reads it without a default)")
    best = 0.0
    for element in elements:
        if not hasattr(element, "text") or isinstance(element, str):
            raise MetricError("the rule selects text, not elements, so it has no element text to compare")
        text = element.text or None
        if rule["exact"]:
            score = float(operator.eq(rule["text"], text))
        else:
            score = fuzz.ratio(rule["text"], text) / 100.0
        best = max(best, score)
    return best


def check_accessibility_tree(result: Any, rules: list[dict[str, Any]], osname: str = "ubuntu") -> float:
    """The product over `rules` of each rule's score: 0 when its `xpath` (or its CSS `selectors`, joined by
    ", ") selects nothing; else 1, or with `text` the best match among the selected elements' text (`exact`:
    equal; else rapidfuzz's ratio / 100)."""
    if osname not in NAMESPACES:
        raise MetricError(f"osname {osname!r} is not one of {', '.join(NAMESPACES)}")
    tree = _parsed(result)
    total = 1.0
    for rule in rules:
        if not isinstance(rule, dict):
            raise MetricError("each accessibility-tree rule must be an object")
        elements = _selected(tree, rule, NAMESPACES[osname])
        if not elements:
            return 0.0
        if "text" in rule:
            total *= _text_score(rule, elements)
    return float(total)


def check_left_panel(accessibility_tree: Any) -> float:
    """1 when the tree holds a `document-frame` named "Slides View" (Impress's slide panel is open), else 0;
    read with the standard library's ElementTree, as OSWorld's does."""
    if not isinstance(accessibility_tree, (str, bytes)):
        raise MetricError(f"the result is not an accessibility tree's XML: {type(accessibility_tree).__name__}")
    try:
        root = ET.fromstring(accessibility_tree)
    except ET.ParseError as exc:
        raise MetricError(f"the accessibility tree is not well-formed XML: {exc}") from None
    return float(any(frame.attrib.get("name") == "Slides View" for frame in root.iter("document-frame")))


METRICS = {"check_accessibility_tree": check_accessibility_tree, "check_left_panel": check_left_panel}
