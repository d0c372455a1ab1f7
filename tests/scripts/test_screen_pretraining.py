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


def test_any_said_names_no_colour_and_says_then_clicks_one_drawn_target():
    """The reward stage's start: "Click a square." has no colour to choose by; the answer says one drawn target's
    colour and quarter and clicks inside it; over many screens each drawn colour is said (no fixed choice)."""
    said = set()
    for i in range(60):
        _, targets = pt.layout(sp.TRAIN_SEEDS, i, 3, sp.SCREEN, "colour")
        row = sp.example("any_said", sp.TRAIN_SEEDS, i)
        text = row.messages[0]["content"][0]["text"]
        assert "Click a square." in text and not any(c in text for c in pt.COLOURS)
        answer = _answer(row)
        colour, place = answer["thought"].split(": ")
        box = next(t["box"] for t in targets if t["name"] == colour)
        assert sp.QUADRANTS[sp.quadrant(box)] == place
        assert box[0] <= answer["action"]["x"] <= box[2] and box[1] <= answer["action"]["y"] <= box[3]
        said.add(colour)
        where = _answer(sp.example("where_said", sp.TRAIN_SEEDS, i))
        named = pt.layout(sp.TRAIN_SEEDS, i, 3, sp.SCREEN, "colour")[0]
        assert where == {"thought": f"{named}: {place if colour == named else where['thought'].split(': ')[1]}",
                         "action": {"type": "wait"}}
    assert said == set(pt.COLOURS)


def test_not_said_names_a_colour_and_says_then_clicks_another():
    """"Click a square that is not blue.": the answer says and clicks one of the other drawn targets, never the
    named one, and over many screens each of the others in turn."""
    kinds = set()
    for i in range(60):
        avoided, targets = pt.layout(sp.TRAIN_SEEDS, i, 3, sp.SCREEN, "colour")
        row = sp.example("not_said", sp.TRAIN_SEEDS, i, button="left")
        assert f"Click a square that is not {avoided}." in row.messages[0]["content"][0]["text"]
        answer = _answer(row)
        colour, place = answer["thought"].split(": ")
        assert colour != avoided and colour in {t["name"] for t in targets}
        box = next(t["box"] for t in targets if t["name"] == colour)
        assert sp.QUADRANTS[sp.quadrant(box)] == place and answer["action"]["button"] == "left"
        assert box[0] <= answer["action"]["x"] <= box[2] and box[1] <= answer["action"]["y"] <= box[3]
        kinds.add((avoided, colour))
    assert len({c for _, c in kinds}) == len(pt.COLOURS) and len(kinds) > len(pt.COLOURS)


def test_where_coded_asks_by_number_and_answers_in_colour_words():
    """"Where is colour 3?": the question never holds a colour word (the suite's instruction does), the answer
    says that colour's word and its place, with a wait."""
    for i in range(40):
        named, targets = pt.layout(sp.TRAIN_SEEDS, i, 3, sp.SCREEN, "colour")
        row = sp.example("where_coded", sp.TRAIN_SEEDS, i)
        text = row.messages[0]["content"][0]["text"]
        assert f"Where is colour {list(pt.COLOURS).index(named) + 1}?" in text
        assert not any(c in text for c in pt.COLOURS)
        box = next(t["box"] for t in targets if t["name"] == named)
        assert _answer(row) == {"thought": f"{named}: {sp.QUADRANTS[sp.quadrant(box)]}", "action": {"type": "wait"}}


def test_phases_name_known_tasks_only():
    assert sp.parse_phases("caption:3,caption+where:5") == [("caption", 3), ("caption+where", 5)]
    with pytest.raises(ValueError, match="unknown task"):
        sp.parse_phases("captions:3")
    with pytest.raises(ValueError, match="unknown task"):
        sp.parse_phases("caption:3 | captions:3@1")


def test_a_config_with_bad_phases_is_refused_in_one_line(tmp_path):
    config = tmp_path / "stage.yaml"
    for phases in ("caption:5 | ", "caption:five", "captions:5"):
        config.write_text(f"build_config: configs/tiny_vlm.yaml\nphases: '{phases}'\nlr: 1.0e-2\nbatch: 2\n"
                          "targets: 3\nseed: 0\nbutton: left\n", encoding="utf-8")
        with pytest.raises(SystemExit, match="phases: "):
            sp.load(config)


def test_segments_restart_with_their_own_seed():
    """' | ' starts a segment (a fresh optimizer), '@N' gives it its own seed; the others take the config's."""
    assert sp.parse_segments("caption:3,places:2 | any_said+places:4@1 | where_said:5", 7) == [
        ([("caption", 3), ("places", 2)], 7), ([("any_said+places", 4)], 1), ([("where_said", 5)], 7)]
    assert sp.parse_phases("caption:3 | places:2@4") == [("caption", 3), ("places", 2)]


