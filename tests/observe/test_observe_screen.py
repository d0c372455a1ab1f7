"""Screen capture, the unchanged-screen test, and screenshot encodings."""

from __future__ import annotations

import io
import json
import os

import numpy as np
import pytest
from helpers.desktop_fixtures import App, XServer, wait_until, xdotool

from conway.geometry import ScreenGeometry
from conway.imaging import (
    ARCHIVE_ENCODING,
    MODEL_ENCODING,
    Encoding,
    ScreenshotArchive,
    observation_image,
)
from conway.machine.platform import display_problem
from conway.observe.change import CaretTolerantDiff, GreyHash, TileDiff, frame_from_bgra, make_detector
from conway.observe.screen import CaptureError, ScreenObserver
from conway.policies.families import get_resize_rule
from conway.protocols import Observation, PolicyError

# --- change detection on synthetic frames ------------------------------------------


def _frame(w: int = 320, h: int = 200, value: int = 0x00F0F0F0) -> np.ndarray:
    return np.full((h, w), value, dtype=np.uint32)


def _h(frame: np.ndarray) -> str:
    import hashlib

    return hashlib.sha256(frame.tobytes()).hexdigest()


def test_caret_blink_keeps_the_key_and_small_changes_change_it() -> None:
    d = CaretTolerantDiff()
    base = _frame()
    first = d.update(base, _h(base))
    assert first.changed and first.why == "first frame"
    assert not d.update(base.copy(), _h(base)).changed
    caret = base.copy()
    caret[50:67, 100:102] = 0  # a 2x17 px I-beam caret appears
    v = d.update(caret, _h(caret))
    assert not v.changed and v.key == first.key and v.why == "caret only (2x17 px)"
    assert not d.update(base, _h(base)).changed  # ...and disappears
    glyph = base.copy()
    glyph[50:60, 100:106] = 0  # a 6x10 px character: a real change
    v = d.update(glyph, _h(glyph))
    assert v.changed and v.key != first.key


def test_caret_moving_is_a_change_and_drift_is_measured_from_the_reference() -> None:
    d = CaretTolerantDiff()
    base = _frame()
    d.update(base, _h(base))
    a = base.copy()
    a[50:67, 100:102] = 0
    assert not d.update(a, _h(a)).changed
    assert not d.update(base, _h(base)).changed  # blinks off
    b = base.copy()
    b[50:67, 140:142] = 0  # the caret shows up elsewhere: it moved (an arrow key, a click)
    v = d.update(b, _h(b))
    assert v.changed and v.why == "caret moved to (140, 50)"
    c = b.copy()
    c[50:67, 140:142] = np.uint32(0x00F0F0F0)  # and blinks off again: forgiven against the new reference
    assert not d.update(c, _h(c)).changed


def test_alpha_padding_is_ignored_and_size_changes_count() -> None:
    d = CaretTolerantDiff()
    base = _frame()
    d.update(base, _h(base))
    noisy = base | np.uint32(0xFF000000)  # X11's undefined padding byte
    assert not d.update(noisy, _h(noisy)).changed
    bigger = _frame(400, 200)
    v = d.update(bigger, _h(bigger))
    assert v.changed and "size" in v.why


def test_alternative_detectors_behave_as_documented() -> None:
    base = _frame()
    caret = base.copy()
    caret[50:67, 100:102] = 0
    glyph = base.copy()
    glyph[52:58, 101:104] = 0  # a small 3x6 mark, e.g. a dot or a short letter
    t = TileDiff(tile=32, threshold=8)
    t.update(base, _h(base))
    assert not t.update(caret, _h(caret)).changed
    assert not t.update(glyph, _h(glyph)).changed  # the documented weakness
    g = GreyHash()
    k0 = g.update(base, _h(base)).key
    assert g.update(base.copy(), _h(base)).key == k0  # stateless and deterministic
    for name in ("caret", "tile", "greyhash"):
        assert make_detector(name).name == name
    with pytest.raises(ValueError, match="known"):
        make_detector("nope")


