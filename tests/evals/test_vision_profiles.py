"""The harder vision-check profiles for learning demos (`offcentre`, `choose`): their cases are what they say,
and the trivial-policy references they are judged against hold on generated cases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from conway.config import load_config
from conway.errors import UserError
from conway.evals.vision_check import vision_check
from conway.observe.vision_cases import PALETTE, generate_case, references
from conway.protocols import Policy
from conway.store.home import init_home, resolve_home

SIZES = [(84, 84), (112, 112), (168, 168), (224, 224), (640, 400)]


def _records(seed: int, n: int, size: tuple[int, int], profile: str) -> list[dict]:
    out = []
    for i in range(n):
        case = generate_case(seed, i, size, profile)
        out.append({"image": {"size": list(size)}, "target": case.target.record(), "distractors": len(case.distractors)})
    return out


def _pixel(png: bytes, x: float, y: float) -> tuple[int, int, int]:
    import io
    return Image.open(io.BytesIO(png)).convert("RGB").getpixel((int(x), int(y)))


@pytest.mark.parametrize("size", SIZES)
def test_offcentre_targets_never_cover_the_centre_and_vary(size):
    w, h = size
    boxes = set()
    sides = set()
    for i in range(150):
        case = generate_case(7, i, size, "offcentre")
        x0, y0, x1, y1 = case.target.box
        assert not case.target.contains(w / 2, h / 2), (i, case.target.box)
        assert 0 <= x0 < x1 < w and 0 <= y0 < y1 < h and not case.distractors
        assert _pixel(case.png, *case.target.centre) == PALETTE["red"]
        assert case.instruction == "Click the red square."
        boxes.add(case.target.box)
        sides.add(x1 - x0)
    assert len(boxes) > 100 and len(sides) >= 4  # random place and size
    ref = references(_records(7, 150, size, "offcentre"))
    assert ref["centre_click_rate"] <= 0.05 and ref["centre_click_hits"] == 0
    assert ref["random_shape_rate"] == 1.0  # one shape: "a random shape" is the target


def test_offcentre_targets_at_84px_hold_an_image_token_centre():
    """At the demo's 84 px every target covers a 28-px cell centre, so snap_to_grid: 28 teaches a point inside it."""
    from training.data import snap_point
    for i in range(200):
        box = generate_case(3, i, (84, 84), "offcentre").target.box
        x, y = snap_point(list(box), 28, (84, 84), (84, 84))
        assert x in (14, 42, 70) and y in (14, 42, 70) and (x, y) != (42, 42), (i, box)
        assert box[0] <= x <= box[2] and box[1] <= y <= box[3]


@pytest.mark.parametrize("size", SIZES)
def test_choose_cases_have_two_or_three_shapes_of_different_colours_in_their_own_cells(size):
    w, h = size
    counts = set()
    for i in range(150):
        case = generate_case(11, i, size, "choose")
        shapes = [case.target, *case.distractors]
        counts.add(len(shapes))
        assert len(shapes) in (2, 3)
        assert len({s.colour for s in shapes}) == len(shapes)  # one colour per shape: the name is unambiguous
        assert case.instruction == f"Click the {case.target.colour} {case.target.shape}."
        cells = set()
        for s in shapes:
            cx, cy = int(s.centre[0] // (w // 3)), int(s.centre[1] // (h // 3))
            cells.add((cx, cy))
            cell_centre = ((cx + 0.5) * (w // 3), (cy + 0.5) * (h // 3))
            assert s.contains(*cell_centre), (i, s)  # covers its cell's centre
            assert _pixel(case.png, *s.centre) == PALETTE[s.colour]
        assert len(cells) == len(shapes)  # distinct cells: no overlap
    assert counts == {2, 3}


@pytest.mark.parametrize("size", [(84, 84), (224, 224)])
def test_choose_references_centre_and_random_shape(size):
    ref = references(_records(2, 400, size, "choose"))
    assert 0.33 <= ref["random_shape_rate"] <= 0.50  # 1/2 or 1/3 per case
    assert 0.04 <= ref["centre_click_rate"] <= 0.20  # only when the named shape sits in the middle cell (~1/9)
    colours = {generate_case(2, i, size, "choose").target.colour for i in range(60)}
    assert colours == {"red", "green", "blue"}


def test_unknown_profile_is_refused_with_the_known_ones():
    with pytest.raises(UserError) as err:
        generate_case(1, 0, (84, 84), "hardest")
    assert "offcentre" in str(err.value) and "choose" in str(err.value)


class CentreClicker(Policy):
    model_id = "centre-clicker"

    def decide(self, ctx):
        from conway.actions import Click
        from conway.protocols import Decision
        w, h = ctx.observation.captured_size
        return Decision(raw_text=json.dumps({"action": {"type": "click", "x": w / 2, "y": h / 2}}),
                        actions=[Click(x=w / 2, y=h / 2)], model_id=self.model_id, meta={})


@pytest.mark.parametrize("profile", ["offcentre", "choose", "demo"])
def test_the_report_carries_references_that_match_a_centre_clicker(tmp_path, profile):
    home = resolve_home(str(tmp_path / "home"))
    init_home(home)
    out = tmp_path / "r.json"
    code = vision_check(home, load_config(home.config, []), output=str(out), samples=40, seed=4, size="84x84",
                        profile=profile, policy=CentreClicker(), progress=False, say=lambda _s: None)
    data = json.loads(Path(out).read_text())
    s = data["summary"]
    assert data["parameters"]["profile"] == profile and code == 2
    assert s["references"]["centre_click_hits"] == s["hits"]  # the reference is what the centre clicker scored
    if profile == "offcentre":
        assert s["hits"] == 0


@pytest.mark.parametrize("size", SIZES)
def test_offcentre_fixed_targets_keep_their_pixels_at_every_size(size):
    """`offcentre-fixed` draws the 28-36 px squares `offcentre` draws at 84 px, at any image size (as buttons on a
    larger screen), never on the centre; a 28-px cell centre always lies inside, so snap_to_grid teaches a hit."""
    from training.data import snap_point
    w, h = size
    sides = set()
    for i in range(150):
        case = generate_case(5, i, size, "offcentre-fixed")
        x0, y0, x1, y1 = case.target.box
        assert 28 <= x1 - x0 + 1 <= 36 and x1 - x0 == y1 - y0, (i, case.target.box)  # inclusive pixel box
        assert not case.target.contains(w / 2, h / 2) and not case.distractors
        assert _pixel(case.png, *case.target.centre) == PALETTE["red"]
        x, y = snap_point(list(case.target.box), 28, size, size)
        assert case.target.contains(x, y), (i, case.target.box, (x, y))
        sides.add(x1 - x0)
    assert len(sides) >= 4
    assert references(_records(5, 150, size, "offcentre-fixed"))["centre_click_hits"] == 0
