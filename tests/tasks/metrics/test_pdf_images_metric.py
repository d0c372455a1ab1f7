"""`compare_pdf_images` on generated PDFs holding generated pictures, each scored as OSWorld's function scores
them (imagehash's phash within 5 bits per pair; a raise counted 0)."""

from __future__ import annotations

import io

import numpy as np
from helpers.extras import need_extra
from PIL import Image

from conway.tasks.metrics import METRICS

pymupdf = need_extra("tasks", "pymupdf")


def png(seed: int, shade: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    pixels = (rng.integers(0, 255, (16, 16, 3)).repeat(4, 0).repeat(4, 1) + shade).clip(0, 255).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "PNG")
    return out.getvalue()


def pdf(path, *pictures: bytes) -> str:
    doc = pymupdf.open()
    page = doc.new_page()
    for n, data in enumerate(pictures):
        page.insert_image(pymupdf.Rect(10, 10 + 80 * n, 74, 74 + 80 * n), stream=data)
    doc.save(path)
    return str(path)


def test_equal_changed_counts_and_formatting(tmp_path):
    same = METRICS["compare_pdf_images"]
    gold = pdf(tmp_path / "gold.pdf", png(1), png(2))
    assert same(pdf(tmp_path / "copy.pdf", png(1), png(2)), gold) == 1.0
    assert same(pdf(tmp_path / "tint.pdf", png(1, shade=3), png(2)), gold) == 1.0  # a slight tint: same hash
    assert same(pdf(tmp_path / "one.pdf", png(1), png(9)), gold) == 0.5
    assert same(pdf(tmp_path / "fewer.pdf", png(1)), gold) == 0.0
    assert same(pdf(tmp_path / "none1.pdf"), pdf(tmp_path / "none2.pdf")) == 1.0  # no pictures on either side


def test_missing_empty_and_malformed(tmp_path):
    same = METRICS["compare_pdf_images"]
    gold = pdf(tmp_path / "gold.pdf", png(1))
    assert same(None, gold) == 0.0 and same(str(tmp_path / "absent.pdf"), gold) == 0.0
    (tmp_path / "empty.pdf").write_bytes(b"")
    assert same(str(tmp_path / "empty.pdf"), gold) == 0.0
    (tmp_path / "bad.pdf").write_text("not a pdf")
    assert same(str(tmp_path / "bad.pdf"), gold) == 0.0