def test_frame_from_bgra_checks_the_size() -> None:
    raw = bytearray(4 * 6)
    assert frame_from_bgra(raw, 3, 2).shape == (2, 3)
    with pytest.raises(ValueError):
        frame_from_bgra(raw, 4, 2)


# --- encodings and the archive ----------------------------------------------------


def _obs_from_image(img) -> Observation:
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return Observation(png=buf.getvalue(), captured_size=img.size, source="synthetic", content_hash="x" * 64,
                       change_key="x" * 16)


def test_encoding_choice_and_parse() -> None:
    assert MODEL_ENCODING == Encoding("jpeg", quality=85) and MODEL_ENCODING.mime == "image/jpeg"
    assert ARCHIVE_ENCODING == Encoding("png", level=1) and ARCHIVE_ENCODING.ext == ".png"
    assert Encoding.parse("png") == Encoding("png", level=1)
    assert Encoding.parse("PNG6") == Encoding("png", level=6)
    assert Encoding.parse("jpg90") == Encoding("jpeg", quality=90)
    with pytest.raises(ValueError, match="png"):
        Encoding.parse("webp")


def test_a_captured_image_is_prepared_for_the_model_with_the_family_rule() -> None:
    from PIL import Image

    from conway.policies.base import prepare_image

    img = Image.new("RGB", (1280, 800), (30, 60, 90))
    obs = _obs_from_image(img)
    rule = get_resize_rule("qwen2.5-vl").with_token_cap(768)
    sent = prepare_image(obs, "qwen2.5-vl", rule)
    assert sent.sent_size == rule.target_size((1280, 800)) and sent.captured_size == (1280, 800)
    decoded = Image.open(io.BytesIO(sent.data))
    assert decoded.format == "JPEG" and decoded.size == sent.sent_size
    assert sent.data_url().startswith("data:image/jpeg;base64,")
    png = prepare_image(obs, "none", get_resize_rule("none"), "png")
    assert Image.open(io.BytesIO(png.data)).size == (1280, 800)


def test_archive_keeps_the_newest(tmp_path) -> None:
    from PIL import Image

    arch = ScreenshotArchive(tmp_path / "screenshots", keep=3)
    for i in range(5):
        obs = _obs_from_image(Image.new("RGB", (64, 40), (i * 40, 0, 0)))
        path = arch.save(obs, f"step-{i:06d}")
        assert path is not None and path.read_bytes() == obs.png  # PNG bytes reused as they are
    assert sorted(p.name for p in (tmp_path / "screenshots").iterdir()) == [
        "step-000002.png", "step-000003.png", "step-000004.png"]
    assert ScreenshotArchive(tmp_path / "none", keep=0).save(obs, "x") is None
    jpg = ScreenshotArchive(tmp_path / "jpg", keep=2, encoding=Encoding("jpeg")).save(obs, "a")
    assert jpg is not None and jpg.suffix == ".jpg" and jpg.read_bytes()[:2] == b"\xff\xd8"
    with pytest.raises(ValueError):
        arch.save(obs, "../escape")


# --- the display check ------------------------------------------------------------


@pytest.mark.skipif(not os.sys.platform.startswith("linux"), reason="X11 display names")
def test_display_problem_names_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    assert display_problem() == "DISPLAY is not set (no X display)"
    monkeypatch.setenv("WAYLAND_DISPLAY", "wayland-0")
    assert "Wayland" in (display_problem() or "")
    assert "not a valid" in (display_problem("nonsense") or "")
    p = display_problem(":999")
    assert p is not None and ":999" in p and "unreachable" in p
    p = display_problem("127.0.0.1:99", timeout_s=1.0)  # TCP 6099: refused, quickly
    assert p is not None and "unreachable" in p


def test_capture_without_display_raises_capture_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    if not os.sys.platform.startswith("linux"):
        pytest.skip("X11 only")
    obs = ScreenObserver()
    with pytest.raises(CaptureError, match="DISPLAY is not set") as err:
        obs.observe()
    assert isinstance(err.value, PolicyError)  # the loop's pre-dispatch backoff handles it
    with pytest.raises(CaptureError, match=":999"):
        ScreenObserver(display=":999").observe()


