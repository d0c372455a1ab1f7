"""Metrics on what a browser shows (the active tab's URL, the open tabs), as OSWorld's chrome.py scores them.

The values come from Chrome getters (`active_tab_info`, `active_url_from_accessTree`, `open_tabs_info`): a URL
text or a `{url, ...}` mapping, or a list of such mappings.
"""

from __future__ import annotations

import ipaddress
import itertools
import re
from typing import Any
from urllib.parse import ParseResult, urlparse, urlunparse

SECOND_LEVEL = frozenset({"co", "com", "org", "net", "ac", "gov", "edu", "ne", "or", "go", "gob", "nic", "mil"})
"""Labels that sit under a two-letter country code as part of its public suffix (`co.uk`, `com.sg`)."""


def _url_of(value: Any) -> Any:
    return value.get("url") if isinstance(value, dict) else value


def is_expected_url_pattern_match(result: Any, rules: dict[str, Any]) -> float:
    """Every regex of `expected` is found (re.search) in the URL: the result text, or its `url` (OSWorld's
    is_expected_url_pattern_match). An empty result, or a mapping without `url`, scores 0; an invalid pattern
    raises in OSWorld and scores 0 here."""
    if not result:
        return 0.0
    if not isinstance(result, str) and not (isinstance(result, dict) and "url" in result):
        return 0.0
    url = result if isinstance(result, str) else result["url"]
    try:  # a url that is not text passes no pattern (re.search raises), but an empty pattern list all the same
        return float(all(re.search(pattern, url) for pattern in rules["expected"]))
    except (re.error, TypeError):
        return 0.0


def _registered_name(host: str) -> tuple[str, str]:
    """(subdomain, domain) of a host with its public suffix dropped, as OSWorld gets them from tldextract. Without
    the public suffix list (tldextract fetches it, and is no dependency here), a suffix is the last label, with the
    label before it when the last is a country code and that one is a usual second level (`co.uk`, `com.sg`); an
    IP address, `localhost` or a one-label name has none."""
    host = host.rsplit("@", 1)[-1].split(":", 1)[0] if not host.startswith("[") else host
    try:
        ipaddress.ip_address(host.strip("[]"))
        return "", host
    except ValueError:
        pass
    labels = host.split(".")
    if len(labels) < 2 or not labels[-1].isalpha():
        return ".".join(labels[:-1]), labels[-1]
    cut = 2 if len(labels) > 2 and len(labels[-1]) == 2 and labels[-2] in SECOND_LEVEL else 1
    names = labels[:-cut]
    return ".".join(names[:-1]), names[-1]


def _normal_url(url: str) -> str:
    if not re.match(r"^[a-zA-Z][a-zA-Z0-9+\-.]*://", url):  # no scheme: read as host and path, not a bare path
        url = "http://" + url
    parsed = urlparse(url)
    subdomain, domain = _registered_name(parsed.netloc.lower())
    if subdomain == "www":
        subdomain = ""
    return urlunparse(ParseResult(scheme=parsed.scheme.lower(), netloc=f"{subdomain}.{domain}" if subdomain else domain,
                                  path="" if parsed.path == "/" else parsed.path, params=parsed.params,
                                  query=parsed.query, fragment=parsed.fragment))


def same_url(a: Any, b: Any) -> bool:
    """Two URLs equal once normalised as OSWorld's `compare_urls` (metrics/utils.py): scheme and host lower-cased,
    a lone `www` and the public suffix dropped (`airbnb.com` = `www.airbnb.com.sg`), `/` as no path; query and
    fragment kept."""
    if a is None or b is None:
        return a == b
    return _normal_url(a) == _normal_url(b)


def is_expected_tabs(result: Any, rules: dict[str, Any]) -> float:
    """The open tabs' URLs are the rule's `urls` (`type: url`): as many, and each expected one equal (`same_url`)
    to some open tab, in any order (OSWorld's is_expected_tabs). No tabs, or another type, scores 0."""
    if not result or rules.get("type") != "url":
        return 0.0
    try:
        actual = [tab["url"] for tab in result]
        expected = list(rules["urls"])
        if len(expected) != len(actual):
            return 0.0
        return float(all(any(same_url(e, a) for a in actual) for e in expected))
    except (TypeError, KeyError, AttributeError, ValueError):  # a malformed tab list makes OSWorld's function raise
        return 0.0


