"""The two requests of Agent S3's behaviour Best-of-N, built as its own code builds them.

Agent S3 (simular-ai/Agent-S, `gui_agents/s3/bbon/`) turns each rollout into facts and lets a judge compare them:

* **a fact per step** (its `BehaviorNarrator`): the screenshot before the step with the mouse action marked on
  it (a red "Click", a blue "MoveTo", a green "DragTo" and the drag's line), the action as PyAutoGUI code, the
  screenshot after it (with a red box around the action's neighbourhood) and that neighbourhood zoomed 4x,
  asked at temperature 0 with its narrator prompt; the answer's `<answer>` is the step's fact. A step that
  declared DONE or FAIL is not asked: its fact is the narrator's fixed sentence.
* **a comparison** (its `ComparativeJudge`): its judge prompt with the task and the number of rollouts, then per
  rollout its first and last screenshots and its facts, then the closing request; the answer's `<answer>` is the
  1-based index of the rollout it prefers.

The prompts are data (`prompts/`, with their source and sha256 in `prompts/SOURCES.md`); this module holds the
request's shape only. What differs from the official code, each said where it happens:

* the action is Conway's, written as the PyAutoGUI line it stands for (`pyautogui_code`): S3's rollouts record
  the PyAutoGUI code they ran, Conway's the action schema;
* the zoomed view is upscaled with OpenCV (Lanczos, then its colour denoiser) as S3 does when OpenCV is
  installed (the `goldens` extra); without it Pillow's Lanczos, undenoised, and the narration says so
  (`ZOOM_WITHOUT_OPENCV`);
* a narrator answer without its tags is not asked again with S3's formatting feedback: the step's fact is the
  answer as it came (S3 retries three times, then takes the last answer the same way).
"""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageFont

PROMPTS = Path(__file__).resolve().parent / "prompts"
DONE_FACT = "The agent has indicated that it is done with the task."
FAIL_FACT = "The agent has indicated that it is impossible to proceed further with the task."
ZOOM = (300, 300, 4)
"""The zoomed view: a 300x300 crop around the action, upscaled 4x."""
ZOOM_WITHOUT_OPENCV = "zoom upscaled with Pillow's Lanczos, not OpenCV's Lanczos and denoiser (OpenCV not installed)"


def prompt(name: str) -> str:
    return (PROMPTS / name).read_text(encoding="utf-8")


# --- Conway's action as the PyAutoGUI line it stands for ------------------------------------------------------


def pyautogui_code(actions: list[dict[str, Any]]) -> str:
    """A step's actions as S3's narrator reads them: PyAutoGUI calls joined by "; ", or DONE / FAIL."""
    lines = []
    for a in actions:
        line = _one(a)
        if line in ("DONE", "FAIL"):
            return line if not lines else "; ".join(lines)  # the narrator's fixed fact only for a bare finish
        if line:
            lines.append(line)
    return "; ".join(lines) or "import time; time.sleep(1)"


def _xy(a: dict[str, Any], x: str = "x", y: str = "y") -> str:
    return f"{round(float(a.get(x) or 0))}, {round(float(a.get(y) or 0))}"


def _one(a: dict[str, Any]) -> str:
    kind = a.get("type")
    if kind == "finish":
        return "FAIL" if a.get("status") == "FAIL" else "DONE"
    if kind in ("click", "double_click", "triple_click", "right_click", "move"):
        if kind == "click" and a.get("button") in ("middle", "right"):
            return f"pyautogui.click({_xy(a)}, button='{a['button']}')"
        call = {"click": "click", "double_click": "doubleClick", "triple_click": "tripleClick",
                "right_click": "rightClick", "move": "moveTo"}[kind]
        return f"pyautogui.{call}({_xy(a)})"
    if kind == "drag":
        return f"pyautogui.moveTo({_xy(a)}); pyautogui.dragTo({_xy(a, 'to_x', 'to_y')}, button='left')"
    if kind == "type":
        return f"pyautogui.write({json.dumps(str(a.get('text', '')))})"
    if kind == "key":
        return f"pyautogui.press({json.dumps(str(a.get('key', '')))})"
    if kind == "hotkey":
        return "pyautogui.hotkey(" + ", ".join(json.dumps(str(k)) for k in a.get("keys") or []) + ")"
    if kind == "scroll":
        at = f", x={round(float(a['x']))}, y={round(float(a['y']))}" if a.get("x") is not None else ""
        return (f"pyautogui.hscroll({int(a.get('dx') or 0)}{at})" if a.get("dx") and not a.get("dy")
                else f"pyautogui.scroll({int(a.get('dy') or 0)}{at})")
    if kind == "wait":  # S3's own agent waits with this line
        return f"import time; time.sleep({a.get('seconds') if a.get('seconds') is not None else 1})"
    # a tool call no PyAutoGUI line stands for (shell, files, MCP): said as the call it was
    body = {k: v for k, v in a.items() if k != "type" and v is not None}
    return f"# {kind}: {json.dumps(body, sort_keys=True)[:300]}"


