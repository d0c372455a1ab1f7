"""compare_image_text: when it can score here (EasyOCR and its models, never a download), an X window dump read as
OSWorld reads it, and the rule applied to the reader's text (a fake reader there: the rule is the point)."""

from __future__ import annotations

import struct

import numpy as np
from PIL import Image

from conway.tasks.metrics import METRICS, ocr


def test_no_image_scores_0(tmp_path):
    assert METRICS["compare_image_text"](None, {"type": "text", "text": "ls"}) == 0.0
    assert METRICS["compare_image_text"](str(tmp_path / "none.png"), {"type": "text", "text": "ls"}) == 0.0


def test_it_says_why_it_cannot_score_here(tmp_path, monkeypatch):
    assert "EasyOCR is not installed" in ocr.ocr_missing(lambda module: False)
    monkeypatch.setenv("EASYOCR_MODULE_PATH", str(tmp_path))
    reason = ocr.ocr_missing(lambda module: True)
    assert "models are not in" in reason and "craft_mlt_25k.pth" in reason and "tesseract" in reason
    (tmp_path / "model").mkdir()
    for name in ocr.MODELS:
        (tmp_path / "model" / name).write_bytes(b"weights")
    assert ocr.ocr_missing(lambda module: True) is None


def test_without_easyocr_the_metric_scores_0(tmp_path):
    import importlib.util
    Image.new("RGB", (40, 20), "white").save(tmp_path / "ls.png")
    if importlib.util.find_spec("easyocr") is None:  # as here: no reader, no score (and tasks list says why)
        assert METRICS["compare_image_text"](str(tmp_path / "ls.png"), {"type": "text", "text": "ls"}) == 0.0


def _xwd(path, pixels_bgra):
    """An X window dump as `xwd` writes one from a TrueColor display: a 100-byte header, then the pixels."""
    h, w = pixels_bgra.shape[:2]
    header = struct.pack(">25I", 100, 7, 2, 32, w, h, 0, 1, 32, 1, 32, 32, w * 4, 4, 0xFF0000, 0xFF00, 0xFF,
                         8, 256, 0, w, h, 0, 0, 0)
    path.write_bytes(header + pixels_bgra.tobytes())


def test_an_x_window_dump_is_read_as_osworld_reads_it(tmp_path):
    bgra = np.zeros((6, 8, 4), np.uint8)
    bgra[..., 0], bgra[..., 1], bgra[..., 2] = 10, 20, 200  # blue, green, red bytes in memory order
    _xwd(tmp_path / "shot.xwd", bgra)
    png = ocr._readable(tmp_path / "shot.xwd", tmp_path)
    assert png != tmp_path / "shot.xwd"
    assert Image.open(png).getpixel((0, 0)) == (200, 20, 10)
    Image.new("RGB", (4, 4)).save(tmp_path / "plain.png")
    assert ocr._readable(tmp_path / "plain.png", tmp_path) == tmp_path / "plain.png"  # not a dump: as it is


def test_the_rule_is_a_substring_of_the_joined_reading(tmp_path, monkeypatch):
    Image.new("RGB", (40, 20), "white").save(tmp_path / "ls.png")
    monkeypatch.setattr(ocr, "read_text", lambda path: "user@host:~$ 1s Desktop Documents")  # a fake reader
    shot = str(tmp_path / "ls.png")
    assert METRICS["compare_image_text"](shot, {"type": "text", "text": "1s"}) == 1.0
    assert METRICS["compare_image_text"](shot, {"type": "text", "text": "ls"}) == 0.0
    assert METRICS["compare_image_text"](shot, {"type": "regex", "text": "1s"}) == 0.0  # only `text` rules
