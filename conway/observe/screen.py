"""Screen observations: the primary monitor captured with mss.

One `ScreenObserver.observe()` grabs the monitor once and returns a
`ScreenObservation` (an `Observation`) carrying:

* ``image``: a Pillow RGB image of the capture, built once without copying
  the pixels; the model pipeline resizes and encodes it
  (see `prepare_image` in `conway.policies`);
* ``png``: the same frame PNG-encoded, computed lazily on first access (and
  cached), so a cycle that never archives or sends PNG never pays for it;
* ``geometry``: the `ScreenGeometry` of the capture, computed once here from
  the captured size (physical pixels), mss's monitor rectangle (its size in
  input coordinates) and its top-left (the origin); the loop hands it to the
  toolbox with each action, and ``captured_size``, ``logical_size`` and
  ``origin`` repeat it for the journal;
* ``content_hash``: sha256 of the packed pixels plus the size (equal only
  for identical frames), and ``change_key`` from a change detector that
  forgives a blinking caret (`conway.observe.change`).

The display is checked before connecting (`display_problem`), and any
capture failure (no display, a display that went away, a refused
connection) raises `CaptureError`, a `PolicyError`: a pre-dispatch
failure the loop answers with its recovery backoff. The next `observe()`
reconnects, so a display that comes back is picked up again.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conway.geometry import ScreenGeometry
from conway.machine.platform import display_problem, x11_platform
from conway.observe.change import ChangeDetector, frame_from_bgra, make_detector
from conway.protocols import Observation, PolicyError

if TYPE_CHECKING:  # pragma: no cover
    from PIL import Image

    from conway.imaging import ScreenshotArchive

__all__ = [
    "CaptureError",
    "Capture",
    "ScreenObservation",
    "ScreenObserver",
]


class CaptureError(PolicyError):
    """The screen could not be captured (no display, lost display, capture failure)."""


# --------------------------------------------------------------------------
# Observations
# --------------------------------------------------------------------------


class ScreenObservation(Observation):
    """An `Observation` that also carries the Pillow image and encodes PNG lazily."""

    def __init__(self, *, image: Image.Image, png_level: int = 1, **fields: Any):
        self._png_level = png_level
        self._png: bytes | None = None
        super().__init__(png=None, image=image, **fields)

    @property  # type: ignore[override]
    def png(self) -> bytes | None:
        if self._png is None and self.image is not None:
            from conway.imaging import encode_png

            self._png = encode_png(self.image, level=self._png_level)
        return self._png

    @png.setter
    def png(self, value: bytes | None) -> None:
        self._png = value

    def __repr__(self) -> str:  # the dataclass repr would encode the PNG
        return (f"ScreenObservation(captured_size={self.captured_size}, origin={self.origin}, "
                f"hash={self.content_hash[:12]}, change_key={self.change_key})")


class Capture:
    """One raw grab: packed BGRA bytes, sizes and origin (no encoding, no hashing)."""

    __slots__ = ("raw", "captured_size", "logical_size", "origin", "elapsed_s")

    def __init__(self, raw: bytearray, captured_size: tuple[int, int], logical_size: tuple[int, int],
                 origin: tuple[int, int], elapsed_s: float):
        self.raw = raw
        self.captured_size = captured_size
        self.logical_size = logical_size
        self.origin = origin
        self.elapsed_s = elapsed_s

    def image(self) -> Image.Image:
        """The capture as a Pillow RGB image (one BGRX -> RGB conversion)."""
        from PIL import Image

        return Image.frombuffer("RGB", self.captured_size, self.raw, "raw", "BGRX", 0, 1)

    def geometry(self) -> ScreenGeometry:
        """Where this grab sits in input space: the one `ScreenGeometry` its observation carries."""
        (cw, ch), (lw, lh), (x, y) = self.captured_size, self.logical_size, self.origin
        return ScreenGeometry(origin_x=x, origin_y=y, captured_w=cw, captured_h=ch, logical_w=lw, logical_h=lh)

    def frame(self):  # -> numpy (h, w) uint32
        return frame_from_bgra(self.raw, *self.captured_size)

    def content_hash(self) -> str:
        h = hashlib.sha256(self.raw)
        h.update(f"{self.captured_size[0]}x{self.captured_size[1]}".encode())
        return h.hexdigest()


class ScreenObserver:
    """Captures one monitor with ``mss.MSS`` and judges change.

    Args:
        monitor: mss monitor index (1 = first physical monitor); ``None``
            picks mss's primary monitor.
        detector: a change detector or its name (``caret``, ``tile``,
            ``greyhash``; see `conway.observe.change`).
        png_level: zlib level of the lazily encoded ``png`` (1: measured
            best trade-off, see `conway.imaging`).
        accessibility: add an AT-SPI snapshot of the foreground application
            to each observation (Linux; off by default, costs ~0.2-0.4 s).
        accessibility_timeout_s, accessibility_max_chars: its time limit and
            the cap on its text.
        display: X display name to check and use (default ``$DISPLAY``).
        archive: where to keep screenshots (`ScreenshotArchive`); each
            observation is saved there and ``screenshot_path`` set (relative
            to ``relative_to`` when given). An unchanged frame (same exact
            hash as the last one saved) reuses that file.
        relative_to: base for ``screenshot_path`` (the Conway home).
        accessibility_env: the accessibility helper's environment when it is
            not Conway's own.
        accessibility_helper: how the helper is started when the screen is a
            task desktop's: inside its box (`DisposableDesktop.helper_argv`),
            never on this side with the desktop's addresses.
    """

    source = "screen"

    def __init__(
        self,
        *,
        monitor: int | None = None,
        detector: ChangeDetector | str = "caret",
        png_level: int = 1,
        accessibility: bool = False,
        accessibility_timeout_s: float = 3.0,
        accessibility_max_chars: int = 6000,
        display: str | None = None,
        archive: ScreenshotArchive | None = None,
        relative_to: str | os.PathLike[str] | None = None,
        accessibility_env: dict[str, str] | None = None,
        accessibility_helper: list[str] | None = None,
    ):
        self.monitor = monitor
        self.archive = archive
        self.relative_to = Path(relative_to) if relative_to is not None else None
        self._last_saved: tuple[str, Path] | None = None
        self.detector = make_detector(detector) if isinstance(detector, str) else detector
        self.png_level = png_level
        self.accessibility = accessibility
        self.accessibility_timeout_s = accessibility_timeout_s
        self.accessibility_max_chars = accessibility_max_chars
        self.display = display
        self.accessibility_env = accessibility_env
        """The accessibility helper's environment when it is not Conway's own."""
        self.accessibility_helper = accessibility_helper
        self._mss: Any = None

    @classmethod
    def from_config(cls, config: Any, home: Any, *, display: str | None = None,
                    accessibility_env: dict[str, str] | None = None,
                    accessibility_helper: list[str] | None = None) -> ScreenObserver:
        """From a `ConwayConfig` (its ``observe`` section) and a `Home` (screenshots/ lives there); `display` and
        `accessibility_helper` when the screen is not Conway's own (a task's disposable desktop)."""
        from conway.imaging import ScreenshotArchive

        oc = config.observe
        archive = ScreenshotArchive(home.screenshots, keep=oc.keep_screenshots) if oc.keep_screenshots else None
        return cls(accessibility=oc.accessibility, accessibility_timeout_s=oc.accessibility_timeout_s,
                   accessibility_max_chars=oc.accessibility_max_chars, archive=archive, relative_to=home.root,
                   display=display, accessibility_env=accessibility_env, accessibility_helper=accessibility_helper)

    # --- connection ----------------------------------------------------------

    def _display_name(self) -> str | None:
        return self.display if self.display is not None else os.environ.get("DISPLAY")

    def _connect(self) -> Any:
        if self._mss is not None:
            return self._mss
        problem = display_problem(self._display_name())
        if problem:
            raise CaptureError(f"cannot capture the screen: {problem}")
        try:
            import mss
        except ImportError as exc:
            raise CaptureError(f"cannot capture the screen: mss is not installed ({exc}); "
                               "pip install 'conway[gui]'") from exc
        kwargs: dict[str, Any] = {}
        if x11_platform() and self.display is not None:
            kwargs["display"] = self.display
        try:
            self._mss = mss.MSS(**kwargs)
        except Exception as exc:
            raise CaptureError(f"cannot capture the screen: {type(exc).__name__}: {exc}") from exc
        return self._mss

    def _drop(self) -> None:
        sct, self._mss = self._mss, None
        if sct is not None:
            try:
                sct.close()
            except Exception:
                pass  # a lost display refuses even the goodbye

    def close(self) -> None:
        self._drop()

    # --- capture -------------------------------------------------------------

    def capture(self) -> Capture:
        """Grab the monitor once; raise `CaptureError` on any failure."""
        sct = self._connect()
        t0 = time.perf_counter()
        try:
            monitors = sct.monitors
            if self.monitor is None:
                mon = sct.primary_monitor
            else:
                if not 0 <= self.monitor < len(monitors):
                    raise CaptureError(f"monitor {self.monitor} does not exist "
                                       f"(mss sees {len(monitors) - 1} monitor(s))")
                mon = monitors[self.monitor]
            shot = sct.grab(mon)
            raw = shot.raw
            size = (int(shot.width), int(shot.height))
        except CaptureError:
            raise
        except Exception as exc:
            self._drop()  # reconnect next time: the display may come back
            reason = str(exc) or type(exc).__name__
            problem = display_problem(self._display_name())
            if problem:
                reason = f"{problem} ({reason})"
            raise CaptureError(f"screen capture failed: {reason}") from exc
        elapsed = time.perf_counter() - t0
        logical = (int(mon["width"]), int(mon["height"]))
        origin = (int(mon["left"]), int(mon["top"]))
        if len(raw) != size[0] * size[1] * 4:
            raise CaptureError(f"screen capture returned {len(raw)} bytes for {size[0]}x{size[1]}")
        return Capture(raw, size, logical, origin, elapsed)

    def observe(self) -> ScreenObservation:
        cap = self.capture()
        digest = cap.content_hash()
        verdict = self.detector.update(cap.frame(), digest)
        geometry = cap.geometry()
        meta: dict[str, Any] = {"capture_ms": round(cap.elapsed_s * 1000, 3), "change": verdict.why}
        text = None
        if self.accessibility:
            from conway.observe.accessibility import snapshot

            snap = snapshot(timeout_s=self.accessibility_timeout_s, max_chars=self.accessibility_max_chars,
                            geometry=geometry, env=self.accessibility_env, helper_prefix=self.accessibility_helper)
            text = snap.text
            meta["accessibility"] = snap.summary()
        obs = ScreenObservation(
            image=cap.image(),
            png_level=self.png_level,
            captured_size=cap.captured_size,
            source=self.source,
            content_hash=digest,
            change_key=verdict.key,
            logical_size=geometry.logical_size,
            origin=(geometry.origin_x, geometry.origin_y),
            geometry=geometry,
            accessibility=text,
            meta=meta,
        )
        if self.archive is not None:
            obs.screenshot_path = self._save(obs)
        return obs

    def _save(self, obs: ScreenObservation) -> str | None:
        last = self._last_saved
        if last is not None and last[0] == obs.content_hash and last[1].exists():
            path: Path | None = last[1]
        else:
            name = f"shot-{time.time_ns() // 1_000_000}-{obs.content_hash[:12]}"
            try:
                path = self.archive.save(obs, name) if self.archive else None
            except OSError as exc:  # a full disk must not stop the loop: say so in the record
                obs.meta["screenshot_error"] = str(exc)
                return None
            if path is not None:
                self._last_saved = (obs.content_hash, path)
        if path is None:
            return None
        if self.relative_to is not None:
            try:
                return str(path.resolve().relative_to(self.relative_to.resolve()))
            except ValueError:
                pass
        return str(path)

    def __enter__(self) -> ScreenObserver:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