def test_a_click_can_write_its_button():
    """`button`: every click's answer carries the field the loop's grammar offers after the last coordinate;
    answers without a click never do; left out by default."""
    for task in ("single", "any_said", "colour_said", "colour"):
        plain, left = _answer(sp.example(task, 0, 5)), _answer(sp.example(task, 0, 5, button="left"))
        assert "button" not in plain["action"] and left["action"] == {**plain["action"], "button": "left"}
    for task in ("caption", "places", "where_said"):
        assert _answer(sp.example(task, 0, 5, button="left")) == _answer(sp.example(task, 0, 5))


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
    config.write_text("build_config: configs/tiny_vlm.yaml\nphases: caption:1 | caption+single:1@3\nlr: 1.0e-2\n"
                      "batch: 2\ntargets: 3\nseed: 0\nbutton: left\n", encoding="utf-8")
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

    # each segment is what a separate run from the one before it makes: a fresh AdamW, its own seed (the chain
    # the reward stage learned from was made that way, as separate `diagnose` runs)
    import torch
    from transformers import Qwen2VLForConditionalGeneration

    from training.data import Encoder

    enc = Encoder.from_pretrained(plain / "hf")
    model = Qwen2VLForConditionalGeneration.from_pretrained(plain / "hf", dtype=torch.float32)
    sp.train(model, enc, [("caption", 1)], lr=1e-2, batch=2, seed=0, button="left")
    sp.train(model, enc, [("caption+single", 1)], lr=1e-2, batch=2, seed=3, button="left")
    model.save_pretrained(tmp_path / "chained")
    chained = load_file(tmp_path / "chained" / "model.safetensors")
    assert set(chained) == set(made) and all(torch.equal(chained[k], made[k]) for k in made)

    # made once: the second call finds the folder and trains nothing
    again: list[str] = []
    assert sp.make(config, cache=tmp_path / "cache", say=again.append) == out and again == []

    # the upper bound's candidate: phases trained from the made base, converted to a pair, made once
    pair = sp.trained_pair(out, tmp_path / "supervised", "colour_said:2", batch=2, config=config, say=said.append)
    for name in ("tiny-vlm.gguf", "tiny-vlm-mmproj.gguf", "trained.json"):
        assert (pair / name).is_file(), name
    trained = load_file(pair / "hf" / "model.safetensors")
    assert any(not (trained[k] == made[k]).all() for k in made)  # trained from the made base, not the random one
    assert json.loads((pair / "trained.json").read_text())["phases"] == "colour_said:2"
    assert json.loads((pair / "trained.json").read_text())["button"] == "left"  # the clicks' form the base learned
    assert sp.trained_pair(out, tmp_path / "supervised", "colour_said:2", config=config, say=again.append) == pair
    assert again == []

    # rewards alone, in-process (scripts/bench/bench_reward_samples.py): rounds run and say what they reached
    from scripts.bench import bench_reward_samples

    record = tmp_path / "rs.json"
    assert bench_reward_samples.main(["--hf", str(out / "hf"), "--per-round", "2", "--budget", "2", "--steps", "1",
                                      "--held-out", "2", "--out", str(record)]) == 0
    rounds = json.loads(record.read_text())["rounds"]
    assert [r["samples"] for r in rounds] == [2] and 0 <= rounds[0]["held_out"] <= 1

    # a reward stage's length apart from the loop (scripts/bench/bench_stage_steps.py): one candidate per point,
    # each trained from the made base on the same rollout set and measured on held-out screens
    from helpers.rollout_sets import click, write_rollout_set

    from scripts.bench import bench_stage_steps

    rollouts = write_rollout_set(tmp_path / "rollouts", {"t0": [(click(21, 21), 1.0), (click(63, 63), 0.0)],
                                                         "t1": [(click(63, 21), 0.0), (click(21, 63), 1.0)]})
    for stage in ("sft", "grpo"):
        record = tmp_path / f"steps-{stage}.json"
        assert bench_stage_steps.main(["--base", str(out), "--rollouts", str(rollouts), "--stage", stage, "--steps",
                                       "1,2", "--held-out", "2", "--out", str(record)]) == 0
        points = json.loads(record.read_text())["points"]
        key = "steps" if stage == "sft" else "epochs"
        assert [p[key] for p in points] == [1, 2] and all(0 <= p["held_out"] <= 1 for p in points)


def test_the_reward_is_the_checkers_rule_a_click_inside_the_named_target():
    from scripts.bench.bench_reward_samples import rewarded

    named, targets = pt.layout(7, 3, 3, sp.SCREEN, "colour")
    for t in targets:
        x, y = (t["box"][0] + t["box"][2]) // 2, (t["box"][1] + t["box"][3]) // 2
        answer = f'{{"thought": "", "action": {{"type": "click", "x": {x}, "y": {y}}}}}'
        assert rewarded(answer, 7, 3, 3) is (t["name"] == named)
    assert not rewarded('{"thought": "", "action": {"type": "wait"}}', 7, 3, 3)
    assert not rewarded('{"thought": "blue: top left", "action": {"type": "click", "x": 21}}', 7, 3, 3)
