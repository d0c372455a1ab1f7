"""evaluate_colored_words_in_tables on documents written here; the colour difference checked against scikit-image's."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.extras import need_extra

docx = need_extra("tasks", "docx")

from docx.shared import RGBColor  # noqa: E402

from conway.tasks.metrics import METRICS  # noqa: E402
from conway.tasks.metrics.docx_colours import ciede2000, evaluate_colored_words_in_tables, rgb_to_lab  # noqa: E402
from conway.tasks.metrics.errors import UnsupportedOption  # noqa: E402

RED, BLUE = (255, 0, 0), (0, 0, 255)


def coloured(path: Path, words: list[tuple[str, tuple[int, int, int] | None]], heading: str = "Words") -> str:
    doc = docx.Document()
    doc.add_paragraph(heading)
    table = doc.add_table(rows=1, cols=len(words))
    for cell, (word, colour) in zip(table.rows[0].cells, words):
        run = cell.paragraphs[0].add_run(word)
        if colour is not None:
            run.font.color.rgb = RGBColor(*colour)
    doc.save(path)
    return str(path)


def test_registered():
    assert METRICS["evaluate_colored_words_in_tables"] is evaluate_colored_words_in_tables


def test_colour_difference_matches_scikit_image():
    # values from scikit-image 0.26: rgb2lab then deltaE_ciede2000
    assert rgb_to_lab(RED) == pytest.approx((53.24058794, 80.09230823, 67.20275104), abs=1e-6)
    assert ciede2000(rgb_to_lab(RED), rgb_to_lab(BLUE)) == pytest.approx(52.881399704556856, abs=1e-9)
    assert ciede2000(rgb_to_lab((250, 5, 5)), rgb_to_lab(RED)) == pytest.approx(1.0532564600071876, abs=1e-9)


def test_right_colours_score_one_and_a_wrong_one_zero(tmp_path):
    words = [("apple", RED), ("banana", BLUE), ("Orange", RED)]
    gold = coloured(tmp_path / "gold.docx", [(w, None) for w, _ in words])
    assert evaluate_colored_words_in_tables(coloured(tmp_path / "ok.docx", words), gold) == 1.0
    near = [("apple", (250, 5, 5)), ("banana", BLUE), ("Orange", RED)]
    assert evaluate_colored_words_in_tables(coloured(tmp_path / "near.docx", near), gold) == 1.0
    assert evaluate_colored_words_in_tables(coloured(tmp_path / "near2.docx", near), gold, threshold=0.5) == 0.0
    swapped = [("apple", BLUE), ("banana", BLUE), ("Orange", RED)]
    assert evaluate_colored_words_in_tables(coloured(tmp_path / "swapped.docx", swapped), gold) == 0.0
    unset = [("apple", None), ("banana", BLUE), ("Orange", RED)]
    assert evaluate_colored_words_in_tables(coloured(tmp_path / "unset.docx", unset), gold) == 0.0  # OSWorld crashes
    # the texts compared first are the body's paragraphs (table cells are not among them, in OSWorld's either)
    assert evaluate_colored_words_in_tables(coloured(tmp_path / "text.docx", words, "Verbs"), gold) == 0.0
    other_cell = [("apricot", RED), ("banana", BLUE), ("Orange", RED)]
    assert evaluate_colored_words_in_tables(coloured(tmp_path / "cell.docx", other_cell), gold) == 1.0


def test_missing_empty_malformed(tmp_path):
    gold = coloured(tmp_path / "gold.docx", [("apple", None)])
    junk = tmp_path / "junk.docx"
    junk.write_bytes(b"not a zip")
    empty = tmp_path / "empty.docx"
    empty.write_bytes(b"")
    for path in (None, str(tmp_path / "absent.docx"), str(junk), str(empty)):
        assert evaluate_colored_words_in_tables(path, gold) == 0.0
    with pytest.raises(UnsupportedOption):
        evaluate_colored_words_in_tables(gold, gold, strict=True)
