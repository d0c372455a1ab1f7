"""Screenshot encodings: one for the model, one for the archive.

Measured by ``scripts/bench/bench_observe.py`` on Xvfb screens with real windows
(an editor-like ``ui`` scene and a ``photo`` scene; medians on a loaded
2-core machine):

* **To the model: JPEG quality 85** (`MODEL_ENCODING`): 7-19 ms and
  136-274 KiB per decision at 1280x800-1920x1080, against 72-720 ms and
  249-4076 KiB for PNG level 1 (PNG level 6: 125-1133 ms, 302-3671 KiB).
  Size matters twice: base64 in the request (+33 %) and the server's decode.
  VLMs are trained on JPEG screenshots; at q85 text stays legible.
* **Archive (``screenshots/``): PNG, zlib level 1** (`ARCHIVE_ENCODING`).
  Lossless, so a kept screenshot is exactly what was captured (replay,
  export, training data, pixel checks); 5-9 % larger than level 6 and
  20-45 % faster on UI screens (64-102 ms vs 85-190 ms here). A screen
  observation encodes it once, lazily, and an unchanged frame is not
  written twice.

The model's half of a cycle (image -> family resize -> encoding, and the
sent size the decision record needs) is `prepare_image` in `conway.policies`,
which reads the pixels with `observation_image` and encodes with `Encoding`.
`ScreenshotArchive` keeps the most recent N screenshots.
"""

from __future__ import annotations

import io
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from conway.protocols import Observation

if TYPE_CHECKING:  # pragma: no cover
    from PIL import Image

__all__ = [
    "Encoding",
    "MODEL_ENCODING",
    "ARCHIVE_ENCODING",
    "ENCODINGS",
    "encode_png",
    "encode_jpeg",
    "observation_image",
    "ScreenshotArchive",
]


def encode_png(image: Image.Image, level: int = 1) -> bytes:
    """PNG at zlib ``level`` (0-9); Pillow's default is 6. No ``optimize`` pass."""
    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=level)
    return buf.getvalue()


def encode_jpeg(image: Image.Image, quality: int = 85) -> bytes:
    """Baseline JPEG (Pillow defaults: 4:2:0 subsampling); RGBA/P images are flattened to RGB."""
    if image.mode not in ("RGB", "L"):
        image = image.convert("RGB")
    buf = io.BytesIO()
    image.save(buf, format="JPEG", quality=quality)
    return buf.getvalue()


@dataclass(frozen=True)
class Encoding:
    fmt: Literal["png", "jpeg"]
    level: int = 1
    """PNG zlib level (ignored for JPEG)."""
    quality: int = 85
    """JPEG quality (ignored for PNG)."""

    def __post_init__(self) -> None:
        if self.fmt not in ("png", "jpeg"):
            raise ValueError(f"unknown image format {self.fmt!r} (png or jpeg)")
        if not 0 <= self.level <= 9 or not 1 <= self.quality <= 100:
            raise ValueError(f"bad encoding parameters: {self}")

    @property
    def mime(self) -> str:
        return "image/png" if self.fmt == "png" else "image/jpeg"

    @property
    def ext(self) -> str:
        return ".png" if self.fmt == "png" else ".jpg"

    @property
    def name(self) -> str:
        return f"png{self.level}" if self.fmt == "png" else f"jpeg{self.quality}"

    def encode(self, image: Image.Image) -> bytes:
        return encode_png(image, self.level) if self.fmt == "png" else encode_jpeg(image, self.quality)

    @classmethod
    def parse(cls, text: str) -> Encoding:
        """``png`` / ``png1`` / ``png6`` / ``jpeg`` / ``jpeg85`` / ``jpg90``."""
        m = re.fullmatch(r"(png|jpe?g)(\d+)?", text.strip().lower())
        if not m:
            raise ValueError(f"unknown encoding {text!r}; use png[LEVEL] or jpeg[QUALITY], e.g. png1, jpeg85")
        fmt = "png" if m.group(1) == "png" else "jpeg"
        n = m.group(2)
        if fmt == "png":
            return cls("png", level=int(n) if n else 1)
        return cls("jpeg", quality=int(n) if n else 85)


MODEL_ENCODING = Encoding("jpeg", quality=85)
ARCHIVE_ENCODING = Encoding("png", level=1)
ENCODINGS = {e.name: e for e in (Encoding("png", level=6), Encoding("png", level=1), Encoding("jpeg", quality=85))}
"""The three measured candidates: PNG default level, PNG level 1, JPEG q85."""


def observation_image(obs: Observation) -> Image.Image:
    """The observation's image: the one a screen observer kept, else decoded from ``png``."""
    image = obs.image
    if image is not None:
        return image
    if obs.png is None:
        raise ValueError(f"the {obs.source} observation has no image")
    from PIL import Image

    img = Image.open(io.BytesIO(obs.png))
    img.load()
    return img if img.mode == "RGB" else img.convert("RGB")


class ScreenshotArchive:
    """Writes screenshots into ``directory`` and keeps only the newest ``keep``.

    Files are named ``<name>.png`` (or ``.jpg``) and written atomically. A
    PNG archive reuses the observation's own PNG bytes when it has them
    (a screen observation encodes them once, lazily, at level 1).
    """

    def __init__(self, directory: str | os.PathLike[str], keep: int = 200,
                 encoding: Encoding = ARCHIVE_ENCODING):
        if keep < 0:
            raise ValueError("keep must be >= 0")
        self.directory = Path(directory)
        self.keep = keep
        self.encoding = encoding

    def _existing(self) -> list[Path]:
        if not self.directory.is_dir():
            return []
        files = [p for p in self.directory.iterdir() if p.suffix in (".png", ".jpg") and p.is_file()]
        return sorted(files, key=lambda p: (p.stat().st_mtime_ns, p.name))

    def save(self, obs: Observation, name: str) -> Path | None:
        """Save ``obs`` as ``name`` + extension; return the path (None when keep is 0 or no image)."""
        if self.keep == 0:
            return None
        if not re.fullmatch(r"[A-Za-z0-9._-]{1,100}", name):
            raise ValueError(f"bad screenshot name {name!r}")
        if self.encoding.fmt == "png" and obs.png is not None:
            data = obs.png
        else:
            try:
                data = self.encoding.encode(observation_image(obs))
            except ValueError:
                return None
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"{name}{self.encoding.ext}"
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=self.encoding.ext)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        self.prune()
        return path

    def prune(self) -> list[Path]:
        """Delete the oldest screenshots beyond ``keep``; return what was deleted."""
        files = self._existing()
        extra = files[: max(0, len(files) - self.keep)]
        for p in extra:
            try:
                p.unlink()
            except OSError:
                pass
        return extra
