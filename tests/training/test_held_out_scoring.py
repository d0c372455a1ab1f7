"""Held-out scoring reads each answer in the coordinate convention its row's target was written in.

The teacher's own answer must score a hit whatever `data.convention` says: with `relative1000` the taught
`(x, y)` are 0-1000 units, and reading them as pixels (the family's default) would score it 0 and make
`early_stop_hits` wait for a hit rate the model cannot show. No model and no torch needed.
"""

from __future__ import annotations

import io

import pytest
from PIL import Image

from conway.config import load_config
from training.data import DataSettings, build_examples
from training.held_out import score_answers

CAPTURED = (640, 400)
BOXES = [(420, 60, 500, 120), (40, 250, 120, 330), (300, 170, 380, 230), (540, 300, 620, 380)]


def _png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", CAPTURED, "white").save(buf, format="PNG")
    return buf.getvalue()


def _rows() -> list[dict]:
    """Vision-check cases labelled by their targets (as `export --from-report` writes them)."""
    png = _png()
    rows = []
    for i, box in enumerate(BOXES):
        cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
        rec = {"format": "conway-traj/1", "session": "vision-check-seed1", "step": i,
               "instruction": "Click the red square.",
               "task": {"kind": "vision-check", "index": i, "instruction": "Click the red square.",
                        "target_box": list(box)},
               "geometry": {"captured_size": list(CAPTURED), "sent_size": list(CAPTURED), "convention": "absolute",
                            "policy": "generic", "resize_rule": "qwen2.5-vl"},
               "observation": {"captured_size": list(CAPTURED), "logical_size": list(CAPTURED),
                               "source": "vision-check"},
               "decision": {"thought": None, "actions": [{"type": "click", "x": cx, "y": cy}]},
               "labels": {"source": "vision-check", "verdict": "correct", "success": "success"}}
        rows.append({"record": rec, "image": png})
    return rows


@pytest.mark.parametrize("kind", ["generic", "uitars", "opencua"])
@pytest.mark.parametrize("convention", ["auto", "absolute", "relative1000"])
def test_the_teachers_own_answers_score_every_hit(kind, convention):
    settings = DataSettings(policy_kind=kind, convention=convention)
    examples, skipped = build_examples(_rows(), settings, load_config(None, []))
    assert len(examples) == len(BOXES) and not skipped
    expected = "absolute" if convention == "auto" else convention
    assert {ex.meta["convention"] for ex in examples} == {expected}  # each row says how its target is written
    score = score_answers([ex.completion for ex in examples], examples, kind)
    assert score["scored"] == len(BOXES)
    assert score["hits"] == len(BOXES), (score, [ex.completion for ex in examples])


def test_an_answer_off_the_target_is_a_miss():
    examples, _ = build_examples(_rows(), DataSettings(convention="relative1000"), load_config(None, []))
    wrong = ['{"thought": "", "action": {"type": "click", "x": 5, "y": 5}}'] * len(examples)  # (5, 3) px
    assert score_answers(wrong, examples, "generic")["hits"] == 0
