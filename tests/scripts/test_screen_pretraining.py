"""The tiny base's making (scripts/build/screen_pretraining.py): its generated rows, and a tiny stage made once.

The real stage (configs/tiny_vlm_perceive.yaml) takes minutes; here a two-step stage on the fixture's config
(configs/tiny_vlm.yaml) checks the plumbing: the built model's weights change before conversion, the GGUF pair
and pretraining.json land in the cache folder, and a second call reuses it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scripts.build import screen_pretraining as sp
from scripts.demos import perceivable_targets as pt

REPO = Path(__file__).resolve().parents[2]


def _answer(row) -> dict:
    return json.loads(row.completion)


def test_rows_say_what_the_screen_shows():
    import io

    from PIL import Image

    for i in range(40):
        named, targets = pt.layout(sp.TRAIN_SEEDS, i, 3, sp.SCREEN, "colour")
        box = next(t["box"] for t in targets if t["name"] == named)
        where = sp.example("where", sp.TRAIN_SEEDS, i)
        assert _answer(where)["thought"] == sp.QUADRANTS[sp.quadrant(box)]
        assert named in where.messages[0]["content"][0]["text"]
        # the click of the single-target row lands inside its only target's box
        single = _answer(sp.example("single", sp.TRAIN_SEEDS, i))["action"]
        assert box[0] <= single["x"] <= box[2] and box[1] <= single["y"] <= box[3]
        caption = _answer(sp.example("caption", sp.TRAIN_SEEDS, i))["thought"]
        assert caption.count("nothing") == 1 and f"{sp.QUADRANTS[sp.quadrant(box)]}: {named}" in caption
        with Image.open(io.BytesIO(where.image_png)) as im:  # the named colour is drawn where the row says
            assert im.size == (sp.SCREEN, sp.SCREEN)
            r, g, b = im.convert("RGB").getpixel(((box[0] + box[2]) // 2, (box[1] + box[3]) // 2))
            assert max(abs(r - c) for r, c in zip((r, g, b), pt.COLOURS[named])) < 40
    assert sp.example("caption+where", 0, 1).meta["task"] == "where"


def test_phases_name_known_tasks_only():
    assert sp.parse_phases("caption:3,caption+where:5") == [("caption", 3), ("caption+where", 5)]
    with pytest.raises(ValueError, match="unknown task"):
        sp.parse_phases("captions:3")


def test_a_full_form_row_is_the_short_row_behind_the_recorded_system_prompt(tmp_path, monkeypatch):
    """`@full` rows carry the loop's system prompt, taken from a recorded request, and the loop's own last lines;
    Example.short(keep_goals=True) of one gives back the stage's short row exactly."""
    monkeypatch.setattr(sp, "FULL_SYSTEM", {})
    with pytest.raises(ValueError, match="system prompt"):
        sp.example("colour_said@full", 0, 3)
    recorded = tmp_path / "requests.jsonl"
    recorded.write_text(json.dumps({"messages": [{"role": "system", "content": "You are Conway. (recorded)"},
                                                 {"role": "user", "content": "x"}]}) + "\n")
    sp.use_system_of(recorded)
    full, short = sp.example("colour_said@full", 0, 3), sp.example("colour_said", 0, 3)
    assert full.messages[0] == {"role": "system", "content": "You are Conway. (recorded)"}
    assert "Choose the next action. Answer with the JSON object only." in full.messages[1]["content"][0]["text"]
    assert full.short(keep_goals=True).messages == short.messages
    assert (full.completion, full.image_png) == (short.completion, short.image_png)
    assert sp.parse_phases("colour_said@full+places:4") == [("colour_said@full+places", 4)]


@pytest.mark.timeout(600)
def test_a_tiny_stage_is_made_once(tmp_path):
    config = tmp_path / "stage.yaml"
    config.write_text("build_config: configs/tiny_vlm.yaml\nphases: caption:1,caption+single:1\nlr: 1.0e-2\n"
                      "batch: 2\ntargets: 3\nseed: 0\n", encoding="utf-8")
    said: list[str] = []
    out = sp.make(config, cache=tmp_path / "cache", say=said.append)
    for name in ("tiny-vlm.gguf", "tiny-vlm-mmproj.gguf", "hf/model.safetensors", "pretraining.json"):
        assert (out / name).is_file(), name
    report = json.loads((out / "pretraining.json").read_text())
    assert [p["step"] for p in report["log"]] == [1, 2] and len(said) == 2
    assert {"caption", "single", "colour"} <= set(report["log"][-1])

    # the stage changed the random weights that the builder alone makes
    from safetensors.torch import load_file

    from scripts.build import build_tiny_vlm

    plain = tmp_path / "plain"
    build_tiny_vlm.build(plain, build_tiny_vlm.load_settings(REPO / "configs" / "tiny_vlm.yaml"), keep_hf=True)
    made, random_ = load_file(out / "hf" / "model.safetensors"), load_file(plain / "hf" / "model.safetensors")
    assert set(made) == set(random_)
    assert any(not (made[k] == random_[k]).all() for k in made)

    # made once: the second call finds the folder and trains nothing
    again: list[str] = []
    assert sp.make(config, cache=tmp_path / "cache", say=again.append) == out and again == []
