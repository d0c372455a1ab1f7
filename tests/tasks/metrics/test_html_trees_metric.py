"""`compare_htmls` on generated HTML files, scored as OSWorld's function (BeautifulSoup's walk of the lxml tree)
scores them: equal, a text or attribute changed, formatting only, LibreOffice's `sdnum`, missing, malformed."""

from __future__ import annotations

from helpers.extras import need_extra

from conway.tasks.metrics import METRICS

need_extra("tasks", "lxml")  # the metric reads the tree with lxml, as OSWorld's

PAGE = ('<!DOCTYPE html><html><head><title>Survey</title></head><body>\n<table class="t  wide">'
        '<tr><td sdnum="1033;0;0.00" sdval="12">{cell}</td><td>2021</td></tr></table><!-- exported -->\n'
        '</body></html>')


def page(tmp_path, name, text=PAGE, **kw):
    path = tmp_path / name
    path.write_text(text.format(cell=kw.get("cell", "12.00")) if "{cell}" in text else text, encoding="utf-8")
    return str(path)


def test_equal_changed_and_formatting(tmp_path):
    same = METRICS["compare_htmls"]
    gold = page(tmp_path, "gold.html")
    assert same(page(tmp_path, "copy.html"), gold) == 1.0
    assert same(page(tmp_path, "text.html", cell="13.00"), gold) == 0.0
    # the class's words are a list, as BeautifulSoup reads them: spacing inside the attribute does not count
    assert same(page(tmp_path, "class.html", PAGE.replace('class="t  wide"', 'class="t wide"')), gold) == 1.0
    assert same(page(tmp_path, "attr.html", PAGE.replace("<td>2021", '<td align="left">2021')), gold) == 0.0
    # white space between elements is a text node of its own: formatting alone changes the walk
    assert same(page(tmp_path, "spaced.html", PAGE.replace("<tr>", "\n  <tr>")), gold) == 0.0
    sdnum = page(tmp_path, "sdnum.html", PAGE.replace("1033;0;0.00", "1033;0;#,##0.00"))
    assert same(sdnum, gold) == 0.0 and same(sdnum, gold, ignore_sdnum=True) == 1.0
    # a comment's text is compared as a text node
    assert same(page(tmp_path, "comment.html", PAGE.replace("exported", "saved")), gold) == 0.0
    # OSWorld zips the two walks: what follows the end of the shorter file is not looked at
    longer = page(tmp_path, "longer.html", PAGE.replace("</body>", "<p>more</p></body>"))
    assert same(longer, gold) == 0.0  # the extra paragraph sits where the gold's next node is
    assert same(page(tmp_path, "tail.html", PAGE + "<!-- after -->"), gold) == 1.0


def test_missing_empty_and_malformed(tmp_path):
    same = METRICS["compare_htmls"]
    gold = page(tmp_path, "gold.html")
    assert same(str(tmp_path / "none.html"), gold) == 0.0 and same(None, gold) == 0.0
    (tmp_path / "latin1.html").write_bytes(PAGE.format(cell="12,00 \xe9").encode("latin-1"))
    assert same(str(tmp_path / "latin1.html"), gold) == 0.0  # not UTF-8: OSWorld raises
    (tmp_path / "empty.html").write_text("")
    # BeautifulSoup reads an empty file as an empty tree: the zip of the two walks is empty, and OSWorld's loop
    # ends without a difference
    assert same(str(tmp_path / "empty.html"), gold) == 1.0
