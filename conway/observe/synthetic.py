"""Synthetic observations: a generated PNG, no display, no desktop access."""

from __future__ import annotations

import hashlib
import io
import time
from pathlib import Path
from typing import Any, Callable

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
    """Returns the same synthetic frame unless `label_for_step` says the scene changed.

    With an `archive` (`conway.imaging.ScreenshotArchive`) each new frame is kept like a screen's, so that a mock
    session's steps have their screenshots (the viewer, `export --format hf` and `replay` use them); an unchanged
    frame names the file already kept.
    """

    def __init__(self, size: tuple[int, int] = (640, 400), label_for_step: Callable[[int], str] | None = None,
                 archive: Any = None, relative_to: Path | None = None):
        self.size = size
        self.label_for_step = label_for_step or (lambda step: "nothing to see here")
        self.archive = archive
        self.relative_to = relative_to
        self._step = 0
        self._cache: dict[str, bytes] = {}
        self._kept: tuple[str, Path] | None = None

    def observe(self) -> Observation:
        label = self.label_for_step(self._step)
        self._step += 1
        png = self._cache.get(label)
        if png is None:
            png = self._cache[label] = render_synthetic_png(*self.size, label)
        digest = hashlib.sha256(png).hexdigest()
        obs = Observation(png=png, captured_size=self.size, source="synthetic",
                          content_hash=digest, change_key=digest[:16])
        if self.archive is not None:
            obs.screenshot_path = self._keep(obs)
        return obs

    def _keep(self, obs: Observation) -> str | None:
        if self._kept is None or self._kept[0] != obs.content_hash or not self._kept[1].exists():
            try:
                path = self.archive.save(obs, f"shot-{time.time_ns() // 1_000_000}-{obs.content_hash[:12]}")
            except OSError as exc:  # a full disk must not stop the loop: said in the record
                obs.meta["screenshot_error"] = str(exc)
                return None
            if path is None:
                return None
            self._kept = (obs.content_hash, path)
        path = self._kept[1]
        if self.relative_to is not None and path.resolve().is_relative_to(self.relative_to.resolve()):
            return str(path.resolve().relative_to(self.relative_to.resolve()))
        return str(path)

    def close(self) -> None:
        pass
