"""compare_docx_files chooses its reader as OSWorld's does, by the two names' endings, letter case counting:
`.docx` with python-docx, `.odt` as odfpy loads it (generated here as a bare OpenDocument package)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from helpers.extras import need_extra

docx = need_extra("tasks", "docx")
pytest.importorskip("rapidfuzz")

from conway.tasks.metrics.documents import compare_docx_files  # noqa: E402
from conway.tasks.metrics.opendocument import odt_paragraphs  # noqa: E402

NAMESPACES = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
              'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
              'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
              'xmlns:xlink="http://www.w3.org/1999/xlink"')
MANIFEST_NS = "urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"


def odt(path: Path, body: str, header: str = "", listed: tuple[str, ...] = ("content.xml", "styles.xml")) -> Path:
    """An OpenDocument text package with `body` inside office:text and `header` in the master page's header."""
    content = (f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {NAMESPACES}>'
               f"<office:body><office:text>{body}</office:text></office:body></office:document-content>")
    styles = (f'<?xml version="1.0" encoding="UTF-8"?><office:document-styles {NAMESPACES}><office:master-styles>'
              f'<style:master-page style:name="Standard"><style:header>{header}</style:header></style:master-page>'
              "</office:master-styles></office:document-styles>")
    entries = "".join(f'<manifest:file-entry manifest:full-path="{name}" manifest:media-type="text/xml"/>'
                      for name in listed)
    manifest = f'<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="{MANIFEST_NS}">{entries}' \
               "</manifest:manifest>"
    with zipfile.ZipFile(path, "w") as package:
        package.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        package.writestr("META-INF/manifest.xml", manifest)
        package.writestr("content.xml", content)
        package.writestr("styles.xml", styles)
    return path


def word(path: Path, *paragraphs: str) -> Path:
    doc = docx.Document()
    for text in paragraphs:
        doc.add_paragraph(text)
    doc.save(path)
    return path


def test_odt_documents_are_compared_as_osworld_reads_them(tmp_path):
    """OSWorld scores a pair of .odt files (Conway refused them): same paragraphs 1, a changed one 0."""
    gold = odt(tmp_path / "gold.odt", "<text:p>First</text:p><text:p>Second <text:span>part</text:span></text:p>")
    same = odt(tmp_path / "same.odt", "<text:p>First</text:p><text:p>Second <text:span>part</text:span></text:p>")
    other = odt(tmp_path / "other.odt", "<text:p>First</text:p><text:p>Second piece</text:p>")
    assert compare_docx_files(str(same), str(gold)) == 1.0
    assert compare_docx_files(str(other), str(gold)) == 0.0
    assert 0.7 < compare_docx_files(str(other), str(gold), content_only=True) < 1.0


def test_odt_paragraph_text_is_what_odfpy_gives_osworld(tmp_path):
    """Each text:p (tables, notes and the header included; headings not), body first; a paragraph's own text and
    its direct spans' text only: text:s, tabs, nested spans and links are left out."""
    body = ('<text:h>Title</text:h><text:p>a <text:span>b <text:span>deep</text:span> c</text:span> d'
            '<text:s/>e<text:tab/>f <text:a xlink:href="https://x">link</text:a> g</text:p>'
            "<text:p>note<text:note><text:note-body><text:p>foot</text:p></text:note-body></text:note> after</text:p>")
    path = odt(tmp_path / "doc.odt", body, header="<text:p>Header</text:p>")
    assert odt_paragraphs(path) == ["a b  c def  g", "note after", "foot", "Header"]
    unlisted = odt(tmp_path / "unlisted.odt", body, header="<text:p>Header</text:p>", listed=("content.xml",))
    assert odt_paragraphs(unlisted) == ["a b  c def  g", "note after", "foot"]


def test_names_osworld_does_not_read_score_0_unopened(tmp_path):
    """OSWorld's test is `endswith(".docx")` / `endswith(".odt")` on both names: an upper-case .DOCX, or a .docx
    beside an .odt, is "unsupported" and scores 0 (Conway lower-cased the suffix and scored the .DOCX 1)."""
    gold = word(tmp_path / "gold.docx", "Same text.")
    upper = word(tmp_path / "RESULT.DOCX", "Same text.")
    assert compare_docx_files(str(word(tmp_path / "result.docx", "Same text.")), str(gold)) == 1.0
    assert compare_docx_files(str(upper), str(gold)) == 0.0
    assert compare_docx_files(str(gold), str(upper)) == 0.0
    assert compare_docx_files(str(odt(tmp_path / "r.odt", "<text:p>Same text.</text:p>")), str(gold)) == 0.0
    assert compare_docx_files(str(gold), None) == 0.0
