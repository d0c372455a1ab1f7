"""Tests for conway.geometry: smart resize and the coordinate maps.

Expected values in the tables were computed by hand (shown in comments where
the arithmetic is not obvious); sizes are (width, height) unless noted.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from conway.geometry import (
    NO_RESIZE,
    QWEN25_VL_RULE,
    SHARED_RESIZE_RULES,
    Convention,
    ResizeRule,
    ScreenGeometry,
    captured_to_input,
    captured_to_model,
    image_tokens,
    input_to_captured,
    max_pixels_for_tokens,
    model_point_error,
    model_to_captured,
    model_to_input,
    resize_for_model,
    smart_resize,
    within_image,
)
from conway.policies.families import FAMILIES, RESIZE_RULES, get_resize_rule

QWEN = RESIZE_RULES["qwen2.5-vl"]
QWEN3 = RESIZE_RULES["qwen3-vl"]
SCALES = [1.0, 1.25, 1.5, 2.0]


# ---------------------------------------------------------------- smart resize


def test_smart_resize_required_cases() -> None:
    # (height, width) in, (height, width) out, as in qwen-vl-utils
    assert smart_resize(1080, 1920, 28, 3136, 12845056) == (1092, 1932)
    assert smart_resize(1440, 2560, 28, 3136, 12845056) == (1428, 2548)
    assert smart_resize(1080, 1920) == (1092, 1932)  # defaults are the same bounds


def test_smart_resize_rounds_half_to_even() -> None:
    # 1022/28 = 36.5 -> 36 (half-even), not 37; 994/28 = 35.5 -> 36
    assert smart_resize(1022, 1022) == (1008, 1008)
    assert smart_resize(994, 994) == (1008, 1008)
    # 70/28 = 2.5 -> 2; 98/28 = 3.5 -> 4
    assert smart_resize(70, 98) == (56, 112)
    # factor 32: 720/32 = 22.5 -> 22, 2160/32 = 67.5 -> 68
    assert smart_resize(720, 1280, 32, 4096, 16777216) == (704, 1280)
    assert smart_resize(2160, 3840, 32, 4096, 16777216) == (2176, 3840)


def test_smart_resize_min_branch() -> None:
    # 10x10 rounds to 28x28 = 784 < 3136; beta = sqrt(3136/100) = 5.6 -> 56x56
    assert smart_resize(10, 10) == (56, 56)
    # uitars min 78400 = 280^2: 100x100 -> beta 2.8 -> 280x280
    assert smart_resize(100, 100, 28, 78400, 12845056) == (280, 280)


def test_smart_resize_max_branch() -> None:
    # 5120x2880: beta = sqrt(14745600/12845056) = 15/14;
    # 2880*14/15 = 2688 = 96*28, 5120*14/15 = 4778.7 -> 170*28 = 4760
    assert smart_resize(2880, 5120) == (2688, 4760)
    # 7680x4320 with factor 32: beta = 45/32; 4320*32/45 = 3072, 7680*32/45 = 5461.3 -> 5440
    assert smart_resize(4320, 7680, 32, 4096, 16777216) == (3072, 5440)


@pytest.mark.parametrize(
    ("rule", "captured", "sent"),
    [
        # qwen2 / 2.5 / opencua: both sides rounded to the nearest multiple of 28
        ("qwen2.5-vl", (1920, 1080), (1932, 1092)),
        ("qwen2.5-vl", (2560, 1440), (2548, 1428)),
        ("qwen2.5-vl", (1366, 768), (1372, 756)),  # 48.79 -> 49, 27.43 -> 27
        ("qwen2.5-vl", (1440, 900), (1428, 896)),  # 51.43 -> 51, 32.14 -> 32
        ("qwen2.5-vl", (1280, 720), (1288, 728)),  # 45.71 -> 46, 25.71 -> 26
        ("qwen2.5-vl", (1280, 800), (1288, 812)),  # 28.57 -> 29
        ("qwen2.5-vl", (1024, 768), (1036, 756)),
        ("qwen2.5-vl", (2880, 1800), (2884, 1792)),
        ("qwen2.5-vl", (3840, 2160), (3836, 2156)),  # 8.27 Mpx, under the max
        ("qwen2.5-vl", (5120, 2880), (4760, 2688)),  # over the max
        ("qwen2.5-vl", (7680, 4320), (4760, 2688)),  # beta = 45/28
        ("qwen2-vl", (1920, 1080), (1932, 1092)),
        ("opencua", (1920, 1080), (1932, 1092)),
        ("uitars", (1920, 1080), (1932, 1092)),
        ("uitars", (100, 100), (280, 280)),
        # qwen3-vl: multiples of 32
        ("qwen3-vl", (1920, 1080), (1920, 1088)),  # 33.75 -> 34
        ("qwen3-vl", (2560, 1440), (2560, 1440)),
        ("qwen3-vl", (1366, 768), (1376, 768)),  # 42.69 -> 43
        ("qwen3-vl", (1440, 900), (1440, 896)),
        ("qwen3-vl", (1280, 720), (1280, 704)),  # 22.5 -> 22 (half-even)
        ("qwen3-vl", (3840, 2160), (3840, 2176)),  # 67.5 -> 68 (half-even)
        ("qwen3-vl", (5120, 2880), (5120, 2880)),
        ("qwen3-vl", (7680, 4320), (5440, 3072)),
        # none: as captured
        ("none", (1920, 1080), (1920, 1080)),
        ("none", (1234, 567), (1234, 567)),
        ("none", (7, 3000), (7, 3000)),
    ],
)
def test_rule_table(rule: str, captured: tuple[int, int], sent: tuple[int, int]) -> None:
    assert get_resize_rule(rule).target_size(captured) == sent


def test_presets() -> None:
    assert QWEN == ResizeRule(28, 3136, 12845056, name="any")  # equal when they resize alike, whatever the name
    assert QWEN is QWEN25_VL_RULE and RESIZE_RULES["none"] is NO_RESIZE
    assert RESIZE_RULES["qwen2-vl"] == QWEN == RESIZE_RULES["opencua"]
    assert RESIZE_RULES["uitars"] == ResizeRule(28, 78400, 12845056, name="uitars")
    assert QWEN3 == ResizeRule(32, 4096, 16777216, name="qwen3-vl")
    assert all(name == rule.name for name, rule in RESIZE_RULES.items())  # the name journals record
    assert set(RESIZE_RULES) == {r.name for r in SHARED_RESIZE_RULES} | {f.resize.name for f in FAMILIES.values()}
    assert RESIZE_RULES["none"].passthrough
    assert not QWEN.passthrough
    assert get_resize_rule(" Qwen2.5-VL ") is QWEN
    with pytest.raises(ValueError, match="known: .*qwen3-vl"):
        get_resize_rule("gpt-vision")
    with pytest.raises(Exception):
        QWEN.factor = 14  # type: ignore[misc]  # frozen
    with pytest.raises(ValueError):
        ResizeRule(28, 1000, 10, name="bad")


@pytest.mark.parametrize(("h", "w"), [(10, 2001), (2001, 10), (1, 201), (5, 1500)])
def test_aspect_ratio_rejected(h: int, w: int) -> None:
    ratio = max(h, w) / min(h, w)
    with pytest.raises(ValueError, match=f"aspect ratio {ratio:g}"):
        smart_resize(h, w)
    with pytest.raises(ValueError, match="exceeds 200"):
        QWEN.target_size((w, h))


def test_aspect_ratio_200_accepted_and_bad_sizes() -> None:
    h, w = smart_resize(10, 2000)  # exactly 200 is allowed
    assert h % 28 == 0 and w % 28 == 0
    with pytest.raises(ValueError, match="positive"):
        smart_resize(0, 100)
    with pytest.raises(ValueError, match="max_pixels"):
        smart_resize(100, 100, 28, 5000, 4000)


def test_token_cap() -> None:
    assert max_pixels_for_tokens(4096, 28) == 4096 * 784 == 3211264
    assert max_pixels_for_tokens(1024, 32) == 1024 * 1024
    capped = QWEN.with_token_cap(4096)
    assert capped == ResizeRule(28, 3136, 3211264, name="qwen2.5-vl") and capped.name == "qwen2.5-vl"
    # 2560x1440: beta = 15/14 -> 1344 = 48*28, 2389.3 -> 85*28 = 2380
    assert capped.target_size((2560, 1440)) == (2380, 1344)
    assert image_tokens((2380, 1344), 28) == 85 * 48 == 4080
    assert image_tokens((1932, 1092), 28) == 69 * 39
    assert QWEN.with_token_cap(10**9) == QWEN  # never raises the rule's own max
    with pytest.raises(ValueError, match="min_pixels"):
        RESIZE_RULES["uitars"].with_token_cap(50)  # 50*784 < 78400
    with pytest.raises(ValueError):
        max_pixels_for_tokens(0)


_RULES = st.sampled_from(
    [QWEN, RESIZE_RULES["uitars"], QWEN3]
    + [QWEN.with_token_cap(n) for n in (256, 1024, 4096)]
    + [QWEN3.with_token_cap(n) for n in (256, 1280, 4096)]
)


@settings(max_examples=600, deadline=None)
@given(rule=_RULES, w=st.integers(1, 16000), h=st.integers(1, 16000))
def test_bounds_and_factor_property(rule: ResizeRule, w: int, h: int) -> None:
    assume(max(w, h) / min(w, h) <= 200)
    sw, sh = rule.target_size((w, h))
    f = rule.factor
    assert sw % f == 0 and sh % f == 0 and sw >= f and sh >= f
    assert rule.max_pixels is not None
    assert sw * sh >= rule.min_pixels
    # within max unless a side had to be held at one factor (very thin images)
    if min(sw, sh) > f:
        assert sw * sh <= rule.max_pixels
    # the larger side stays the larger side (aspect roughly kept)
    if w >= 2 * h:
        assert sw >= sh
    if h >= 2 * w:
        assert sh >= sw


@settings(max_examples=300, deadline=None)
@given(w=st.integers(1, 16000), h=st.integers(1, 16000))
def test_smart_resize_within_range_when_possible(w: int, h: int) -> None:
    assume(max(w, h) / min(w, h) <= 200)
    rh, rw = smart_resize(h, w, 28, 3136, 12845056)
    assert 3136 <= rh * rw <= 12845056


# ---------------------------------------------------------------- resize_for_model


def test_resize_for_model() -> None:
    Image = pytest.importorskip("PIL.Image")
    img = Image.new("RGB", (1920, 1080), (10, 20, 30))
    out, size = resize_for_model(img, QWEN)
    assert size == (1932, 1092) == out.size
    out3, size3 = resize_for_model(img, QWEN3)
    assert size3 == (1920, 1088) == out3.size
    big = Image.new("RGB", (5120, 2880))
    out_big, size_big = resize_for_model(big, QWEN.with_token_cap(4096))
    assert out_big.size == size_big == (2380, 1344)
    # no-op targets return the very same image
    same, s = resize_for_model(img, RESIZE_RULES["none"])
    assert same is img and s == (1920, 1080)
    exact = Image.new("RGB", (1932, 1092))
    assert resize_for_model(exact, QWEN)[0] is exact


# ---------------------------------------------------------------- conventions

CAP = (1920, 1080)
SENT = (1932, 1092)


@pytest.mark.parametrize(
    ("conv", "model_pt", "captured_pt"),
    [
        (Convention.ABSOLUTE, (966, 546), (960, 540)),
        (Convention.ABSOLUTE, (0, 0), (0, 0)),
        (Convention.ABSOLUTE, (1932, 1092), (1920, 1080)),
        (Convention.ABSOLUTE, (483, 273), (480, 270)),
        (Convention.RELATIVE, (0.5, 0.5), (960, 540)),
        (Convention.RELATIVE, (0.25, 1.0), (480, 1080)),
        (Convention.RELATIVE1000, (500, 500), (960, 540)),
        (Convention.RELATIVE1000, (100, 900), (192, 972)),
        (Convention.RELATIVE999, (999, 999), (1920, 1080)),  # 999 is the edge: x * width / 999
        (Convention.RELATIVE999, (500, 500), (500 * 1920 / 999, 500 * 1080 / 999)),
        (Convention.SCREEN, (960, 540), (960, 540)),
        (Convention.SCREEN, (1919, 7), (1919, 7)),
    ],
)
def test_convention_table(conv: Convention, model_pt: tuple[float, float], captured_pt: tuple[float, float]) -> None:
    got = model_to_captured(*model_pt, conv, SENT, CAP)
    assert got == pytest.approx(captured_pt)
    back = captured_to_model(*captured_pt, conv, SENT, CAP)
    assert back == pytest.approx(model_pt)
    assert model_to_captured(*model_pt, conv.value, SENT, CAP) == got  # plain strings work too


def test_convention_is_str_enum() -> None:
    assert Convention("relative1000") is Convention.RELATIVE1000
    assert Convention.ABSOLUTE == "absolute"
    assert {c.value for c in Convention} == {"absolute", "relative", "relative1000", "relative999", "screen"}
    with pytest.raises(ValueError):
        model_to_captured(1, 1, "pixels", SENT, CAP)


_SIZES = st.tuples(st.integers(16, 8000), st.integers(16, 8000))


@settings(max_examples=500, deadline=None)
@given(
    conv=st.sampled_from(list(Convention)),
    sent=_SIZES,
    cap=_SIZES,
    fx=st.floats(0, 1),
    fy=st.floats(0, 1),
)
def test_model_captured_roundtrip(conv: Convention, sent: tuple[int, int], cap: tuple[int, int], fx: float, fy: float) -> None:
    units = {"absolute": sent, "relative": (1, 1), "relative1000": (1000, 1000), "relative999": (999, 999),
             "screen": cap}[conv.value]
    mx, my = fx * units[0], fy * units[1]
    cx, cy = model_to_captured(mx, my, conv, sent, cap)
    assert 0 <= cx <= cap[0] and 0 <= cy <= cap[1]
    bx, by = captured_to_model(cx, cy, conv, sent, cap)
    assert bx == pytest.approx(mx, abs=1e-6) and by == pytest.approx(my, abs=1e-6)


# ---------------------------------------------------------------- validation


def test_model_point_error_messages() -> None:
    msg = model_point_error(2000, 10, Convention.ABSOLUTE, SENT, CAP)
    assert msg is not None and "x=2000 outside the 1932x1092 image sent to the model" in msg
    msg = model_point_error(10, 1092, Convention.ABSOLUTE, SENT, CAP)
    assert msg is not None and msg.startswith("y=1092 outside the 1932x1092")
    msg = model_point_error(-1, 10, Convention.SCREEN, SENT, CAP)
    assert msg is not None and "x=-1 outside the 1920x1080 captured screenshot" in msg
    msg = model_point_error(0.5, 1.2, Convention.RELATIVE, SENT, CAP)
    assert msg == "y=1.2 outside 0..1 (relative coordinates)"
    msg = model_point_error(1001, 0, "relative1000", SENT, CAP)
    assert msg == "x=1001 outside 0..1000 (relative1000 coordinates)"
    msg = model_point_error(10, 1000, "relative999", SENT, CAP)
    assert msg == "y=1000 outside 0..999 (relative999 coordinates)"
    assert "finite" in (model_point_error(math.nan, 0, Convention.ABSOLUTE, SENT, CAP) or "")
    assert "finite" in (model_point_error(True, 0, Convention.ABSOLUTE, SENT, CAP) or "")
    for conv, pt in [
        (Convention.ABSOLUTE, (0, 0)),
        (Convention.ABSOLUTE, (1931.5, 1091)),
        (Convention.RELATIVE, (1.0, 0.0)),
        (Convention.RELATIVE1000, (1000, 1000)),
        (Convention.RELATIVE999, (999, 0)),
        (Convention.SCREEN, (1919, 1079)),
    ]:
        assert model_point_error(*pt, conv, SENT, CAP) is None


def test_within_image() -> None:
    assert within_image(0, 0, (10, 10))
    assert within_image(9.9, 9, (10, 10))
    assert not within_image(10, 5, (10, 10))
    assert not within_image(5, -0.1, (10, 10))
    assert not within_image(math.inf, 5, (10, 10))


# ---------------------------------------------------------------- screen / input

X11 = ScreenGeometry(0, 0, 1920, 1080, 1920, 1080)
RETINA = ScreenGeometry(0, 0, 2880, 1800, 1440, 900)
RIGHT = ScreenGeometry(1920, 0, 1280, 1024, 1280, 1024)  # second monitor to the right
LEFT_HIDPI = ScreenGeometry(-1280, -200, 2560, 1600, 1280, 800)
WIN125 = ScreenGeometry(0, 0, 2400, 1350, 1920, 1080)


@pytest.mark.parametrize(
    ("screen", "captured_pt", "input_pt"),
    [
        (X11, (960, 540), (960, 540)),
        (X11, (0, 500), (0, 500)),  # an edge is fine, only corners move
        (X11, (1919, 3), (1919, 3)),
        (RETINA, (1000, 500), (500, 250)),
        (RETINA, (1001, 501), (500, 250)),  # 500.5 -> 500, 250.5 -> 250 (half-even)
        (RETINA, (1003, 503), (502, 252)),  # 501.5 -> 502
        (RIGHT, (0, 500), (1920, 500)),
        (RIGHT, (640, 512), (2560, 512)),
        (LEFT_HIDPI, (1280, 800), (-640, 200)),
        (WIN125, (1000, 500), (800, 400)),
        (WIN125, (2399, 1349), (1918, 1078)),  # 1919.2,1079.2 -> corner -> inwards
    ],
)
def test_captured_to_input_table(screen: ScreenGeometry, captured_pt: tuple[float, float], input_pt: tuple[int, int]) -> None:
    got = captured_to_input(*captured_pt, screen)
    assert got == input_pt
    assert all(isinstance(v, int) for v in got)


@pytest.mark.parametrize(
    ("screen", "captured_pt", "input_pt"),
    [
        (X11, (0, 0), (1, 1)),
        (X11, (1919, 0), (1918, 1)),
        (X11, (0, 1079), (1, 1078)),
        (X11, (1919, 1079), (1918, 1078)),
        (X11, (-50, -50), (1, 1)),  # clamped into a corner, then inwards
        (X11, (5000, -3), (1918, 1)),
        (X11, (1920, 1080), (1918, 1078)),
        (X11, (-10, 500), (0, 500)),  # clamped to an edge, not a corner
        (RETINA, (2880, 1800), (1438, 898)),
        (RIGHT, (0, 0), (1921, 1)),
        (RIGHT, (1279, 1023), (3198, 1022)),
        (LEFT_HIDPI, (0, 0), (-1279, -199)),
        (LEFT_HIDPI, (2560, 1600), (-2, 598)),
    ],
)
def test_corner_avoidance(screen: ScreenGeometry, captured_pt: tuple[float, float], input_pt: tuple[int, int]) -> None:
    assert captured_to_input(*captured_pt, screen) == input_pt


def test_tiny_monitor_and_bad_geometry() -> None:
    one = ScreenGeometry(5, 5, 1, 1, 1, 1)
    assert captured_to_input(0, 0, one) == (5, 5)  # nowhere to go; stays on the monitor
    two = ScreenGeometry(0, 0, 2, 2, 2, 2)
    assert captured_to_input(0, 0, two) in {(1, 1)}
    with pytest.raises(ValueError):
        ScreenGeometry(0, 0, 0, 10, 10, 10)
    with pytest.raises(ValueError):
        captured_to_input(math.nan, 0, X11)


def test_input_to_captured() -> None:
    assert input_to_captured(500, 250, RETINA) == (1000, 500)
    assert input_to_captured(2560, 512, RIGHT) == (640, 512)
    assert input_to_captured(-640, 200, LEFT_HIDPI) == (1280, 800)
    assert input_to_captured(800, 400, WIN125) == (1000, 500)


def test_model_to_input_end_to_end() -> None:
    # a 2x Retina capture of 3840x2160 is sent at 3836x2156; its centre is (1918, 1078)
    retina4k = ScreenGeometry(0, 0, 3840, 2160, 1920, 1080)
    sent = QWEN.target_size(retina4k.captured_size)
    assert sent == (3836, 2156)
    assert model_to_input(1918, 1078, Convention.ABSOLUTE, sent, retina4k) == (960, 540)
    assert model_to_input(0.5, 0.5, Convention.RELATIVE, sent, retina4k) == (960, 540)
    assert model_to_input(500, 500, "relative1000", sent, X11) == (960, 540)
    # Qwen3-VL's grid: 500 of 999 is a little past the middle (961, 541), not 500 of 1000 (960, 540)
    assert model_to_input(500, 500, "relative999", sent, X11) == (961, 541)


@st.composite
def _screens(draw: st.DrawFn) -> ScreenGeometry:
    scale = draw(st.sampled_from(SCALES))
    lw = draw(st.integers(64, 4000))
    lh = draw(st.integers(64, 3000))
    return ScreenGeometry(
        draw(st.integers(-5000, 5000)),
        draw(st.integers(-3000, 3000)),
        round(lw * scale),
        round(lh * scale),
        lw,
        lh,
    )


def _near_corner(ix: int, iy: int, s: ScreenGeometry) -> bool:
    r, b = s.origin_x + s.logical_w - 1, s.origin_y + s.logical_h - 1
    return min(abs(ix - s.origin_x), abs(ix - r)) <= 1 and min(abs(iy - s.origin_y), abs(iy - b)) <= 1


@settings(max_examples=800, deadline=None)
@given(screen=_screens(), fx=st.floats(0, 1), fy=st.floats(0, 1))
def test_captured_input_roundtrip(screen: ScreenGeometry, fx: float, fy: float) -> None:
    cx, cy = fx * (screen.captured_w - 1), fy * (screen.captured_h - 1)
    ix, iy = captured_to_input(cx, cy, screen)
    # on the monitor and never on one of its corners
    assert screen.origin_x <= ix < screen.origin_x + screen.logical_w
    assert screen.origin_y <= iy < screen.origin_y + screen.logical_h
    assert ix not in (screen.origin_x, screen.origin_x + screen.logical_w - 1) or iy not in (
        screen.origin_y,
        screen.origin_y + screen.logical_h - 1,
    )
    bx, by = input_to_captured(ix, iy, screen)
    sx, sy = screen.captured_w / screen.logical_w, screen.captured_h / screen.logical_h
    # rounding costs at most half a logical pixel: <= 1 captured pixel for scales <= 2;
    # the corner nudge may add one more logical pixel
    slack = 1.5 if _near_corner(ix, iy, screen) else 0.5
    assert abs(bx - cx) <= slack * sx + 1e-9
    assert abs(by - cy) <= slack * sy + 1e-9
    if slack == 0.5:
        assert abs(bx - cx) <= 1 + 1e-9 and abs(by - cy) <= 1 + 1e-9


@settings(max_examples=500, deadline=None)
@given(screen=_screens(), fx=st.floats(0, 1), fy=st.floats(0, 1))
def test_input_captured_input_exact(screen: ScreenGeometry, fx: float, fy: float) -> None:
    # every input pixel that is not a corner survives input -> captured -> input unchanged
    ix = screen.origin_x + round(fx * (screen.logical_w - 1))
    iy = screen.origin_y + round(fy * (screen.logical_h - 1))
    assume(not _is_corner(ix, iy, screen))
    assert captured_to_input(*input_to_captured(ix, iy, screen), screen) == (ix, iy)


def _is_corner(ix: int, iy: int, s: ScreenGeometry) -> bool:
    return ix in (s.origin_x, s.origin_x + s.logical_w - 1) and iy in (s.origin_y, s.origin_y + s.logical_h - 1)


@settings(max_examples=500, deadline=None)
@given(
    screen=_screens(),
    rule=st.sampled_from([QWEN, QWEN3, RESIZE_RULES["uitars"], RESIZE_RULES["none"], QWEN.with_token_cap(1024)]),
    conv=st.sampled_from(list(Convention)),
    fx=st.floats(0, 1),
    fy=st.floats(0, 1),
)
def test_model_input_model_roundtrip(
    screen: ScreenGeometry, rule: ResizeRule, conv: Convention, fx: float, fy: float
) -> None:
    cap = screen.captured_size
    assume(max(cap) / min(cap) <= 200)
    sent = rule.target_size(cap)
    # a model point somewhere over the captured image's pixels
    mx, my = captured_to_model(fx * (cap[0] - 1), fy * (cap[1] - 1), conv, sent, cap)
    assert model_point_error(mx, my, conv, sent, cap) is None
    ix, iy = model_to_input(mx, my, conv, sent, screen)
    bx, by = captured_to_model(*input_to_captured(ix, iy, screen), conv, sent, cap)
    # half a logical pixel of rounding (<= 1 captured pixel for scales <= 2),
    # plus one logical pixel near a corner, expressed in the model's units
    per_unit = model_to_captured(1, 1, conv, sent, cap)  # captured px per model unit
    slack = 1.5 if _near_corner(ix, iy, screen) else 0.5
    sx, sy = cap[0] / screen.logical_w, cap[1] / screen.logical_h
    assert abs(bx - mx) <= slack * sx / per_unit[0] + 1e-7
    assert abs(by - my) <= slack * sy / per_unit[1] + 1e-7


def test_every_convention_is_declared_once_with_its_rule():
    from conway.geometry import CONVENTIONS

    assert set(CONVENTIONS) == set(Convention)
    assert all(c.rule is CONVENTIONS[c] and c.rule.name == c.value for c in Convention)
    assert Convention.ABSOLUTE.rule.integer_range((1932, 1092), (1920, 1080)) == (1931, 1091)
    assert Convention.SCREEN.rule.integer_range((1932, 1092), (1920, 1080)) == (1919, 1079)
    assert Convention.RELATIVE999.rule.integer_range((1932, 1092), (1920, 1080)) == (999, 999)
    assert Convention.RELATIVE.rule.integer_range((1932, 1092), (1920, 1080)) is None
