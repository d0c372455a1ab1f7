"""Synthetic observations: a generated PNG, no display, no desktop access."""

from __future__ import annotations

import hashlib
import io
from typing import Callable

from conway.protocols import Observation


def render_synthetic_png(width: int, height: int, label: str) -> bytes:
    """A plain 'desktop' with a title bar and a label; deterministic for its inputs."""
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (width, height), (38, 70, 110))
    draw = ImageDraw.Draw(img)
    draw.rectangle([0, 0, width, 28], fill=(220, 220, 220))
    draw.text((8, 8), "Conway synthetic desktop", fill=(0, 0, 0))
    draw.rectangle([width // 4, height // 3, 3 * width // 4, 2 * height // 3], fill=(245, 245, 245))
    draw.text((width // 4 + 12, height // 3 + 12), label, fill=(0, 0, 0))
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=False, compress_level=1)
    return buf.getvalue()


class SyntheticObserver:
    """Returns the same synthetic frame unless `label_for_step` says the scene changed."""

    def __init__(self, size: tuple[int, int] = (640, 400), label_for_step: Callable[[int], str] | None = None):
        self.size = size
        self.label_for_step = label_for_step or (lambda step: "nothing to see here")
        self._step = 0
        self._cache: dict[str, bytes] = {}

    def observe(self) -> Observation:
        label = self.label_for_step(self._step)
        self._step += 1
        png = self._cache.get(label)
        if png is None:
            png = self._cache[label] = render_synthetic_png(*self.size, label)
        digest = hashlib.sha256(png).hexdigest()
        return Observation(png=png, captured_size=self.size, source="synthetic",
                           content_hash=digest, change_key=digest[:16])

    def close(self) -> None:
        pass
