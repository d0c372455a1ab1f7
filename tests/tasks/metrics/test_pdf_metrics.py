"""compare_pdfs on PDFs written here with PyMuPDF: OSWorld's score is the rapidfuzz ratio of the two texts."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.extras import need_extra

pymupdf = need_extra("tasks", "pymupdf")

from rapidfuzz import fuzz  # noqa: E402

from conway.tasks.metrics import METRICS  # noqa: E402
from conway.tasks.metrics.errors import UnsupportedOption  # noqa: E402
from conway.tasks.metrics.pdfs import compare_pdfs  # noqa: E402


def pdf(path: Path, *pages: str) -> Path:
    document = pymupdf.open()
    for text in pages:
        document.new_page().insert_text((72, 72), text)
    document.save(path)
    document.close()
    return path


@pytest.fixture
def pdfs(tmp_path):
    return {"report": pdf(tmp_path / "report.pdf", "Quarterly report", "Revenue grew by ten percent"),
            "same": pdf(tmp_path / "same.pdf", "Quarterly report", "Revenue grew by ten percent"),
            "changed": pdf(tmp_path / "changed.pdf", "Quarterly report", "Revenue fell by ten percent"),
            "blank": pdf(tmp_path / "blank.pdf", "")}


def extracted(path: Path) -> str:
    with pymupdf.open(path) as document:
        return "".join(page.get_text() for page in document).strip()


def test_compare_pdfs_is_registered():
    assert METRICS["compare_pdfs"] is compare_pdfs


def test_equal_texts_score_one(pdfs):
    assert compare_pdfs(pdfs["report"], pdfs["same"]) == 1.0


def test_one_word_changed_scores_the_texts_ratio(pdfs):
    expected = fuzz.ratio(extracted(pdfs["report"]), extracted(pdfs["changed"])) / 100
    assert 0.8 < expected < 1.0
    assert compare_pdfs(pdfs["changed"], pdfs["report"]) == pytest.approx(expected)


def test_lists_score_the_mean_and_an_unreadable_pair_adds_zero(pdfs, tmp_path):
    assert compare_pdfs([pdfs["report"], tmp_path / "absent.pdf"], [pdfs["same"], pdfs["report"]]) == 0.5
    assert compare_pdfs([pdfs["report"]], [pdfs["same"], pdfs["report"]]) == 0.5  # zip stops at the shorter
    assert compare_pdfs([], []) == 0.0  # OSWorld divides by zero: its runner counts 0
    assert compare_pdfs(str(pdfs["report"]), [pdfs["same"]]) == 0.0  # a path zipped with a list: its characters


def test_missing_empty_and_malformed_score_zero(pdfs, tmp_path):
    junk = tmp_path / "junk.pdf"
    junk.write_bytes(b"%PDF-1.4 this is not a PDF")
    empty = tmp_path / "empty.pdf"
    empty.write_bytes(b"")
    assert compare_pdfs(tmp_path / "absent.pdf", pdfs["report"]) == 0.0
    assert compare_pdfs(junk, pdfs["report"]) == 0.0
    assert compare_pdfs(empty, pdfs["report"]) == 0.0


def test_a_none_result_reads_as_an_empty_document(pdfs):
    assert compare_pdfs(None, pdfs["report"]) == 0.0
    assert compare_pdfs(None, pdfs["blank"]) == 1.0  # PyMuPDF opens an empty document; two empty texts are equal


def test_an_option_is_refused(pdfs):
    with pytest.raises(UnsupportedOption):
        compare_pdfs(pdfs["report"], pdfs["same"], ignore_case=True)


def test_check_pdf_pages(pdfs, tmp_path):
    from conway.tasks.metrics.pdfs import check_pdf_pages

    two = pdfs["report"]  # two pages
    assert check_pdf_pages(str(two), {"relation": "eq", "ref_value": 2}) == 1.0
    assert check_pdf_pages(str(two), {"relation": "eq", "ref_value": 1}) == 0.0
    assert check_pdf_pages(str(pdfs["blank"]), {"relation": "eq", "ref_value": 1}) == 1.0
    assert check_pdf_pages(str(two), {"relation": "le", "ref_value": 3}) == 1.0
    junk = tmp_path / "junk.pdf"
    junk.write_bytes(b"not a PDF at all")
    empty = tmp_path / "empty.pdf"
    empty.write_bytes(b"")
    text = tmp_path / "notes.txt"
    text.write_text("one page of text")
    for path in (junk, empty, tmp_path / "absent.pdf", text):
        assert check_pdf_pages(str(path), {"relation": "eq", "ref_value": 1}) == 0.0
    assert check_pdf_pages(None, {"relation": "eq", "ref_value": 1}) == 0.0
    with pytest.raises(UnsupportedOption):
        check_pdf_pages(str(two), {"relation": "contains", "ref_value": 1})