# --- the narration ---------------------------------------------------------------------------------------------


def mouse_actions(code: str) -> list[str]:
    """The click, moveTo and dragTo calls of a line of PyAutoGUI code (the ones S3 marks on the screenshot)."""
    out = []
    for part in code.split(";"):
        part = part.strip()
        if part.startswith(("pyautogui.click", "pyautogui.moveTo", "pyautogui.dragTo")):
            out.append(part)
    return out


def _point(call: str) -> tuple[int, int]:
    args = call.split("(", 1)[1].rstrip(")").split(", ")
    return int(args[0]), int(args[1])


def mark(png: bytes, calls: list[str]) -> bytes:
    """The before screenshot with each mouse call marked where it happened (a dot, its label, a drag's line)."""
    img = Image.open(io.BytesIO(png))
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default(25)
    start: tuple[int, int] | None = None
    for call in calls:
        x, y = _point(call)
        x, y = max(0, min(img.width - 1, x)), max(0, min(img.height - 1, y))

        def label(text: str, colour: tuple[int, int, int], x: int = x, y: int = y) -> None:
            box = draw.textbbox((0, 0), text, font=font)
            w, h = box[2] - box[0], box[3] - box[1]
            dx, dy = -5, 5  # below and a little left of the dot, moved inside the picture when it would leave it
            if x + dx + w > img.width:
                dx = -w - 5
            if y + dy + h > img.height:
                dy = -h - 5
            if x + dx < 0:
                dx = 5
            if y + dy < 0:
                dy = 5
            draw.text((x + dx, y + dy), text, fill=colour, font=font)

        if call.startswith("pyautogui.click"):
            draw.circle((x, y), radius=3, fill=(255, 0, 0))
            label("Click", (255, 0, 0))
        if call.startswith("pyautogui.moveTo"):
            draw.circle((x, y), radius=3, fill=(0, 0, 255))
            label("MoveTo", (0, 0, 255))
            start = (x, y)
        if call.startswith("pyautogui.dragTo"):
            draw.line([start or (x, y), (x, y)], fill=(0, 255, 0), width=2)
            draw.circle((x, y), radius=3, fill=(0, 255, 0))
            label("DragTo", (0, 255, 0))
    out = io.BytesIO()
    img.save(out, format="PNG")
    return out.getvalue()


def _webp(img: Image.Image) -> bytes:
    out = io.BytesIO()
    img.save(out, format="WEBP")  # S3 sends these as WebP (labelled image/png, as its code does)
    return out.getvalue()


