"""`check_highlighted_words` on generated OpenDocument texts, scored as OSWorld's function (docs.py) scores them:
the paragraphs as the gold's, and no span left in a yellow (#ffff00) background; a raise counted 0."""

from __future__ import annotations

import zipfile

import pytest

from conway.tasks.metrics import METRICS
from conway.tasks.metrics.errors import MetricError

NS = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
      'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
      'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
      'xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"')
MANIFEST = ('<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">'
            '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
            '</manifest:manifest>')


def odt(path, body: str, colour: str | None = None) -> str:
    styles = ("" if colour is None else
              f'<style:style style:name="T1" style:family="text"><style:text-properties fo:background-color="{colour}"/>'
              '</style:style>')
    content = (f'<office:document-content {NS}><office:automatic-styles>{styles}</office:automatic-styles>'
               f'<office:body><office:text>{body}</office:text></office:body></office:document-content>')
    with zipfile.ZipFile(path, "w") as package:
        package.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        package.writestr("META-INF/manifest.xml", MANIFEST)
        package.writestr("content.xml", content)
    return str(path)


BODY = '<text:p>Call <text:span text:style-name="T1">now</text:span></text:p>'


def test_highlight_removed_kept_and_text_changed(tmp_path):
    check = METRICS["check_highlighted_words"]
    gold = odt(tmp_path / "gold.odt", "<text:p>Call now</text:p>")
    assert check(odt(tmp_path / "clean.odt", BODY, colour="transparent"), gold) == 1.0
    assert check(odt(tmp_path / "nostyle.odt", "<text:p>Call now</text:p>"), gold) == 1.0
    assert check(odt(tmp_path / "yellow.odt", BODY, colour="#ffff00"), gold) == 0.0
    assert check(odt(tmp_path / "upper.odt", BODY, colour="#FFFF00"), gold) == 1.0  # OSWorld's exact text test
    assert check(odt(tmp_path / "other.odt", "<text:p>Call later</text:p>"), gold) == 0.0


def test_missing_and_malformed(tmp_path):
    check = METRICS["check_highlighted_words"]
    gold = odt(tmp_path / "gold.odt", "<text:p>Call now</text:p>")
    assert check(None, gold) == 0.0 and check(gold, None) == 0.0
    (tmp_path / "bad.odt").write_bytes(b"PK")
    with pytest.raises(MetricError):  # OSWorld's reader raises: an error line, scored 0
        check(str(tmp_path / "bad.odt"), gold)
