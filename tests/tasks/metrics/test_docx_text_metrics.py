"""compare_docx_files_and_ignore_new_lines and compare_references on documents written here, scored as OSWorld's."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.extras import need_extra

docx = need_extra("tasks", "docx")

from rapidfuzz import fuzz  # noqa: E402

from conway.tasks.metrics import METRICS  # noqa: E402
from conway.tasks.metrics.docx_texts import compare_docx_files_and_ignore_new_lines, compare_references  # noqa: E402
from conway.tasks.metrics.errors import UnsupportedOption  # noqa: E402


def word(path: Path, *paragraphs: str) -> str:
    doc = docx.Document()
    for text in paragraphs:
        doc.add_paragraph(text)
    doc.save(path)
    return str(path)


@pytest.fixture
def bad(tmp_path):
    junk = tmp_path / "junk.docx"
    junk.write_bytes(b"not a zip")
    empty = tmp_path / "empty.docx"
    empty.write_bytes(b"")
    return [None, str(tmp_path / "absent.docx"), str(junk), str(empty), word(tmp_path / "upper.DOCX", "a")]


def test_registered():
    for name in ("compare_docx_files_and_ignore_new_lines", "compare_references", "compare_unique_train_records"):
        assert METRICS[name].__name__ == name


def test_ignore_new_lines(tmp_path, bad):
    gold = word(tmp_path / "gold.docx", "Gemini results", "", "score 1")
    same = word(tmp_path / "same.docx", "Gemini results", "score 1", "")
    assert compare_docx_files_and_ignore_new_lines(same, gold) == 1.0
    assert compare_docx_files_and_ignore_new_lines(same, gold, ignore_blanks=False) == 1.0
    spaced = word(tmp_path / "spaced.docx", "Gemini   results", "score 1")
    assert compare_docx_files_and_ignore_new_lines(spaced, gold) == 1.0
    assert compare_docx_files_and_ignore_new_lines(spaced, gold, ignore_blanks=False) == 0.0
    joined = word(tmp_path / "joined.docx", "Gemini results score 1")
    assert compare_docx_files_and_ignore_new_lines(joined, gold) == 1.0  # the paragraph break folds to a space
    assert compare_docx_files_and_ignore_new_lines(joined, gold, ignore_blanks=False) == 0.0
    assert compare_docx_files_and_ignore_new_lines(word(tmp_path / "c.docx", "Gemini results", "score 2"), gold) == 0.0
    for path in bad:
        assert compare_docx_files_and_ignore_new_lines(path, gold) == 0.0
    with pytest.raises(UnsupportedOption):
        compare_docx_files_and_ignore_new_lines(gold, gold, ignore_case=True)


def test_compare_references(tmp_path, bad):
    refs = ["Smith, J. (2020). A study.", "Doe, A. (2019). Another study."]
    gold = word(tmp_path / "gold.docx", "Case study", "References", *refs)
    assert compare_references(word(tmp_path / "same.docx", "Case", "References", *refs, ""), gold,
                              content_only=True, reference_base_result=0.6) == 1.0
    changed = ["Smith, J. (2021). A study.", refs[1]]
    mean = (fuzz.ratio(changed[0], refs[0]) / 100 + 1) / 2
    assert compare_references(word(tmp_path / "one.docx", "References", *changed), gold,
                              reference_base_result=0.6) == pytest.approx((mean - 0.6) / 0.4)
    assert compare_references(word(tmp_path / "fewer.docx", "References", refs[0]), gold) == 0.0
    assert compare_references(word(tmp_path / "nohead.docx", *refs), gold) == 0.0
    assert compare_references(word(tmp_path / "a.docx", "x"), word(tmp_path / "b.docx", "y")) == 1.0  # no heading
    other = ["Nothing alike at all", "Zzz"]
    assert compare_references(word(tmp_path / "other.docx", "References", *other), gold) == 0.0
    bare = word(tmp_path / "bare.docx", "References")
    assert compare_references(bare, bare) == 0.0  # no reference: OSWorld divides by zero
    for path in bad:
        assert compare_references(path, gold) == 0.0
    with pytest.raises(UnsupportedOption):
        compare_references(gold, gold, threshold=0.9)


def test_compare_unique_train_records(tmp_path, bad):
    from conway.tasks.metrics.docx_texts import compare_unique_train_records as unique

    initial = word(tmp_path / "initial.docx", "date,id,from,to", "1,T1,A,B", "2,T2,B,C", "1,T1,A,B", "3,T3,C,D")
    gold = word(tmp_path / "gold.docx", "date,id,from,to", "1,T1,A,B", "2,T2,B,C", "3,T3,C,D")
    assert unique(word(tmp_path / "same.docx", "date,id,from,to", "1,T1,A,B", "", "2,T2,B,C", "3,T3,C,D "),
                  [gold, initial]) == 1.0
    assert unique(initial, [gold, initial]) == 0.0  # T1 twice
    assert unique(word(tmp_path / "lost.docx", "date,id,from,to", "1,T1,A,B", "2,T2,B,C"), [gold, initial]) == 0.0
    assert unique(word(tmp_path / "new.docx", "date,id,from,to", "1,T1,A,B", "2,T2,B,C", "3,T3,C,E"),
                  [gold, initial]) == 0.0  # a line not in the initial document
    assert unique(word(tmp_path / "nohead.docx", "1,T1,A,B", "2,T2,B,C", "3,T3,C,D"), [gold, initial]) == 0.0
    assert unique(gold, [gold]) == 0.0
    assert unique(gold, gold) == 0.0
    for path in bad[:4]:
        assert unique(path, [gold, initial]) == 0.0
        assert unique(gold, [path, initial]) == 0.0
