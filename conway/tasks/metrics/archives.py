"""OSWorld's `compare_archive` (3 tasks), written afresh: two archives unpacked and their files compared pairwise.

As OSWorld's function of that name (chrome.py): both archives (any format
Python's `shutil.unpack_archive` knows by the name: zip, tar, tar.gz, …) are
unpacked; the sorted names in the folder `file_path` (default the top) must be
the same, else 0; then each pair of files is scored by the metric `file_type`
names (`text` by default: `compare_text_file`; `pdf`, `docx`, `ppt`, `image`,
`csv`, `table`, `audio`, `video`), the remaining options passed to it, and the score is the mean.
A None result scores 0; where OSWorld's function raises (an archive missing or
not readable, no such folder, an empty folder, a file its metric cannot read)
its runner counts 0, and so does this; a document library the file type needs
and that is not installed is an error, not a 0. Any other `file_type` is refused (OSWorld's
raises on it).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conway.tasks.metrics.documents import compare_docx_files, compare_pptx_files
from conway.tasks.metrics.errors import UnsupportedOption
from conway.tasks.metrics.files import compare_text_file
from conway.tasks.metrics.images import compare_images
from conway.tasks.metrics.inputs import library, refuse
from conway.tasks.metrics.pdfs import compare_pdfs
from conway.tasks.metrics.recordings import compare_audios, compare_videos
from conway.tasks.metrics.tables import METRICS as TABLE_METRICS

_BY_TYPE: dict[str, Callable[..., float]] = {
    "text": compare_text_file, "pdf": compare_pdfs, "docx": compare_docx_files, "ppt": compare_pptx_files,
    "image": compare_images, "csv": TABLE_METRICS["compare_csv"], "table": TABLE_METRICS["compare_table"],
    "audio": compare_audios, "video": compare_videos}
_NEEDS = {"pdf": ("pymupdf",), "docx": ("docx",), "ppt": ("pptx",), "table": ("openpyxl", "pandas"),
          "audio": ("librosa", "fastdtw", "scipy"), "video": ("cv2", "imagehash")}
# checked before comparing: a library missing here is the evaluator's error, never a file scored 0


def _unpack(archive: Any, into: Path) -> None:
    """Unpack with tar's `data` filter where this Python has it: no member may land outside `into`."""
    try:
        shutil.unpack_archive(os.fspath(archive), into, filter="data")
    except TypeError:  # a Python before 3.11.4 has no filter; zip extraction sanitises names on its own
        shutil.unpack_archive(os.fspath(archive), into)


def _score(result: Any, expected: Any, folder: str, compare: Callable[..., float], options: dict) -> float:
    with tempfile.TemporaryDirectory(prefix="conway-archive-") as scratch:
        mine, gold = Path(scratch, "pred"), Path(scratch, "gold")
        _unpack(result, mine)
        _unpack(expected, gold)
        names = sorted(os.listdir(mine / folder))
        if names != sorted(os.listdir(gold / folder)):
            return 0.0
        total = sum(compare(str(mine / folder / n), str(gold / folder / n), **options) for n in names)
        return total / len(names)  # no files: OSWorld divides by zero, scored 0 by the caller


def unsupported_options(func_name: str, options: dict[str, Any]) -> list[str]:
    """A `file_type` with no metric here (refused at run time too)."""
    file_type = (options or {}).get("file_type", "text")
    return [] if file_type in _BY_TYPE else [f"file_type={file_type!r}"]


def compare_archive(result: Any, expected: Any, **options: Any) -> float:
    """The mean score of the archives' files, pair by pair, by the metric of `file_type`; 0 when the names differ."""
    options = {k: v for k, v in options.items() if not k.startswith("_")}
    folder = options.pop("file_path", "")
    file_type = options.pop("file_type", "text")
    if file_type not in _BY_TYPE:
        refuse("compare_archive", [f"file_type={file_type!r}"])
    if not result:
        return 0.0
    for module in _NEEDS.get(file_type, ()):
        library(module)
    try:
        return _score(result, expected, folder, _BY_TYPE[file_type], options)
    except UnsupportedOption:
        raise
    except Exception:  # anything OSWorld's raises on (see above): its runner counts 0
        return 0.0


METRICS: dict[str, Callable[..., float]] = {"compare_archive": compare_archive}
