"""The training tests' shared tiny base model (Hugging Face form) and practice reports from a scripted clicker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conway.protocols import Policy

REPO = Path(__file__).resolve().parents[2]


class CentreClicker(Policy):
    """A scripted policy for practice data: always the centre (labels come from the targets, not from it)."""

    model_id = "centre-clicker"

    def decide(self, ctx):
        from conway.actions import Click
        from conway.protocols import Decision
        w, h = ctx.observation.captured_size
        return Decision(raw_text=json.dumps({"thought": "", "action": {"type": "click", "x": w // 2, "y": h // 2}}),
                        actions=[Click(x=w / 2, y=h / 2)], model_id=self.model_id,
                        meta={"sent_size": [w, h], "captured_size": [w, h], "convention": "absolute",
                              "policy": "generic", "resize_rule": "qwen2.5-vl"})


def practice_report(home_dir: Path, out: Path, samples: int, seed: int = 1) -> Path:
    from conway.config import load_config
    from conway.evals.vision_check import vision_check
    from conway.store.home import init_home, resolve_home
    home = resolve_home(str(home_dir))
    init_home(home)
    vision_check(home, load_config(home.config, []), output=str(out), samples=samples, seed=seed, size="84x84",
                 profile="demo", policy=CentreClicker(), progress=False, say=lambda _s: None)
    return out


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory) -> Path:
    """The demo's tiny base in Hugging Face form (no GGUF: conversion is the slow test's business)."""
    from scripts.build import build_tiny_vlm as b
    out = tmp_path_factory.mktemp("base") / "hf"
    out.mkdir()
    s = b.load_settings(REPO / "configs" / "tiny_vlm_demo.yaml")
    sp = b.train_tokenizer(s)
    ids = b.token_ids(sp)
    b.write_tokenizer(out, sp, ids)
    b.write_preprocessor(out, s)
    b.build_model(out, s, ids, s.tokenizer.vocab_size)
    return out