def is_expected_active_tab(result: Any, rules: dict[str, Any]) -> float:
    """The active tab's URL (the text, or its `url`) equals the rule's `url` (`type: url`) by `same_url`, as
    OSWorld's is_expected_active_tab. No tab, or another type, scores 0."""
    if not result or rules.get("type") != "url":
        return 0.0
    try:
        return float(same_url(rules["url"], _url_of(result)))
    except (TypeError, AttributeError, ValueError):
        return 0.0


def is_expected_active_tab_approximate(result: Any, rules: dict[str, Any]) -> float:
    """The active tab's URL equals the rule's `url` once each loses its query string, as OSWorld's
    is_expected_active_tab_approximate (no other normalising); a URL that is not text raises there: 0."""
    if not result or rules.get("type") != "url":
        return 0.0
    try:
        actual, expected = _url_of(result), rules["url"]
        return float(urlunparse(urlparse(expected)._replace(query="")) ==
                     urlunparse(urlparse(actual)._replace(query="")))
    except (TypeError, AttributeError, ValueError, KeyError):
        return 0.0


def is_expected_search_query(result: Any, rules: dict[str, Any]) -> float:
    """`expect.pattern` is found (re.search) in the active tab's `url`, as OSWorld's is_expected_search_query."""
    if not result:
        return 0.0
    try:
        return float(re.search(rules["expect"]["pattern"], result["url"]) is not None)
    except (TypeError, KeyError, re.error):
        return 0.0


def is_added_to_steam_cart(result: Any, rules: dict[str, Any]) -> float:
    """Every one of `items` is in the page's `content` (the `page_info` getter), as OSWorld's is_added_to_steam_cart."""
    try:
        content = result["content"]  # read first, as OSWorld does: no page raises even with no items
        return float(all(item in content for item in rules["items"]))
    except (TypeError, KeyError):
        return 0.0


def check_font_size(result: Any, rules: dict[str, Any]) -> float:
    """The browser's `default_font_size` equals `value` (`type: value`) or lies strictly between `min` and `max`
    (`type: range`), as OSWorld's check_font_size; another type, or a result without the size, raises there and
    scores 0 here."""
    try:
        size = result["default_font_size"]
        if rules["type"] == "value":
            return float(size == rules["value"])
        if rules["type"] == "range":
            return float(rules["min"] < size < rules["max"])
    except (TypeError, KeyError):
        return 0.0
    return 0.0


def _bar_children(roots: Any, kind: str) -> list[Any]:
    return [b for b in roots["bookmark_bar"]["children"] if b["type"] == kind]


def _liked_authors(roots: Any, wanted: list[Any]) -> float:
    """A bookmark-bar folder `Liked Authors` whose URLs are, as a set, one pick from each of `wanted` (a URL, or a
    list of alternatives)."""
    bar = roots["bookmark_bar"]["children"]  # searched lazily, as OSWorld's next(): items after the folder go unread
    folder = next((b for b in bar if b["type"] == "folder" and b["name"] == "Liked Authors"), None)
    if folder is None:
        return 0.0
    have = {b["url"] for b in folder["children"] if b["type"] == "url"}
    choices = [[u] if isinstance(u, str) else u for u in wanted]
    return float(any(set(pick) == have for pick in itertools.product(*choices)))


def is_expected_bookmarks(result: Any, rules: dict[str, Any]) -> float:
    """The bookmarks' roots (the `bookmarks` getter) against the rule, as OSWorld's is_expected_bookmarks:
    `bookmark_bar_folders_names` (the bar's folder names, as a set, are `names`), `bookmark_bar_websites_urls`
    (its URLs, as a set, are `urls`), `liked_authors_websites_urls`. No bookmarks score 0; another type, or roots
    without a bookmark bar, raise there and score 0 here."""
    if not result:
        return 0.0
    try:
        kind = rules["type"]
        if kind == "bookmark_bar_folders_names":
            return float({b["name"] for b in _bar_children(result, "folder")} == set(rules["names"]))
        if kind == "bookmark_bar_websites_urls":
            return float({b["url"] for b in _bar_children(result, "url")} == set(rules["urls"]))
        if kind == "liked_authors_websites_urls":
            return _liked_authors(result, rules["urls"])
    except (TypeError, KeyError, AttributeError):
        return 0.0
    return 0.0


