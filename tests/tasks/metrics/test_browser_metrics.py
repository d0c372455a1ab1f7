"""The browser metrics on generated tab values, each with the score OSWorld's chrome.py gives."""

from __future__ import annotations

import pytest

from conway.tasks.metrics import METRICS
from conway.tasks.metrics.browser import (
    is_expected_active_tab,
    is_expected_tabs,
    is_expected_url_pattern_match,
    same_url,
)


def test_the_metrics_are_registered():
    for fn in (is_expected_url_pattern_match, is_expected_tabs, is_expected_active_tab):
        assert METRICS[fn.__name__] is fn


@pytest.mark.parametrize(("result", "patterns", "score"), [
    ("https://www.united.com/en/us/checked-bag-fee-calculator/any", ["united\\.com/en/us/checked-bag-fee-calculator(/.*)?"], 1.0),
    ({"title": "FAQ", "url": "https://x.org/Ticket-Delivery-FAQs"}, ["Ticket-Delivery-FAQs"], 1.0),
    ("https://scholar.google.com/citations?hl=en&user=qRAQ5BsAAAAJ", ["https://scholar.google.com/citations",
                                                                      "user=qRAQ5BsAAAAJ"], 1.0),
    ("https://scholar.google.com/citations?hl=en", ["https://scholar.google.com/citations", "user=qRAQ5BsAAAAJ"], 0.0),
    ("chrome://settings/appearance", ["^chrome://settings/appearance/?$"], 1.0),
    ("chrome://settings/appearance/fonts", ["^chrome://settings/appearance/?$"], 0.0),
    ("https://a.com", [], 1.0),
    ("", ["a"], 0.0), (None, ["a"], 0.0), ({}, ["a"], 0.0),
    ({"title": "no url"}, ["a"], 0.0), ({"url": None}, ["a"], 0.0), (["https://a.com"], ["a"], 0.0),
    ("https://a.com", ["("], 0.0),  # an invalid pattern raises in OSWorld: 0
    ({"url": None}, [], 1.0),  # no pattern to search for: OSWorld passes even a url that is not text
])
def test_is_expected_url_pattern_match(result, patterns, score):
    assert is_expected_url_pattern_match(result, {"expected": patterns}) == score


@pytest.mark.parametrize(("a", "b", "same"), [
    ("https://www.airbnb.com", "https://airbnb.com/", True),
    ("https://www.airbnb.com", "https://www.airbnb.com.sg", True),  # the public suffix is dropped
    ("https://www.bbc.co.uk/news", "https://bbc.com/news", True),
    ("https://github.com", "github.com", False),  # http is assumed without a scheme
    ("https://docs.python.org/3/", "https://docs.python.org/3", False),  # only a lone / counts as no path
    ("https://docs.python.org/3/", "https://www.python.org/3/", False),
    ("https://a.com/?q=1", "https://a.com/?q=2", False),
    ("HTTPS://WWW.Apple.com/", "https://www.apple.com", True),
    ("file:///home/user/Desktop/a.html", "file:///home/user/Desktop/a.html", True),
    (None, None, True), (None, "https://a.com", False),
])
def test_same_url(a, b, same):
    assert same_url(a, b) is same


def test_is_expected_tabs():
    rules = {"type": "url", "urls": ["https://www.lonelyplanet.com", "https://www.airbnb.com",
                                     "https://www.tripadvisor.com"]}
    tabs = [{"title": t, "url": u} for t, u in (("Airbnb", "https://www.airbnb.com/"),
                                                ("LP", "https://www.lonelyplanet.com/"),
                                                ("TA", "https://www.tripadvisor.com/"))]
    assert is_expected_tabs(tabs, rules) == 1.0  # any order
    assert is_expected_tabs(tabs[:2], rules) == 0.0
    assert is_expected_tabs([*tabs, {"url": "chrome://newtab/"}], rules) == 0.0  # one tab too many
    assert is_expected_tabs([*tabs[:2], {"url": "https://www.booking.com/"}], rules) == 0.0
    assert is_expected_tabs([], rules) == 0.0 and is_expected_tabs(None, rules) == 0.0
    assert is_expected_tabs(tabs, {**rules, "type": "title"}) == 0.0
    assert is_expected_tabs([{"title": "no url"}] * 3, rules) == 0.0


