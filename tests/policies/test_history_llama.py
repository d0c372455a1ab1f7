"""A 5-screenshot history through real llama.cpp on the tiny VLM: in-process and llama-server.

Every request is real: the UI-TARS conversation with up to five screenshots (the four past ones exactly as
the policy sent them) goes through libmtmd with the prompt cache on (`scripts/bench/bench_history.py`, the
history row of `bench_model`). Only the answers replayed are a STAND-IN: the tiny VLM has random weights and
writes garbage of any length, so each past turn replays one fixed short UI-TARS answer instead of its own.
"""

from __future__ import annotations

import pytest
from helpers.tiny_vlm import require_inprocess, require_llama_server

from scripts.bench.bench_history import run

pytestmark = [pytest.mark.llama, pytest.mark.slow]


def check(res: dict, window: str) -> None:
    cycles = res["cycles"]
    if window == "faithful":  # the agent's constant window: past the fifth, each step lets the oldest one go
        assert [c["images"] for c in cycles] == [1, 2, 3, 4, 5, 5, 5]
    else:  # the opt-in half slide: 5 at most in one request, then slid by half
        assert [c["images"] for c in cycles] == [1, 2, 3, 4, 5, 3, 4]
    image_tokens = (cycles[1]["prompt"] - cycles[0]["prompt"]) // 2  # a turn adds about one image
    assert cycles[4]["prompt"] > cycles[0]["prompt"] + 4 * image_tokens  # the five images really went in
    for before, now in zip(cycles[1:4], cycles[2:5]):  # between slides the conversation only grows
        assert now["cached"] >= before["prompt"] - image_tokens, (before, now)
    assert cycles[4]["cached"] / cycles[4]["prompt"] >= 0.8
    if window == "half_slide":  # what the slide is for: most of every later prompt comes from the cache
        assert res["cache_share_after_first"] >= 0.6


def test_a_five_screenshot_history_in_process(tmp_path):
    """The faithful window (the default) in process."""
    require_inprocess()
    check(run("llama_cpp", 5, 7, 1, tmp_path), "faithful")


def test_a_five_screenshot_history_through_llama_server(tmp_path):
    """The opt-in half slide through llama-server (the faithful window's requests are covered in process)."""
    require_inprocess()  # the bench counts tokens with the in-process tokenizer too
    require_llama_server()
    check(run("http", 5, 7, 1, tmp_path, "runtime.server=llama-server", window="half_slide"), "half_slide")
