"""Conway's narrator and judge requests equal the ones Agent S3's unmodified code builds for the same rollouts.

The golden (`tests/data/goldens/agent_s3_bbon.json`) was written by `scripts/build/agent_s3_goldens.py`, which runs
simular-ai/Agent-S's `BehaviorNarrator` and `ComparativeJudge` as written, only the network recorded. Here the same
screenshots and actions go through `conway.evals.judge.agent_s3`, and every request is compared field by field,
images by their decoded pixels. One difference may be named, never hidden: without OpenCV (the `goldens` extra)
the zoomed view is upscaled by Pillow, so its pixels differ, and the narration says so.
"""

from __future__ import annotations

import json
from pathlib import Path

from conway.evals.judge import agent_s3
from scripts.build.golden_episode import first_difference, request_record, screenshot

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "goldens" / "agent_s3_bbon.json"


def _golden() -> dict:
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


def _without_zoom_pixels(record: dict) -> dict:
    """The request with the zoomed view's pixel sum left out (the one deviation without OpenCV)."""
    record = json.loads(json.dumps(record))
    content = record["messages"][1]["content"]
    if len(content) == 7:  # BEFORE, marked, action, AFTER, boxed, ZOOMED AFTER:, zoomed
        content[6]["image_url"]["url"].pop("pixels_sha256")
    return record


def test_the_episode_s_actions_are_the_code_the_golden_gave_s3():
    assert [agent_s3.pyautogui_code(s["actions"]) for s in _golden()["episode"]] == [
        s["code"] for s in _golden()["episode"]]


def test_each_narrator_request_is_the_one_s3_builds():
    golden = _golden()
    asked = [s for s in golden["episode"] if s["code"] not in ("DONE", "FAIL")]
    assert len(asked) == len(golden["narrator"]) == 3
    for step, want in zip(asked, golden["narrator"]):
        messages, deviation = agent_s3.narration_request(screenshot(step["before"]), screenshot(step["after"]),
                                                         step["code"])
        got = request_record({"messages": messages, "temperature": 0.0})
        if deviation is None:
            assert first_difference(got, want) is None
        else:  # no OpenCV here: everything but the zoomed view's pixels, and the deviation named
            assert deviation == agent_s3.ZOOM_WITHOUT_OPENCV
            assert first_difference(_without_zoom_pixels(got), _without_zoom_pixels(want)) is None


def test_the_facts_are_read_from_the_answers_as_s3_reads_them():
    golden = _golden()
    replies = iter(golden["narrator_replies"])
    facts = [agent_s3.fact(n, s["code"], None if s["code"] == "DONE" else next(replies))
             for n, s in enumerate(golden["episode"], start=1)]
    assert facts == golden["facts"]


def test_the_judge_request_is_the_one_s3_builds():
    golden = _golden()
    short = golden["short"]
    messages = agent_s3.judge_request(golden["instruction"], [
        {"initial": screenshot(golden["episode"][0]["before"]), "final": screenshot(golden["episode"][-1]["after"]),
         "facts": [f["fact_answer"] for f in golden["facts"]]},
        {"initial": screenshot(short["initial"]), "final": screenshot(short["final"]), "facts": short["facts"]}])
    assert first_difference(request_record({"messages": messages, "temperature": 0.0}), golden["judge"]) is None
