"""Is this screen the same as the last one, give or take a blinking caret?

The loop asks this after every observation: an unchanged screen drives the
idle backoff (wait longer when nothing happens) and keeps the GUI repetition
counters running; a changed one resets them. A text caret blinks about twice
a second, so "identical pixels" would call almost every frame of an editor a
change. The detectors here turn each frame into a `change_key`: equal keys
mean "unchanged".

Three detectors, measured against each other by ``scripts/bench/bench_observe.py``
(numbers in docs/measurements.md):

* `CaretTolerantDiff` (the default): exact pixel comparison with the frame
  that set the current key; a difference that looks like an I-beam caret
  shown or hidden counts as unchanged: every changed pixel lies in one solid
  vertical bar (at most ``caret_max_w`` px wide, ``caret_min_h`` to
  ``caret_max_h`` px tall) of one colour in the frame that shows it (and,
  when it disappears, every pixel of the bar changed). Anything else, however small (a typed character, a
  ticked box, the caret moving), is a change. Known blind spot: one typed
  character that is itself a solid bar (``l``, ``|``) while the caret is in
  its "off" phase in both frames.
* `TileDiff`: mean absolute grey difference per tile above a threshold.
  Tolerates the caret only by also ignoring changes as small as a character.
* `GreyHash`: hash of a small downscaled, quantized grey frame. Stateless,
  but a caret near a quantization boundary flips it and small real changes
  vanish in the downscale.

Frames are ``(height, width)`` numpy arrays of packed 32-bit pixels (mss's
BGRA buffer viewed as ``uint32``); `frame_from_bgra` makes one without
copying. The stateful detectors keep one reference frame (a copy).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Protocol

import numpy as np

__all__ = [
    "ChangeDetector",
    "ChangeVerdict",
    "CaretTolerantDiff",
    "TileDiff",
    "GreyHash",
    "frame_from_bgra",
    "make_detector",
    "DETECTORS",
]


def frame_from_bgra(raw: bytes | bytearray | memoryview, width: int, height: int) -> np.ndarray:
    """View a BGRA (or any 4-byte-per-pixel) buffer as a ``(h, w)`` uint32 frame, no copy."""
    frame = np.frombuffer(raw, dtype=np.uint32)
    if frame.size != width * height:
        raise ValueError(f"buffer holds {frame.size} pixels, expected {width}x{height}")
    return frame.reshape(height, width)


@dataclass(frozen=True)
class ChangeVerdict:
    key: str
    """Equal keys across frames mean "unchanged"."""
    changed: bool
    """Whether this frame got a new key."""
    why: str
    """One short phrase for the journal: `first frame`, `identical`, `caret only (2x17 px)`, ..."""


class ChangeDetector(Protocol):
    name: str

    def update(self, frame: np.ndarray, content_hash: str) -> ChangeVerdict:
        """Judge ``frame`` (see module doc) whose exact hash is ``content_hash``."""
        ...

    def reset(self) -> None: ...


def _grey(frame: np.ndarray) -> np.ndarray:
    """Cheap integer luma (B + 2G + R) / 4 of a packed BGRA/BGRX uint32 frame."""
    b = (frame & 0xFF).astype(np.uint16)
    g = ((frame >> 8) & 0xFF).astype(np.uint16)
    r = ((frame >> 16) & 0xFF).astype(np.uint16)
    return ((b + 2 * g + r) >> 2).astype(np.uint8)


class CaretTolerantDiff:
    """Exact comparison with the reference frame, forgiving one caret-shaped bar.

    The reference is the frame that set the current key, not merely the
    previous frame, so a caret that blinks on and off keeps the key, while a
    slow drift of small changes still adds up to a change. The first caret
    forgiven against a reference is remembered: a caret-shaped difference
    somewhere else later means the caret moved, which is a change.
    """

    name = "caret"

    def __init__(self, caret_max_w: int = 3, caret_min_h: int = 10, caret_max_h: int = 48):
        if caret_max_w < 0 or caret_min_h < 0 or caret_max_h < caret_min_h:
            raise ValueError("caret bounds must be >= 0 and caret_min_h <= caret_max_h")
        self.caret_max_w = caret_max_w
        self.caret_min_h = caret_min_h
        self.caret_max_h = caret_max_h
        self._ref: np.ndarray | None = None
        self._key = ""
        self._caret: tuple[int, int, int, int] | None = None

    def reset(self) -> None:
        self._ref, self._key, self._caret = None, "", None

    def _take(self, frame: np.ndarray, content_hash: str, why: str) -> ChangeVerdict:
        self._ref = np.array(frame, dtype=np.uint32, copy=True)
        self._key = content_hash[:16]
        self._caret = None
        return ChangeVerdict(self._key, True, why)

    def update(self, frame: np.ndarray, content_hash: str) -> ChangeVerdict:
        ref = self._ref
        if ref is None:
            return self._take(frame, content_hash, "first frame")
        if ref.shape != frame.shape:
            return self._take(frame, content_hash, f"size changed to {frame.shape[1]}x{frame.shape[0]}")
        # the alpha byte of an X11 capture is undefined padding: ignore it
        diff = (ref ^ frame) & np.uint32(0x00FFFFFF)
        rows = np.flatnonzero(diff.any(axis=1))
        if rows.size == 0:
            return ChangeVerdict(self._key, False, "identical")
        cols = np.flatnonzero(diff.any(axis=0))
        w = int(cols[-1] - cols[0] + 1)
        h = int(rows[-1] - rows[0] + 1)
        box = (int(cols[0]), int(rows[0]), w, h)
        if self._caret_like(ref, frame, diff, box):
            if self._caret is None:
                self._caret = box
            if box == self._caret:
                return ChangeVerdict(self._key, False, f"caret only ({w}x{h} px)")
            return self._take(frame, content_hash, f"caret moved to ({box[0]}, {box[1]})")
        return self._take(frame, content_hash, f"changed within {w}x{h} px at ({int(cols[0])}, {int(rows[0])})")


    def _caret_like(self, ref: np.ndarray, frame: np.ndarray, diff: np.ndarray,
                    box: tuple[int, int, int, int]) -> bool:
        x, y, w, h = box
        if w > self.caret_max_w or not self.caret_min_h <= h <= self.caret_max_h:
            return False
        win = (slice(y, y + h), slice(x, x + w))
        rgb = np.uint32(0x00FFFFFF)
        if np.unique(frame[win] & rgb).size == 1:
            return True  # a solid bar appeared (over pixels that may already have had its colour)
        # a solid bar disappeared: only when every pixel changed, since a glyph
        # with gaps ("i", "!") appearing on a plain background looks the same
        # otherwise. The rare caret that sat on same-coloured pixels costs one
        # spurious change, after which the caret-off frame is the reference.
        return bool(diff[win].all()) and np.unique(ref[win] & rgb).size == 1


class TileDiff:
    """Per-tile mean absolute grey difference against the reference frame.

    A tile whose mean difference exceeds ``threshold`` grey levels is
    changed; any changed tile changes the key. Kept as the measured
    alternative: a threshold high enough to ignore a caret also ignores a
    typed character (see the module doc).
    """

    name = "tile"

    def __init__(self, tile: int = 32, threshold: float = 8.0):
        if tile < 1 or threshold < 0:
            raise ValueError("tile must be >= 1 and threshold >= 0")
        self.tile = tile
        self.threshold = threshold
        self._ref: np.ndarray | None = None
        self._key = ""

    def reset(self) -> None:
        self._ref, self._key = None, ""

    def _tiles(self, grey: np.ndarray) -> np.ndarray:
        t = self.tile
        h, w = grey.shape
        hh, ww = -(-h // t) * t, -(-w // t) * t
        if (hh, ww) != (h, w):
            grey = np.pad(grey, ((0, hh - h), (0, ww - w)))
        return grey.reshape(hh // t, t, ww // t, t)

    def update(self, frame: np.ndarray, content_hash: str) -> ChangeVerdict:
        grey = _grey(frame)
        ref = self._ref
        if ref is None or ref.shape != grey.shape:
            self._ref, self._key = grey, content_hash[:16]
            return ChangeVerdict(self._key, True, "first frame" if ref is None else "size changed")
        d = np.abs(grey.astype(np.int16) - ref.astype(np.int16)).astype(np.uint16)
        means = self._tiles(d).mean(axis=(1, 3))
        n = int((means > self.threshold).sum())
        if n == 0:
            return ChangeVerdict(self._key, False, "below tile threshold" if d.any() else "identical")
        self._ref, self._key = grey, content_hash[:16]
        return ChangeVerdict(self._key, True, f"{n} tile(s) changed")


class GreyHash:
    """Hash of a ``size`` grey thumbnail quantized to ``levels`` grey levels (stateless)."""

    name = "greyhash"

    def __init__(self, size: tuple[int, int] = (64, 40), levels: int = 16):
        if min(size) < 1 or not 2 <= levels <= 256:
            raise ValueError("size must be positive and levels in 2..256")
        self.size = size
        self.levels = levels
        self._last = ""

    def reset(self) -> None:
        self._last = ""

    def update(self, frame: np.ndarray, content_hash: str) -> ChangeVerdict:
        from PIL import Image

        grey = Image.fromarray(_grey(frame), mode="L")
        small = np.asarray(grey.resize(self.size, Image.Resampling.BOX))
        q = (small.astype(np.uint16) * self.levels // 256).astype(np.uint8)
        key = hashlib.blake2b(q.tobytes() + repr(frame.shape).encode(), digest_size=8).hexdigest()
        changed = key != self._last
        why = ("first frame" if not self._last else "thumbnail changed") if changed else "same thumbnail"
        self._last = key
        return ChangeVerdict(key, changed, why)


DETECTORS = {"caret": CaretTolerantDiff, "tile": TileDiff, "greyhash": GreyHash}


def make_detector(name: str = "caret") -> ChangeDetector:
    try:
        return DETECTORS[name]()
    except KeyError:
        raise ValueError(f"unknown change detector {name!r}; known: {', '.join(DETECTORS)}") from None