def zoom(png: bytes, x: int, y: int) -> tuple[bytes, bytes, str | None]:
    """(the neighbourhood of (x, y) zoomed, the after screenshot with a red box around it, a deviation or None)."""
    w, h, scale = ZOOM
    img = Image.open(io.BytesIO(png)).convert("RGB")
    left = min(max(x - w // 2, 0), img.width - w)
    top = min(max(y - h // 2, 0), img.height - h)
    crop = img.crop((left, top, left + w, top + h))
    boxed = img.copy()
    ImageDraw.Draw(boxed).rectangle([left, top, left + w, top + h], outline="red", width=3)
    deviation = None
    try:
        import cv2
        import numpy as np

        bgr = cv2.cvtColor(np.array(crop), cv2.COLOR_RGB2BGR)
        bgr = cv2.resize(bgr, None, fx=scale, fy=scale, interpolation=cv2.INTER_LANCZOS4)
        bgr = cv2.fastNlMeansDenoisingColored(bgr, None, 5, 5, 7, 21)
        crop = Image.fromarray(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))
    except ImportError:
        crop = crop.resize((crop.width * scale, crop.height * scale), Image.Resampling.LANCZOS)
        deviation = ZOOM_WITHOUT_OPENCV
    return _webp(crop), _webp(boxed), deviation


def _image(data: bytes) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{base64.b64encode(data).decode()}",
                                               "detail": "high"}}


def narration_request(before: bytes, after: bytes, code: str) -> tuple[list[dict[str, Any]] | None, str | None]:
    """(the narrator's messages for one step, a deviation or None); no messages for DONE and FAIL."""
    if code in ("DONE", "FAIL"):
        return None, None
    calls = mouse_actions(code)
    content: list[dict[str, Any]] = [{"type": "text", "text": "BEFORE:"}, _image(mark(before, calls)),
                                     {"type": "text", "text": f"Agent Action: {code}"},
                                     {"type": "text", "text": "AFTER:"}]
    deviation = None
    if calls:
        x, y = _point(calls[-1])
        zoomed, boxed, deviation = zoom(after, x, y)
        content += [_image(boxed), {"type": "text", "text": "ZOOMED AFTER:"}, _image(zoomed)]
    else:
        content.append(_image(after))
    return [{"role": "system", "content": prompt("narrator_system.txt")},
            {"role": "user", "content": content}], deviation


def split_answer(text: str) -> tuple[str, str]:
    """(answer, thoughts) of a `<thoughts>…</thoughts><answer>…</answer>` reply, as S3 splits it: a missing tag
    leaves the whole text."""
    thoughts = text.split("<thoughts>")[-1].split("</thoughts>")[0].strip()
    answer = text.split("<answer>")[-1].split("</answer>")[0].strip()
    return answer, thoughts


def fact(step: int, code: str, answer_text: str | None) -> dict[str, str]:
    """The step's fact (`fact_answer`, as the judge reads it) and the narrator's reasoning."""
    if code == "DONE":
        return {"fact_thoughts": DONE_FACT, "fact_answer": DONE_FACT}
    if code == "FAIL":
        return {"fact_thoughts": FAIL_FACT, "fact_answer": FAIL_FACT}
    answer, thoughts = split_answer(answer_text or "")
    return {"fact_thoughts": thoughts, "fact_answer": f"Fact Caption from Screenshot {step}: {answer}"}


# --- the comparison --------------------------------------------------------------------------------------------


def judge_request(instruction: str, rollouts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The judge's messages: `rollouts`, in the order their indices name them, each {"initial": PNG bytes or None,
    "final": PNG bytes or None, "facts": [fact_answer, …]}."""
    n = len(rollouts)
    system = prompt("judge_system.txt").replace("<TASK_DESCRIPTION_INPUT>", instruction)
    messages: list[dict[str, Any]] = [{"role": "system",
                                       "content": system.replace("<NUMBER OF TRAJECTORIES>", str(n))}]
    for i, r in enumerate(rollouts, 1):
        if r.get("initial") is not None and r.get("final") is not None:
            messages.append({"role": "user", "content": [{"type": "text", "text": f"Initial screenshot of result{i}"},
                                                         _image(r["initial"])]})
            messages.append({"role": "user", "content": [{"type": "text", "text": f"Final screenshot of result{i}"},
                                                         _image(r["final"])]})
        if r.get("facts"):
            messages.append({"role": "user", "content": [{"type": "text", "text": f"Fact captions for Trajectory {i}:"}]
                             + [{"type": "text", "text": f} for f in r["facts"]]})
    messages.append({"role": "user", "content": [{"type": "text", "text": f"Please evaluate the {n} trajectories "
                                                  "based on the criteria provided in the system prompt."}]})
    return messages


def choice(text: str, n: int) -> tuple[int | None, str, str]:
    """(the 1-based index the judge named, or None when its answer names none of the n; answer; thoughts)."""
    answer, thoughts = split_answer(text or "")
    index = int(answer) if re.fullmatch(r"\s*[+-]?\d+\s*", answer) else None
    return (index if index is not None and 1 <= index <= n else None), answer, thoughts
