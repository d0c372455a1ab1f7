"""`compare_epub` on generated books, each scored as OSWorld's function scores them (a raise counted 0)."""

from __future__ import annotations

import zipfile

from helpers.extras import need_extra

from conway.tasks.metrics import METRICS

need_extra("tasks", "lxml")  # the metric reads the tree with lxml, as OSWorld's

TOC = "<ncx>\n<docTitle>Book</docTitle>\n<navPoint id='1'>one</navPoint>\n</ncx>\n"
OPF = "<package>\n<dc:title>Book</dc:title>\n<dc:identifier>urn:{uid}</dc:identifier>\n</package>\n"


def book(path, chapters, uid="a", navpoint="one", extra=None):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("toc.ncx", TOC.replace("one", navpoint))
        z.writestr("content.opf", OPF.format(uid=uid))
        for name, body in chapters.items():
            z.writestr(name, f"<html><body>\n<p>{body}</p>\r\n</body></html>")
        for name, data in (extra or {}).items():
            z.writestr(name, data)
    return str(path)


def test_equal_changed_and_formatting_only(tmp_path):
    epub = METRICS["compare_epub"]
    gold = book(tmp_path / "gold.epub", {"c1.html": "Hello", "c2.html": "World"})
    assert epub(book(tmp_path / "same.epub", {"c1.html": "Hello", "c2.html": "World"}), gold) == 1.0
    # an identifier and the table of contents' entries are left out of the comparison
    assert epub(book(tmp_path / "ids.epub", {"c1.html": "Hello", "c2.html": "World"}, uid="b", navpoint="x"),
                gold) == 1.0
    changed = epub(book(tmp_path / "changed.epub", {"c1.html": "Hello", "c2.html": "Earth"}), gold)
    assert 0.5 < changed < 1.0
    # parts are paired in sorted order: a missing chapter shifts the pairs after it (c1/c1, content.opf/c2.html,
    # toc.ncx/content.opf), as in OSWorld
    assert epub(book(tmp_path / "fewer.epub", {"c1.html": "Hello"}), gold) == 1 / 3


def test_missing_empty_and_malformed(tmp_path):
    epub = METRICS["compare_epub"]
    gold = book(tmp_path / "gold.epub", {"c1.html": "Hello"})
    assert epub(None, gold) == 0.0
    assert epub(str(tmp_path / "none.epub"), gold) == 0.0  # OSWorld raises opening it
    (tmp_path / "notzip.epub").write_text("plain")
    assert epub(str(tmp_path / "notzip.epub"), gold) == 0.0  # no parts: 0
    with zipfile.ZipFile(tmp_path / "empty.epub", "w"):
        pass
    assert epub(str(tmp_path / "empty.epub"), gold) == 0.0
    nested = book(tmp_path / "nested.epub", {"c1.html": "Hello"}, extra={"OEBPS/c2.html": "<p>x</p>"})
    assert epub(nested, gold) == 0.0  # OSWorld cannot write a part in a sub-folder: it raises
    bad = book(tmp_path / "bad.epub", {}, extra={"c1.html": b"\xff\xfe"})
    assert epub(bad, gold) == 0.0