# --- real captures ---------------------------------------------------------------


@pytest.mark.desktop
def test_observe_records_geometry_hash_and_lazy_png(desktop: XServer) -> None:
    from PIL import Image

    with ScreenObserver() as so:
        a = so.observe()
        b = so.observe()
    assert a.source == "screen" and a.captured_size == (1280, 800)
    assert a.logical_size == (1280, 800) and a.origin == (0, 0)
    assert a.geometry == ScreenGeometry(0, 0, 1280, 800, 1280, 800)  # computed once, at capture
    assert len(a.content_hash) == 64 and a.content_hash == b.content_hash and a.change_key == b.change_key
    assert b.meta["change"] == "identical" and a.meta["capture_ms"] >= 0
    assert a._png is None  # not encoded until asked for
    decoded = Image.open(io.BytesIO(a.png))
    assert decoded.size == (1280, 800) and decoded.convert("RGB").tobytes() == a.image.tobytes()
    assert observation_image(a) is a.image
    rec = a.record()
    json.dumps(rec)
    assert rec["captured_size"] == [1280, 800] and rec["sha256"] == a.content_hash


@pytest.mark.desktop
def test_blinking_caret_is_unchanged_and_typing_is_a_change(desktop: XServer, tk_app: App) -> None:
    e = tk_app.widgets["entry"]
    xdotool(desktop.display, "mousemove", str(e["cx"]), str(e["cy"]), "click", "1")
    so = ScreenObserver()
    try:
        def caret_only():
            o = so.observe()
            return o if o.meta["change"].startswith("caret only") else None

        # once the click's redraws are done, the caret blinks: a difference forgiven
        o = wait_until(caret_only, timeout=10, interval=0.05, what="a caret-only frame")
        key, hashes = o.change_key, {o.content_hash}
        verdicts = []

        def full_blink() -> bool:  # back to the reference, then the caret again
            o = so.observe()
            hashes.add(o.content_hash)
            verdicts.append((o.change_key, o.meta["change"]))
            whys = [v for _, v in verdicts]
            return "identical" in whys and any(v.startswith("caret only") for v in
                                               whys[whys.index("identical"):])

        wait_until(full_blink, timeout=10, interval=0.05, what="a full caret blink cycle")
        assert len(hashes) >= 2 and all(k == key for k, _ in verdicts), verdicts
        xdotool(desktop.display, "type", "x")
        o = wait_until(lambda: (lambda o: o if o.change_key != key else None)(so.observe()), timeout=10,
                       what="typing to change the key")
        assert o.meta["change"].startswith("changed within")
    finally:
        so.close()


@pytest.mark.desktop
def test_observer_archives_screenshots_relative_to_home(desktop: XServer, tk_app: App, tmp_path) -> None:
    from types import SimpleNamespace

    from PIL import Image

    from conway.config import ConwayConfig

    cfg = ConwayConfig()
    cfg.observe.keep_screenshots = 2
    home = SimpleNamespace(root=tmp_path, screenshots=tmp_path / "screenshots")
    so = ScreenObserver.from_config(cfg, home)
    try:
        a = so.observe()
        b = so.observe()
        assert a.screenshot_path and a.screenshot_path.startswith("screenshots/shot-")
        if a.content_hash == b.content_hash:
            assert b.screenshot_path == a.screenshot_path  # an identical frame is not written twice
        saved = Image.open(tmp_path / a.screenshot_path)
        assert saved.format == "PNG" and saved.convert("RGB").tobytes() == a.image.tobytes()
        assert a.record()["screenshot"] == a.screenshot_path
        e = tk_app.widgets["entry"]
        for text in ("1", "2", "3"):
            mark = tk_app.log.mark()
            xdotool(desktop.display, "mousemove", str(e["cx"]), str(e["cy"]), "click", "1", "type", text)
            tk_app.log.wait_for(mark, lambda ev: ev["event"] == "text" and ev["value"].endswith(text),
                                what="the typed text")
            so.observe()
        assert len(list((tmp_path / "screenshots").glob("*.png"))) == 2  # keep_screenshots
    finally:
        so.close()
