"""compare_archive on zip and tar.gz archives built here, scored as OSWorld's `compare_archive` (chrome.py)."""

from __future__ import annotations

import tarfile
import zipfile
from pathlib import Path

import pytest
from helpers.extras import need_extra

from conway.tasks.metrics import METRICS
from conway.tasks.metrics.archives import compare_archive
from conway.tasks.metrics.errors import UnsupportedOption


def zipped(path: Path, members: dict[str, str]) -> str:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    return str(path)


def tarred(path: Path, members: dict[str, str], scratch: Path) -> str:
    with tarfile.open(path, "w:gz") as archive:
        for name, text in members.items():
            source = scratch / name.replace("/", "_")
            source.write_text(text)
            archive.add(source, arcname=name)
    return str(path)


NOTES = {"notes/a.txt": "alpha\n", "notes/b.txt": "beta\n"}


def test_compare_archive_is_registered():
    assert METRICS["compare_archive"] is compare_archive


def test_equal_archives_score_one_in_any_format(tmp_path):
    gold = zipped(tmp_path / "gold.zip", NOTES)
    assert compare_archive(zipped(tmp_path / "same.zip", NOTES), gold, file_path="notes") == 1.0
    assert compare_archive(tarred(tmp_path / "same.tar.gz", NOTES, tmp_path), gold, file_path="notes") == 1.0


def test_one_file_changed_scores_the_mean(tmp_path):
    gold = zipped(tmp_path / "gold.zip", NOTES)
    changed = zipped(tmp_path / "changed.zip", {**NOTES, "notes/b.txt": "BETA\n"})
    assert compare_archive(changed, gold, file_path="notes") == 0.5
    assert compare_archive(changed, gold, file_path="notes", ignore_case=True) == 1.0  # passed on to the metric


def test_different_names_score_zero(tmp_path):
    gold = zipped(tmp_path / "gold.zip", NOTES)
    renamed = zipped(tmp_path / "renamed.zip", {"notes/a.txt": "alpha\n", "notes/c.txt": "beta\n"})
    assert compare_archive(renamed, gold, file_path="notes") == 0.0
    # at the top both hold one folder `notes`: compared as a text file it cannot be read, and that scores 0
    assert compare_archive(zipped(tmp_path / "same.zip", NOTES), gold) == 0.0


def test_missing_empty_and_malformed_score_zero(tmp_path):
    gold = zipped(tmp_path / "gold.zip", NOTES)
    junk = tmp_path / "junk.zip"
    junk.write_bytes(b"not an archive")
    empty = zipped(tmp_path / "empty.zip", {})
    assert compare_archive(None, gold) == 0.0
    assert compare_archive(str(tmp_path / "absent.zip"), gold) == 0.0
    assert compare_archive(str(junk), gold) == 0.0
    assert compare_archive(empty, zipped(tmp_path / "empty2.zip", {})) == 0.0  # no files: OSWorld divides by 0
    assert compare_archive(zipped(tmp_path / "same.zip", NOTES), gold, file_path="elsewhere") == 0.0
    assert compare_archive(zipped(tmp_path / "same.zip", NOTES), None, file_path="notes") == 0.0


def test_pdfs_inside_an_archive(tmp_path):
    pymupdf = need_extra("tasks", "pymupdf")

    def pdf_bytes(text: str) -> bytes:
        document = pymupdf.open()
        document.new_page().insert_text((72, 72), text)
        return document.tobytes()

    def pdf_zip(path: Path, texts: dict[str, str]) -> str:
        with zipfile.ZipFile(path, "w") as archive:
            for name, text in texts.items():
                archive.writestr(name, pdf_bytes(text))
        return str(path)

    gold = pdf_zip(tmp_path / "gold.zip", {"a.pdf": "Lecture one", "b.pdf": "Lecture two"})
    assert compare_archive(pdf_zip(tmp_path / "same.zip", {"a.pdf": "Lecture one", "b.pdf": "Lecture two"}), gold,
                           file_type="pdf") == 1.0
    assert compare_archive(pdf_zip(tmp_path / "one.zip", {"a.pdf": "Lecture one", "b.pdf": "Nothing alike"}), gold,
                           file_type="pdf") < 1.0


def test_an_unknown_file_type_is_refused(tmp_path):
    gold = zipped(tmp_path / "gold.zip", NOTES)
    with pytest.raises(UnsupportedOption):
        compare_archive(gold, gold, file_type="smell")


def test_audio_archives_compare_their_sounds(tmp_path):
    """file_type `audio`: each pair of sounds by compare_audios (both WAVs of one tone: 1; silence against it: 0)."""
    import io
    import wave

    import numpy as np
    need_extra("tasks", "librosa")

    def wav(samples):
        out = io.BytesIO()
        with wave.open(out, "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(22050)
            w.writeframes((samples * 32767).astype("<i2").tobytes())
        return out.getvalue()

    tone = wav(0.5 * np.sin(2 * np.pi * 440 * np.arange(11025) / 22050))
    def packed(path, data):
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("a.wav", data)
        return str(path)
    gold = packed(tmp_path / "gold.zip", tone)
    assert compare_archive(packed(tmp_path / "same.zip", tone), gold, file_type="audio") == pytest.approx(1.0)
    assert compare_archive(packed(tmp_path / "empty.zip", wav(np.zeros(0))), gold, file_type="audio") == 0.0
