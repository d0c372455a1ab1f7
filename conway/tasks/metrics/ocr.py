"""OSWorld's `compare_image_text` (its docs.py): the text EasyOCR reads in an image, joined with spaces, must
contain the rule's `text` (`{"type": "text", "text": …}`; any other rule type scores 0).

The reading is EasyOCR's (English, its default models), because the task's rules are written against what
EasyOCR makes of a terminal: multi_apps/02ce9a50 accepts "ls" or "1s", EasyOCR's two readings of `ls`. Debian's
tesseract is another reader, with its own readings of the same screenshot (not measured here against EasyOCR's),
so it is no stand-in: where EasyOCR or its two model files are not here, the task is not runnable
(`ocr_missing`, said by `tasks list`), never scored by another reader.
EasyOCR downloads its models on first use; here it never downloads (`download_enabled=False`): the models must
already be in EasyOCR's model folder (`$EASYOCR_MODULE_PATH/model`, else `~/.EasyOCR/model`).

An X window dump (what `xwd` writes; OSWorld asks `file`) is turned into RGB first as OSWorld's own reader
does: the pixels right after the header (the colour map is not skipped), 32-bit ones as BGRA, 24-bit ones as
RGB; where that fails, netpbm's `xwdtopnm | pnmtopng` when installed; else the file goes to the reader as it is.
Every failure scores 0, as OSWorld's function catches everything.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

MODELS = ("craft_mlt_25k.pth", "english_g2.pth")
"""EasyOCR's detector and its English recogniser, the files `Reader(['en'])` loads."""
XWD_VERSION = 7
NETPBM_TIMEOUT_S = 60


def model_folder() -> Path:
    root = os.environ.get("EASYOCR_MODULE_PATH") or os.path.join(os.path.expanduser("~"), ".EasyOCR")
    return Path(root) / "model"


def ocr_missing(importable: Any) -> str | None:
    """Why compare_image_text cannot score here (EasyOCR or its models absent), or None."""
    if not importable("easyocr"):
        what = "EasyOCR is not installed (it is not in the tasks extra: it needs torchvision)"
    elif missing := [name for name in MODELS if not (model_folder() / name).is_file()]:
        what = f"EasyOCR's models are not in {model_folder()} ({', '.join(missing)}; runs never download them)"
    else:
        return None
    return (f"metric compare_image_text reads text with EasyOCR, as OSWorld does, and {what}; Debian's tesseract "
            "is another reader, whose readings the task's rules were not written against")


def _is_xwd(path: Path) -> bool:
    with path.open("rb") as f:
        head = f.read(8)
    return len(head) == 8 and struct.unpack(">II", head)[1] == XWD_VERSION and struct.unpack(">I", head[:4])[0] >= 100


def _xwd_pixels(path: Path) -> Image.Image:
    """OSWorld's reading of a dump: width, height and depth from the header, the pixels from its end."""
    with path.open("rb") as f:
        header = f.read(100)
        size, _, _, depth, width, height = struct.unpack(">6I", header[:24])
        f.seek(size)
        if depth not in (24, 32):
            raise ValueError(f"an X window dump of depth {depth}")
        channels = depth // 8
        pixels = np.frombuffer(f.read(width * height * channels), dtype=np.uint8)
    pixels = pixels.reshape((height, width, channels))
    return Image.fromarray(np.ascontiguousarray(pixels[:, :, [2, 1, 0]] if depth == 32 else pixels), "RGB")


def _netpbm(path: Path, out: Path) -> bool:
    if shutil.which("xwdtopnm") is None or shutil.which("pnmtopng") is None:
        return False
    pnm = subprocess.run(["xwdtopnm", str(path)], capture_output=True, check=True, timeout=NETPBM_TIMEOUT_S)
    out.write_bytes(subprocess.run(["pnmtopng"], input=pnm.stdout, capture_output=True, check=True,
                                   timeout=NETPBM_TIMEOUT_S).stdout)
    return True


def _readable(path: Path, folder: Path) -> Path:
    """The image the reader gets: a dump turned into PNG where one of OSWorld's ways can, else the file itself."""
    if not _is_xwd(path):
        return path
    out = folder / "converted.png"
    for convert in (lambda: Image.open(path).save(out, "PNG"), lambda: _xwd_pixels(path).save(out, "PNG")):
        try:
            convert()
            return out
        except Exception:  # OSWorld tries the next way
            continue
    try:
        return out if _netpbm(path, out) else path
    except (OSError, subprocess.SubprocessError):
        return path


def read_text(path: Path) -> str:
    """EasyOCR's readings of the image, joined with spaces (raises when EasyOCR or its models are not here)."""
    import easyocr

    reader = easyocr.Reader(["en"], model_storage_directory=str(model_folder()), download_enabled=False,
                            verbose=False)
    return " ".join(entry[1] for entry in reader.readtext(str(path)))


def compare_image_text(image_path: Any, rule: dict[str, Any]) -> float:
    if not image_path or not os.path.exists(image_path):
        return 0.0
    with tempfile.TemporaryDirectory(prefix="conway-ocr-") as folder:
        try:
            text = read_text(_readable(Path(image_path), Path(folder)))
            if rule["type"] != "text":
                return 0.0
            return 1.0 if rule["text"] in text else 0.0
        except Exception:  # OSWorld's function logs any failure and scores 0
            return 0.0


METRICS = {"compare_image_text": compare_image_text}