def test_is_expected_active_tab():
    rules = {"type": "url", "url": "https://www.drugs.com/"}
    assert is_expected_active_tab({"url": "https://drugs.com"}, rules) == 1.0
    assert is_expected_active_tab("https://www.drugs.com", rules) == 1.0
    assert is_expected_active_tab("https://www.drugs.com/sfx", rules) == 0.0
    assert is_expected_active_tab({"title": "no url"}, rules) == 0.0
    assert is_expected_active_tab(None, rules) == 0.0 and is_expected_active_tab("", rules) == 0.0
    assert is_expected_active_tab("https://www.drugs.com", {**rules, "type": "title"}) == 0.0


def test_check_font_size():
    from conway.tasks.metrics.browser import check_font_size
    assert check_font_size({"default_font_size": 16}, {"type": "value", "value": 16}) == 1.0
    assert check_font_size({"default_font_size": 20}, {"type": "value", "value": 16}) == 0.0
    assert check_font_size({"default_font_size": 20}, {"type": "range", "min": 16, "max": 24}) == 1.0
    assert check_font_size({"default_font_size": 16}, {"type": "range", "min": 16, "max": 24}) == 0.0  # strictly
    assert check_font_size({"default_fixed_font_size": 13}, {"type": "value", "value": 16}) == 0.0  # OSWorld raises
    assert check_font_size(None, {"type": "value", "value": 16}) == 0.0
    assert check_font_size({"default_font_size": 16}, {"type": "other"}) == 0.0


def _bar(*children):
    return {"bookmark_bar": {"children": list(children)}, "other": {"children": []}}


LIKED = {"type": "folder", "name": "Liked Authors", "children": [{"type": "url", "url": "https://a"},
                                                                 {"type": "url", "url": "https://b"}]}


def test_is_expected_bookmarks():
    from conway.tasks.metrics.browser import is_expected_bookmarks
    roots = _bar({"type": "folder", "name": "Favorites", "children": []}, LIKED, {"type": "url", "url": "https://x"})
    assert is_expected_bookmarks(roots, {"type": "bookmark_bar_folders_names", "names": ["Liked Authors",
                                                                                         "Favorites"]}) == 1.0
    assert is_expected_bookmarks(roots, {"type": "bookmark_bar_folders_names", "names": ["Favorites"]}) == 0.0
    assert is_expected_bookmarks(roots, {"type": "bookmark_bar_websites_urls", "urls": ["https://x"]}) == 1.0
    assert is_expected_bookmarks(roots, {"type": "bookmark_bar_websites_urls", "urls": ["https://y"]}) == 0.0
    liked = {"type": "liked_authors_websites_urls", "urls": ["https://a", ["https://c", "https://b"]]}
    assert is_expected_bookmarks(roots, liked) == 1.0  # one of the alternatives
    assert is_expected_bookmarks(roots, {**liked, "urls": ["https://a"]}) == 0.0
    assert is_expected_bookmarks(_bar(), liked) == 0.0  # no such folder
    assert is_expected_bookmarks([], liked) == 0.0 and is_expected_bookmarks({"other": {}}, liked) == 0.0
    assert is_expected_bookmarks(roots, {"type": "other"}) == 0.0
    # an item without a type after the folder goes unread, as OSWorld's lazy search leaves it; before it, 0
    assert is_expected_bookmarks(_bar(LIKED, {"name": "odd"}), {**liked, "urls": ["https://a", "https://b"]}) == 1.0
    assert is_expected_bookmarks(_bar({"name": "odd"}, LIKED), {**liked, "urls": ["https://a", "https://b"]}) == 0.0


def test_is_expected_installed_extensions():
    from conway.tasks.metrics.browser import is_expected_installed_extensions as metric
    assert metric(["Hello", "Zoom for Google Chrome"], {"expected": ["Zoom Chrome Extension"]}) == 1.0  # an alias
    assert metric(["Hello"], {"expected": ["Hello", "Other"]}) == 0.0
    assert metric(["Hello", "Other"], {"expected": []}) == 1.0
    assert metric([], {"expected": ["Hello"]}) == 0.0 and metric(None, {"expected": []}) == 0.0
    assert metric("Google", {"expected": ["G"]}) == 1.0  # the getter's fallback text is read letter by letter there


