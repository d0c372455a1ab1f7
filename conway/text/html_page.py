"""What an HTML error page says, without its markup: a server's 404 or 501 page goes into one error line.

A model server behind a proxy, or a plain web server at the wrong URL, answers
an error with an HTML page. Its markup is noise in a one-line error; its words
("Unsupported method ('POST')") are the reason. Standard library only.
"""

from __future__ import annotations

from html.parser import HTMLParser

_SKIPPED = {"script", "style", "head"}
"""Elements whose text is no part of what the page says (the title repeats the heading, when there is one)."""


class _Words(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.words: list[str] = []
        self.title: list[str] = []
        self._skipping: list[str] = []
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in _SKIPPED:
            self._skipping.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif self._skipping and self._skipping[-1] == tag:
            self._skipping.pop()

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title.append(data)
        elif not self._skipping:
            self.words.append(data)


def looks_like_html(text: str) -> bool:
    head = text.lstrip()[:200].lower()
    return head.startswith(("<!doctype html", "<html")) or "<body" in head or "<title" in head


def page_text(html: str) -> str:
    """The words an HTML page shows, whitespace collapsed (its title when the body has none)."""
    parser = _Words()
    try:
        parser.feed(html)
        parser.close()
    except Exception:  # html.parser is lenient; whatever it still raises, the markup is not worth a crash
        return " ".join(html.split())
    body = " ".join(" ".join(parser.words).split())
    return body or " ".join(" ".join(parser.title).split())