def _entry_matches(content: str, key: str, wanted: str, fold: bool) -> bool:
    """`key=wanted` as a whole line, or some `key=` line whose value holds `wanted` or is held by it (letter case
    ignored when `fold`; an empty value is held by any text, as in OSWorld's test)."""
    if f"{key}={wanted}\n" in content:
        return True
    norm = str.lower if fold else str
    for line in content.split("\n"):
        if line.startswith(key + "="):
            have = line[len(key) + 1:]
            if have == wanted or norm(wanted) in norm(have) or norm(have) in norm(wanted):
                return True
    return False


def is_shortcut_on_desktop(result: Any, rules: dict[str, Any]) -> float:
    """Some Desktop shortcut (the `shortcuts_on_desktop` getter: name → text) has the rule's `name` (`type: name`,
    letter case ignored) or `exec` (`type: exec`) as its entry, or one that holds it or is held by it (OSWorld's
    is_shortcut_on_desktop). Another type raises there and scores 0 here."""
    try:
        kind = rules["type"]
        if kind not in ("name", "exec"):
            return 0.0
        key, wanted = ("Name", rules["name"]) if kind == "name" else ("Exec", rules["exec"])
        return float(any(_entry_matches(text, key, wanted, kind == "name") for text in result.values()))
    except (TypeError, KeyError, AttributeError):
        return 0.0


def check_history_deleted(result: Any, rules: dict[str, Any]) -> float:
    """No visited URL (column 0 of the `history` getter's rows) holds any of the rule's `keywords` (`type:
    keywords`), as OSWorld's check_history_deleted. No history (None) or another type raises there: 0 here."""
    try:
        if rules["type"] != "keywords":
            return 0.0
        urls = [row[0] for row in result]
        return float(not any(k in url for k in rules["keywords"] for url in urls))
    except (TypeError, KeyError, IndexError):
        return 0.0


def is_cookie_deleted(result: Any, rules: dict[str, Any]) -> float:
    """No cookie's host (column 1 of the `cookie_data` getter's rows) is one of the rule's `domains` (`type:
    domains`) by `same_url`, as OSWorld's is_cookie_deleted. No cookie store (None) or another type: 0."""
    try:
        if rules["type"] != "domains":
            return 0.0
        hosts = [row[1] for row in result]
        return float(not any(same_url(d, h) for d in rules["domains"] for h in hosts))
    except (TypeError, KeyError, IndexError, AttributeError):
        return 0.0


EXTENSION_ALIASES = ({"Zoom Chrome Extension", "Zoom for Google Chrome"},)
"""Names one extension has had in the Chrome Web Store, taken as one (as OSWorld's metric does)."""


def _extension_name(name: Any) -> Any:
    for group in EXTENSION_ALIASES:
        if name in group:
            return min(group)
    return name


def is_expected_installed_extensions(result: Any, rules: dict[str, Any]) -> float:
    """Every name of `expected` is among the installed extensions' names, aliases taken as one (OSWorld's
    is_expected_installed_extensions). None installed scores 0."""
    if not result:
        return 0.0
    try:
        return float({_extension_name(n) for n in rules["expected"]} <= {_extension_name(n) for n in result})
    except TypeError:  # a name that cannot be hashed: OSWorld's set raises
        return 0.0


METRICS = {f.__name__: f for f in (is_expected_url_pattern_match, is_expected_tabs, is_expected_active_tab,
                                   check_font_size, is_expected_bookmarks, is_expected_installed_extensions,
                                   is_shortcut_on_desktop, check_history_deleted, is_cookie_deleted,
                                   is_expected_active_tab_approximate, is_expected_search_query, is_added_to_steam_cart)}
