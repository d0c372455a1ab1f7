"""A 5-screenshot history through real llama.cpp on the tiny VLM: in-process and llama-server.

Every request is real: the UI-TARS conversation with up to five screenshots (the four past ones exactly as
the policy sent them, `prepare_image` with its own rule and encoding) goes through libmtmd with the prompt
cache on. Only the answers replayed are a STAND-IN: the tiny VLM has random weights and writes garbage of any
length, so each past turn replays one fixed short UI-TARS answer instead of the model's own.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from conway.config import load_config
from conway.history import PastImage, TurnHistory
from conway.policies.base import prepare_image
from conway.protocols import ContextPart, DecisionContext, Observation
from conway.store.home import resolve_home

TINY = Path(__file__).resolve().parents[1] / "fixtures" / "tiny-vlm"
MODEL, MMPROJ = TINY / "tiny-vlm.gguf", TINY / "tiny-vlm-mmproj.gguf"
STAND_IN_ANSWER = "Thought: The dialog is still loading.\nAction: wait()"

pytestmark = [pytest.mark.llama, pytest.mark.slow]


def require_inprocess():
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install -e '.[llama]')")
    if not MODEL.exists() or not MMPROJ.exists():
        pytest.skip("tiny VLM fixtures missing (python -m scripts.build.build_tiny_vlm --out tests/fixtures/tiny-vlm)")


def require_llama_server():
    require_inprocess()
    from conway.config import RuntimeConfig
    from conway.errors import UserError
    from conway.runtime.server import find_program
    try:
        find_program(RuntimeConfig(server="llama-server"))
    except UserError as exc:
        pytest.skip(f"llama-server is not available here: {exc}")


def observation(step: int) -> Observation:
    buf = io.BytesIO()
    Image.new("RGB", (640, 400), (40 * step % 256, 90, 200 - 20 * step)).save(buf, format="PNG")
    return Observation(png=buf.getvalue(), captured_size=(640, 400), source="synthetic", content_hash=f"h{step}",
                       change_key=f"k{step}")


def episode(backend: str, *extra: str, steps: int = 7) -> list:
    from conway.policies.factory import build_model_policy
    cfg = load_config(None, ["policy=uitars-1.5-7b", f"policy.backend={backend}", f"policy.model_path={MODEL}",
                             f"policy.mmproj_path={MMPROJ}", "policy.max_tokens=8", "policy.image_max_tokens=256",
                             "runtime.n_ctx=4096", "runtime.n_threads=1", "runtime.startup_timeout_s=120", *extra])
    history = TurnHistory(max_images=cfg.policy.resolved_history_images - 1, max_turns=12)
    out = []
    with build_model_policy(cfg, resolve_home(None)) as policy:
        for step in range(1, steps + 1):
            obs = observation(step)
            parts = [ContextPart("constitution.md", "I am the owner's agent."), ContextPart("goals.md", "Wait.")]
            ctx = DecisionContext(parts=parts, observation=obs, step=step, action_types=["wait", "finish"],
                                  history=history)
            out.append(policy.decide(ctx))
            sent = prepare_image(obs, policy.settings.resize_rule, policy.rule, policy.settings.image_encoding)
            history.discard()
            history.propose(STAND_IN_ANSWER, PastImage(sent.data, sent.mime, sent.sent_size, sent.image_tokens))
            history.commit()
    return out


def check(ds: list) -> None:
    assert [d.meta["history"]["past_images"] for d in ds] == [0, 1, 2, 3, 4, 2, 3]  # 5 at most, slid by half
    assert [d.meta["history"]["past_answers"] for d in ds] == list(range(7))
    fifth = ds[4]
    assert fifth.usage["prompt_tokens"] > 5 * fifth.meta["image_tokens"]  # the five images really went in
    for before, d in zip(ds[1:4], ds[2:5]):  # between slides the conversation only grows: the cache serves it
        assert d.usage["cached_tokens"] >= before.usage["prompt_tokens"] - 2 * before.meta["image_tokens"], d.usage
    share = sum(d.usage["cached_tokens"] for d in ds[2:5]) / sum(d.usage["prompt_tokens"] for d in ds[2:5])
    assert share >= 0.6, share


def test_a_five_screenshot_history_in_process():
    require_inprocess()
    check(episode("llama_cpp"))


def test_a_five_screenshot_history_through_llama_server():
    require_llama_server()
    check(episode("http", "runtime.server=llama-server"))
