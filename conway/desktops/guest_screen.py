"""The observer of a guest desktop: its /screenshot (and, when enabled, its /accessibility XML) as an `Observation`.

The screenshot is the guest's own PNG at its screen's size, so the geometry is the identity (origin 0, scale 1) and
an action's pixels are the guest's input pixels. The image is decoded with a pixel limit (the guest's bytes are
data) and judged for change by the same detector the local screen uses.
"""

from __future__ import annotations

import hashlib
import io
import time
from typing import Any

from conway.desktops.guest_client import GuestClient, GuestError
from conway.geometry import ScreenGeometry
from conway.observe.change import ChangeDetector, frame_from_bgra, make_detector
from conway.observe.screen import CaptureError, ScreenObservation

MAX_PIXELS = 8192 * 8192
"""A screenshot larger than this is refused before it is decoded (a decompression bomb is the guest's to send)."""


def decode_screenshot(data: bytes) -> Any:
    """The guest's PNG/JPEG as a Pillow RGB image; CaptureError (one line) when it is not a sane image."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as img:
            w, h = img.size
            if w <= 0 or h <= 0 or w * h > MAX_PIXELS:
                raise CaptureError(f"the guest's screenshot is {w}x{h}: refused (at most {MAX_PIXELS} pixels)")
            return img.convert("RGB")
    except CaptureError:
        raise
    except Exception as exc:
        raise CaptureError(f"the guest's screenshot is not a readable image: {type(exc).__name__}") from None


class GuestObserver:
    """`Observer` of one guest; `archive`/`relative_to` as `ScreenObserver`'s (screenshots kept in the home)."""

    source = "screen"

    def __init__(self, client: GuestClient, *, detector: ChangeDetector | str = "caret", accessibility: bool = False,
                 accessibility_max_chars: int = 6000, archive: Any = None, relative_to: Any = None):
        self.client = client
        self.detector = make_detector(detector) if isinstance(detector, str) else detector
        self.accessibility = accessibility
        self.accessibility_max_chars = accessibility_max_chars
        self.archive = archive
        self.relative_to = relative_to

    @classmethod
    def from_config(cls, client: GuestClient, config: Any, home: Any) -> "GuestObserver":
        from conway.imaging import ScreenshotArchive

        oc = config.observe
        archive = ScreenshotArchive(home.screenshots, keep=oc.keep_screenshots) if oc.keep_screenshots else None
        return cls(client, accessibility=oc.accessibility, accessibility_max_chars=oc.accessibility_max_chars,
                   archive=archive, relative_to=home.root)

    def observe(self) -> ScreenObservation:
        t0 = time.perf_counter()
        try:
            data = self.client.screenshot()
        except GuestError as exc:  # a PolicyError: the loop's recovery backoff, as for a lost local display
            raise CaptureError(f"the guest's screenshot failed: {exc}") from None
        image = decode_screenshot(data)
        elapsed = time.perf_counter() - t0
        raw = image.tobytes("raw", "BGRX")
        w, h = image.size
        digest = hashlib.sha256(raw + f"{w}x{h}".encode()).hexdigest()
        verdict = self.detector.update(frame_from_bgra(raw, w, h), digest)
        geometry = ScreenGeometry(origin_x=0, origin_y=0, captured_w=w, captured_h=h, logical_w=w, logical_h=h)
        meta: dict[str, Any] = {"capture_ms": round(elapsed * 1000, 3), "change": verdict.why}
        text = None
        if self.accessibility:
            try:
                xml = self.client.accessibility_tree()
                text = xml[: self.accessibility_max_chars]
                meta["accessibility"] = {"chars": len(xml), "cut": len(xml) > self.accessibility_max_chars}
            except GuestError as exc:
                meta["accessibility"] = {"error": str(exc)}
        obs = ScreenObservation(image=image, captured_size=(w, h), source=self.source, content_hash=digest,
                                change_key=verdict.key, logical_size=(w, h), origin=(0, 0), geometry=geometry,
                                accessibility=text, meta=meta)
        if self.archive is not None:
            obs.screenshot_path = self._save(obs)
        return obs

    def _save(self, obs: ScreenObservation) -> str | None:
        name = f"shot-{time.time_ns() // 1_000_000}-{obs.content_hash[:12]}"
        try:
            path = self.archive.save(obs, name)
        except OSError as exc:  # a full disk must not stop the loop: say so in the record
            obs.meta["screenshot_error"] = str(exc)
            return None
        if path is None:
            return None
        try:
            return str(path.resolve().relative_to(self.relative_to.resolve())) if self.relative_to else str(path)
        except ValueError:
            return str(path)

    def close(self) -> None:
        pass
