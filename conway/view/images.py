"""Images for the viewer: screenshot thumbnails and regenerated report cases, made once and cached.

The cache lives under the home (`cache/view/`), keyed by what the image is
made from (the source file's path, size and modification time; a generated
case's generator, seed, profile, size and index), so a second `conway view`
makes nothing again. A home that cannot be written (a read-only one, which
`view --output DIR` only reads) gets its images made in a folder of this
process that goes with it: made again next time, never refused.
"""

from __future__ import annotations

import atexit
import hashlib
import io
import shutil
import tempfile
from pathlib import Path

from conway.store.state import atomic_write_bytes

_spare: Path | None = None
"""This process's own image folder, for a home whose cache cannot be written (made on first need)."""

THUMB_WIDTH = 480
CASE_WIDTH = 960
JPEG_QUALITY = 82


def cache_dir(home_root: Path) -> Path:
    return home_root / "cache" / "view"


def _keep(home_root: Path, out: Path, data: bytes) -> Path:
    """`data` written at `out` in the home's cache, or, where the home cannot be written, at the same place in
    this process's spare folder (removed when the process ends)."""
    global _spare
    try:
        atomic_write_bytes(out, data, durable=False)
        return out
    except OSError:
        if _spare is None:
            _spare = Path(tempfile.mkdtemp(prefix="conway-view-"))
            atexit.register(shutil.rmtree, _spare, True)
        spare = _spare / out.relative_to(cache_dir(home_root))
        atomic_write_bytes(spare, data, durable=False)
        return spare


def _jpeg(img, width: int) -> bytes:  # type: ignore[no-untyped-def]
    from PIL import Image

    img = img.convert("RGB")
    if img.width > width:  # reduce by an integer factor first, then filter: about 1.6x faster than a plain resize
        img.thumbnail((width, img.height), Image.Resampling.LANCZOS, reducing_gap=2.0)
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=JPEG_QUALITY)
    return buf.getvalue()


def thumbnail(home_root: Path, source: Path, width: int = THUMB_WIDTH) -> Path | None:
    """A JPEG thumbnail of a screenshot (cached); None when the file cannot be read as an image."""
    from PIL import Image, UnidentifiedImageError

    try:
        st = source.stat()
    except OSError:
        return None
    key = hashlib.sha256(f"{source.resolve()}|{st.st_size}|{st.st_mtime_ns}|{width}".encode()).hexdigest()[:32]
    out = cache_dir(home_root) / "thumbs" / key[:2] / f"{key}.jpg"
    if out.is_file():
        return out
    try:
        with Image.open(source) as img:
            data = _jpeg(img, width)
    except (OSError, UnidentifiedImageError, ValueError):
        return None
    return _keep(home_root, out, data)


def case_image(home_root: Path, generator: str, seed: int, index: int, size: tuple[int, int], profile: str,
               want_sha256: str | None) -> tuple[Path | None, str]:
    """A vision-check case regenerated (cached JPEG); (None, why) when it cannot be the recorded image."""
    from conway.observe.vision_cases import GENERATOR, generate_case

    if generator != GENERATOR:
        return None, f"made by image generator {generator!r}; this Conway has {GENERATOR!r}"
    name = f"{seed}-{profile}-{size[0]}x{size[1]}-{index}"
    folder = cache_dir(home_root) / "cases" / hashlib.sha256(generator.encode()).hexdigest()[:12]
    out = folder / f"{name}.jpg"
    mismatch = folder / f"{name}.mismatch"
    if want_sha256 and mismatch.is_file() and mismatch.read_text().strip() == want_sha256:
        return None, "the regenerated image differs from the recorded one (sha256)"
    if out.is_file():
        return out, ""
    from PIL import Image

    case = generate_case(seed, index, size, profile)
    if want_sha256 and case.sha256 != want_sha256:
        _keep(home_root, mismatch, want_sha256.encode())
        return None, "the regenerated image differs from the recorded one (sha256)"
    with Image.open(io.BytesIO(case.png)) as img:
        return _keep(home_root, out, _jpeg(img, CASE_WIDTH)), ""