def test_is_shortcut_on_desktop():
    from conway.tasks.metrics.browser import is_shortcut_on_desktop as metric
    app = "[Desktop Entry]\nName=Play Puzzle Game 2048\nExec=chromium --app=https://play2048.co\n"
    assert metric({"a.desktop": app}, {"type": "name", "name": "Play Puzzle Game 2048"}) == 1.0
    assert metric({"a.desktop": app}, {"type": "name", "name": "play puzzle game"}) == 1.0  # held, case ignored
    assert metric({"a.desktop": app}, {"type": "name", "name": "Sudoku"}) == 0.0
    assert metric({"a.desktop": app}, {"type": "exec", "exec": "chromium --app=https://play2048.co"}) == 1.0
    assert metric({"a.desktop": app}, {"type": "exec", "exec": "CHROMIUM"}) == 0.0  # Exec keeps letter case
    assert metric({"a.desktop": "Name=\n"}, {"type": "name", "name": "Sudoku"}) == 1.0  # an empty name: held by any
    assert metric({}, {"type": "name", "name": "x"}) == 0.0 and metric(None, {"type": "name", "name": "x"}) == 0.0
    assert metric({"a.desktop": app}, {"type": "url", "url": "https://play2048.co"}) == 0.0


def test_check_history_deleted_and_is_cookie_deleted():
    from conway.tasks.metrics.browser import check_history_deleted, is_cookie_deleted
    rows = [("https://www.youtube.com/watch?v=x", "Video", 42), ("https://news.ycombinator.com/", "HN", 43)]
    assert check_history_deleted(rows, {"type": "keywords", "keywords": ["youtube"]}) == 0.0
    assert check_history_deleted(rows[1:], {"type": "keywords", "keywords": ["youtube"]}) == 1.0
    assert check_history_deleted([], {"type": "keywords", "keywords": ["youtube"]}) == 1.0
    assert check_history_deleted(None, {"type": "keywords", "keywords": ["youtube"]}) == 0.0  # OSWorld raises
    assert check_history_deleted(rows, {"type": "other"}) == 0.0
    cookies = [(1, ".amazon.com", "session"), (2, "github.com", "id")]
    assert is_cookie_deleted(cookies, {"type": "domains", "domains": [".amazon.com"]}) == 0.0
    assert is_cookie_deleted(cookies[1:], {"type": "domains", "domains": [".amazon.com"]}) == 1.0
    assert is_cookie_deleted(cookies, {"type": "domains", "domains": ["www.github.com"]}) == 0.0
    assert is_cookie_deleted(None, {"type": "domains", "domains": ["a.com"]}) == 0.0
    assert is_cookie_deleted(cookies, {"type": "names"}) == 0.0


def test_the_active_tab_query_and_page_metrics():
    from conway.tasks.metrics.browser import (
        is_added_to_steam_cart,
        is_expected_active_tab_approximate,
        is_expected_search_query,
    )
    rules = {"type": "url", "url": "https://www.drugs.com/x?a=1"}
    assert is_expected_active_tab_approximate({"url": "https://www.drugs.com/x?b=2"}, rules) == 1.0  # query ignored
    assert is_expected_active_tab_approximate("https://drugs.com/x", rules) == 0.0  # no other normalising
    assert is_expected_active_tab_approximate(None, rules) == 0.0
    assert is_expected_active_tab_approximate("https://www.drugs.com/x", {"type": "title"}) == 0.0
    assert is_expected_search_query({"url": "https://www.google.com/search?q=dogs"}, {"expect": {"pattern": "q=dogs"}}) == 1.0
    assert is_expected_search_query({"url": "https://www.google.com/search?q=cats"}, {"expect": {"pattern": "q=dogs"}}) == 0.0
    assert is_expected_search_query({}, {"expect": {"pattern": "q"}}) == 0.0
    assert is_added_to_steam_cart({"content": "Cart: Dota 2, Half-Life"}, {"items": ["Dota 2", "Half-Life"]}) == 1.0
    assert is_added_to_steam_cart({"content": "Cart: Dota 2"}, {"items": ["Dota 2", "Half-Life"]}) == 0.0
    assert is_added_to_steam_cart(None, {"items": []}) == 0.0  # OSWorld reads the page first, and fails
