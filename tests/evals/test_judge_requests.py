"""Agent S3's narrator and judge requests as `conway.evals.judge.agent_s3` builds them: the stored prompts are the
bytes SOURCES.md names, the messages have S3's shape and order, the marks land where the action was, the answers
are split as S3 splits them, and Conway's actions read as the PyAutoGUI lines they stand for."""

from __future__ import annotations

import base64
import hashlib
import io
import re

from PIL import Image

from conway.evals.judge import agent_s3

ROW = re.compile(r"^\| `([^`]+)` \|.*\| ([0-9a-f]{64}) \|$", re.M)


def png(size=(640, 400), colour=(240, 240, 240)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, colour).save(buf, format="PNG")
    return buf.getvalue()


def decoded(part: dict) -> Image.Image:
    url = part["image_url"]["url"]
    assert url.startswith("data:image/png;base64,") and part["image_url"]["detail"] == "high"
    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))


def test_the_stored_prompts_are_the_bytes_sources_md_names():
    listed = dict(ROW.findall((agent_s3.PROMPTS / "SOURCES.md").read_text(encoding="utf-8")))
    stored = {p.name for p in agent_s3.PROMPTS.iterdir() if p.name != "SOURCES.md"}
    assert set(listed) == stored == {"narrator_system.txt", "judge_system.txt"}
    for name, digest in listed.items():
        assert hashlib.sha256((agent_s3.PROMPTS / name).read_bytes()).hexdigest() == digest, name


def test_conway_actions_read_as_pyautogui_lines():
    code = agent_s3.pyautogui_code
    assert code([{"type": "click", "x": 10.4, "y": 20.6}]) == "pyautogui.click(10, 21)"
    assert code([{"type": "drag", "x": 1, "y": 2, "to_x": 30, "to_y": 40}]) == (
        "pyautogui.moveTo(1, 2); pyautogui.dragTo(30, 40, button='left')")
    assert code([{"type": "hotkey", "keys": ["ctrl", "s"]}]) == 'pyautogui.hotkey("ctrl", "s")'
    assert code([{"type": "finish", "status": "DONE"}]) == "DONE"
    assert code([{"type": "finish", "status": "FAIL", "message": "impossible"}]) == "FAIL"
    assert code([{"type": "shell", "command": "echo ok"}]) == '# shell: {"command": "echo ok"}'
    assert code([{"type": "type", "text": "hi"}, {"type": "key", "key": "enter"}]) == (
        'pyautogui.write("hi"); pyautogui.press("enter")')


def test_a_click_step_is_marked_boxed_and_zoomed_as_s3_asks():
    before, after = png(), png(colour=(250, 250, 250))
    messages, _ = agent_s3.narration_request(before, after, "pyautogui.click(100, 50)")
    assert messages[0] == {"role": "system", "content": agent_s3.prompt("narrator_system.txt")}
    content = messages[1]["content"]
    assert [p.get("text", p["type"]) for p in content] == [
        "BEFORE:", "image_url", "Agent Action: pyautogui.click(100, 50)", "AFTER:", "image_url", "ZOOMED AFTER:",
        "image_url"]
    marked = decoded(content[1]).convert("RGB")
    assert marked.getpixel((100, 50)) == (255, 0, 0) and marked.size == (640, 400)  # the red dot where it clicked
    boxed, zoomed = decoded(content[4]), decoded(content[6])
    assert boxed.format == zoomed.format == "WEBP"  # sent as S3 sends them: WebP labelled image/png
    assert zoomed.size == (1200, 1200)  # the 300x300 neighbourhood, 4x
    assert boxed.convert("RGB").getpixel((0, 0))[0] > 200 and boxed.convert("RGB").getpixel((0, 0))[1] < 60  # box


def test_a_step_without_a_mouse_action_sends_the_after_screenshot_as_it_is_and_done_is_not_asked():
    after = png(colour=(1, 2, 3))
    messages, deviation = agent_s3.narration_request(png(), after, 'pyautogui.press("enter")')
    assert deviation is None and len(messages[1]["content"]) == 5
    assert base64.b64decode(messages[1]["content"][4]["image_url"]["url"].split(",", 1)[1]) == after
    assert agent_s3.narration_request(png(), after, "DONE") == (None, None)
    assert agent_s3.fact(3, "DONE", None)["fact_answer"] == agent_s3.DONE_FACT
    fact = agent_s3.fact(2, "pyautogui.click(1, 1)", "<thoughts>looked</thoughts>\n<answer>- a menu opened</answer>")
    assert fact == {"fact_thoughts": "looked", "fact_answer": "Fact Caption from Screenshot 2: - a menu opened"}


def test_the_judge_request_and_its_answer():
    a, b = png(colour=(9, 9, 9)), png(colour=(8, 8, 8))
    messages = agent_s3.judge_request("Write ok.", [{"initial": a, "final": b, "facts": ["F1", "F2"]},
                                                    {"initial": None, "final": b, "facts": ["G1"]}])
    system = messages[0]["content"]
    assert "**User Request:** \nWrite ok.\n" in system and "judging 2 sequences" in system
    assert "<NUMBER OF TRAJECTORIES>" not in system and "<TASK_DESCRIPTION_INPUT>" not in system
    texts = [[p.get("text", "image") for p in m["content"]] for m in messages[1:]]
    assert texts == [["Initial screenshot of result1", "image"], ["Final screenshot of result1", "image"],
                     ["Fact captions for Trajectory 1:", "F1", "F2"],
                     ["Fact captions for Trajectory 2:", "G1"],  # no first screenshot: no pair of screenshots
                     ["Please evaluate the 2 trajectories based on the criteria provided in the system prompt."]]
    assert agent_s3.choice("<thoughts>2 is cleaner</thoughts><answer>2</answer>", 2) == (2, "2", "2 is cleaner")
    assert agent_s3.choice("<answer>3</answer>", 2)[0] is None
    assert agent_s3.choice("the second one", 2)[0] is None
