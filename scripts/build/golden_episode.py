"""The episode the request goldens are made over, and the one form both sides' requests are compared in.

Shared by the golden builder (`scripts/build/osworld_goldens.py`, which runs the official agents) and the golden
tests (`tests/policies/test_request_goldens.py`, which run Conway): 16 steps on a 1920x1080 screen, one scripted
answer a step per preset (each valid for its agent's parser, no step ends the task), a non-empty result after
every step (what Conway's loop notes; the official agents are told no result), and the task's instruction.

Only the standard library and Pillow here: the tests import it without the agents' dependencies.
"""

from __future__ import annotations

import base64
import hashlib
import io
import random
from typing import Any

from PIL import Image, ImageDraw

SCREEN = (1920, 1080)
STEPS = 16
INSTRUCTION = "Rename report.txt in the Documents folder to final.txt and save it."
COLOURS = [(220, 40, 20), (40, 200, 10), (200, 200, 30), (250, 140, 0), (120, 60, 20), (180, 20, 120),
           (230, 230, 190), (150, 100, 50), (255, 180, 150), (90, 200, 60), (200, 80, 80), (130, 130, 30),
           (250, 250, 100), (160, 220, 120), (220, 120, 100), (100, 40, 0)]
"""One background colour a step: a screenshot's step is read back from its centre pixel after any resize. Red
exceeds blue in each, so no colour is another's with red and blue swapped: an image sent BGR is told apart."""

RESULTS = [f"{line} (step {n})" for n, line in enumerate([
    "clicked: the Files window opened", "typed 8 characters", "scrolled down 5", "dragged the file onto Archive",
    "pressed ctrl+s: saved", "waited 5 s: the dialog appeared", "pressed ctrl+a", "typed 5 characters",
    "right-clicked: a context menu opened", "double-clicked: report.txt opened", "scrolled up 5",
    "pressed enter", "clicked Save", "waited 5 s", "dragged the window", "clicked Close"], start=1)]
"""The outcome Conway's loop notes after each step (non-empty, so a preset that shows results shows them)."""

UITARS15 = [
    "Thought: The Files icon is on the left.\nAction: click(start_box='(120,340)')",
    "Thought: A window opened; I type the name.\nAction: type(content='report\\n')",
    "Thought: Scroll down to the list.\nAction: scroll(start_box='(640,400)', direction='down')",
    "Thought: Drag the file to the folder.\nAction: drag(start_box='(300,420)', end_box='(900,420)')",
    "Thought: Save it.\nAction: hotkey(key='ctrl s')",
    "Thought: Wait for the dialog.\nAction: wait()",
    "Thought: Select all the text.\nAction: hotkey(key='ctrl a')",
    "Thought: Type the new name.\nAction: type(content='final')",
    "Thought: Right-click the file for its menu.\nAction: right_single(start_box='(500,600)')",
    "Thought: Open the file.\nAction: left_double(start_box='(700,300)')",
    "Thought: Back to the top of the list.\nAction: scroll(start_box='(960,540)', direction='up')",
    "Thought: Confirm the new name.\nAction: hotkey(key='enter')",
    "Thought: Click the Save button.\nAction: click(start_box='(1500,900)')",
    "Thought: The file is still saving.\nAction: wait()",
    "Thought: Move the window to the right.\nAction: drag(start_box='(400,50)', end_box='(1200,50)')",
    "Thought: Close the dialog.\nAction: click(start_box='(1800,60)')",
]
UITARS10 = [a.replace("(1500,900)", "(780,830)").replace("(1800,60)", "(930,60)").replace("(1200,50)", "(620,50)")
            for a in UITARS15]
"""UI-TARS 1.0 answers on its 0-1000 grid (the same steps, every point inside the grid)."""

OPENCUA = [
    "## Thought:\nThe terminal is open.\n\n## Action:\nType the command and run it.\n\n## Code:\n```python\n"
    "pyautogui.write(message='stat')\npyautogui.press(keys=['enter'])\n```",
    "## Thought:\nThe Files icon.\n\n## Action:\nClick the Files icon.\n\n## Code:\n```python\n"
    "pyautogui.click(x=120, y=340)\n```",
    "## Thought:\nThe list is below.\n\n## Action:\nScroll down the list.\n\n## Code:\n```python\n"
    "pyautogui.moveTo(x=640, y=400)\npyautogui.scroll(-5)\n```",
    "## Thought:\nThe report file.\n\n## Action:\nDouble-click the report.\n\n## Code:\n```python\n"
    "pyautogui.doubleClick(x=300, y=420)\n```",
    "## Thought:\nSave.\n\n## Action:\nPress Ctrl+S.\n\n## Code:\n```python\npyautogui.hotkey('ctrl', 's')\n```",
    "## Thought:\nThe dialog is slow.\n\n## Action:\nWait for the dialog.\n\n## Code:\n```code\n"
    "computer.wait(seconds=5)\n```",
    "## Thought:\nSelect the name.\n\n## Action:\nSelect all the text.\n\n## Code:\n```python\n"
    "pyautogui.hotkey('ctrl', 'a')\n```",
    "## Thought:\nType it.\n\n## Action:\nType the new name.\n\n## Code:\n```python\n"
    "pyautogui.write(message='final')\n```",
    "## Thought:\nIts menu.\n\n## Action:\nRight-click the file.\n\n## Code:\n```python\n"
    "pyautogui.rightClick(x=500, y=600)\n```",
    "## Thought:\nOpen it.\n\n## Action:\nDouble-click the file.\n\n## Code:\n```python\n"
    "pyautogui.doubleClick(x=700, y=300)\n```",
    "## Thought:\nThe top.\n\n## Action:\nScroll up the list.\n\n## Code:\n```python\n"
    "pyautogui.moveTo(x=960, y=540)\npyautogui.scroll(5)\n```",
    "## Thought:\nConfirm.\n\n## Action:\nPress Enter.\n\n## Code:\n```python\npyautogui.press('enter')\n```",
    "## Thought:\nSave.\n\n## Action:\nClick the Save button.\n\n## Code:\n```python\n"
    "pyautogui.click(x=1500, y=900)\n```",
    "## Thought:\nStill saving.\n\n## Action:\nWait for the save.\n\n## Code:\n```code\n"
    "computer.wait(seconds=5)\n```",
    "## Thought:\nThe window.\n\n## Action:\nDrag the window to the right.\n\n## Code:\n```python\n"
    "pyautogui.moveTo(x=400, y=50)\npyautogui.dragTo(x=1200, y=50)\n```",
    "## Thought:\nDone with the dialog.\n\n## Action:\nClose the dialog.\n\n## Code:\n```python\n"
    "pyautogui.click(x=1800, y=60)\n```",
]


def _tool_call(action: str, rest: str = "") -> str:
    return '<tool_call>\n{"name": "computer_use", "arguments": {"action": "%s"%s}}\n</tool_call>' % (action, rest)


_QWEN_STEPS = [
    ("Click the Files icon.", "left_click", ', "coordinate": [%s]'),
    ("Type the name.", "type", ', "text": "report"'),
    ("Scroll down the list.", "scroll", ', "pixels": -5'),
    ("Double-click the report.", "double_click", ', "coordinate": [%s]'),
    ("Save it.", "key", ', "keys": ["ctrl", "s"]'),
    ("Wait for the dialog.", "wait", ', "time": 2'),
    ("Select all the text.", "key", ', "keys": ["ctrl", "a"]'),
    ("Type the new name.", "type", ', "text": "final"'),
    ("Open the file's menu.", "right_click", ', "coordinate": [%s]'),
    ("Move to the list.", "mouse_move", ', "coordinate": [%s]'),
    ("Scroll up the list.", "scroll", ', "pixels": 5'),
    ("Confirm the name.", "key", ', "keys": ["enter"]'),
    ("Click the Save button.", "left_click", ', "coordinate": [%s]'),
    ("Wait for the save.", "wait", ', "time": 2'),
    ("Drag the window to the right.", "drag", ""),
    ("Close the dialog.", "left_click", ', "coordinate": [%s]'),
]


def _qwen(points: list[str], bare: set[int]) -> list[str]:
    out, it = [], iter(points)
    for n, (line, action, rest) in enumerate(_QWEN_STEPS, start=1):
        if action == "drag":  # a drag starts where a mouse_move in the same answer put the pointer
            start, end = next(it), next(it)
            call = _tool_call("mouse_move", ', "coordinate": [%s]' % start) + "\n" + \
                _tool_call("left_click_drag", ', "coordinate": [%s]' % end)
        else:
            call = _tool_call(action, rest % next(it) if "%s" in rest else rest)
        out.append(call if n in bare else f"Action: {line}\n{call}")
    return out


QWEN3VL = _qwen(["62, 315", "156, 389", "260, 555", "500, 500", "781, 833", "208, 46", "625, 46", "937, 55"], set())
"""Qwen3-VL answers, points on its 0-999 grid (the runner's `--coord relative`)."""
QWEN25VL = _qwen(["120, 340", "300, 420", "500, 600", "960, 540", "1000, 620", "270, 30", "820, 30", "1290, 40"],
                {3, 5, 12})
"""Qwen2.5-VL answers, points in pixels of its resized screenshot (1316x728); three without an `Action:` line (the agent's
history line then names the action)."""

GTA1_TARGETS = ["the Files icon in the dock", "the report.txt file", "the Save button", "the Close button"]
GTA1_POINTS = ["(120,340)", "(300,420)", "(1500,900)", "(1800,60)"]

ANSWERS: dict[str, list[str]] = {"uitars-1.5": UITARS15, "uitars-1.0": UITARS10, "opencua": OPENCUA,
                                 "qwen3vl": QWEN3VL, "qwen25vl": QWEN25VL, "gta1": GTA1_POINTS}
"""Each golden's scripted model answers, one a step."""


def screenshot(step: int) -> bytes:
    """Step `step`'s screenshot (PNG, 1920x1080): its colour, a grid and a band of detail (so resampling filters
    differ), and a flat centre that names the step."""
    img = Image.new("RGB", SCREEN, COLOURS[step - 1])
    draw = ImageDraw.Draw(img)
    for x in range(0, SCREEN[0], 37):
        draw.line([(x, 0), (x, SCREEN[1])], fill=(20, 20, 20))
    for y in range(0, SCREEN[1], 41):
        draw.line([(0, y), (SCREEN[0], y)], fill=(235, 235, 235))
    rng = random.Random(step)
    for _ in range(400):
        x, y = rng.randrange(SCREEN[0] - 30), rng.randrange(60)
        draw.rectangle([x, y, x + rng.randrange(3, 30), y + rng.randrange(3, 12)],
                       fill=(rng.randrange(256), rng.randrange(256), rng.randrange(256)))
    cx, cy = SCREEN[0] // 2, SCREEN[1] // 2
    draw.rectangle([cx - 120, cy - 120, cx + 120, cy + 120], fill=COLOURS[step - 1])
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def _format(data: bytes) -> str:
    if data.startswith(b"\x89PNG"):
        return "png"
    if data.startswith(b"\xff\xd8"):
        return "jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    return "unknown"


def describe_image(url: str) -> dict[str, Any]:
    """An image's data URL as the goldens keep it: declared type, encoding, size, sha256 of its decoded RGB pixels,
    the step whose screenshot it is (by its centre pixel), and whether its red and blue came back swapped."""
    head, _, payload = url.partition(",")
    data = base64.b64decode(payload)
    img = Image.open(io.BytesIO(data)).convert("RGB")
    pixel = img.getpixel((img.width // 2, img.height // 2))
    keys = [(c, n, "RGB") for n, c in enumerate(COLOURS, start=1)] + \
        [(c[::-1], n, "BGR") for n, c in enumerate(COLOURS, start=1)]
    _, step, channels = min(keys, key=lambda k: sum(abs(a - b) for a, b in zip(k[0], pixel)))  # type: ignore[arg-type]
    described = {"declared": head, "encoding": _format(data), "size": [img.width, img.height],
                 "pixels_sha256": hashlib.sha256(img.tobytes()).hexdigest(), "step": step, "channels": channels}
    if channels == "BGR":  # the sum of the same pixels with red and blue put back (docs/fidelity.md, GTA1)
        r, g, b = img.split()
        described["rgb_pixels_sha256"] = hashlib.sha256(Image.merge("RGB", (b, g, r)).tobytes()).hexdigest()
    return described


def normalized(value: Any) -> Any:
    """Messages with each image's data URL replaced by `describe_image`; everything else exactly as sent."""
    if isinstance(value, list):
        return [normalized(v) for v in value]
    if isinstance(value, dict):
        if value.get("type") == "image_url" and isinstance(value.get("image_url"), dict):
            inner = dict(value["image_url"])
            inner["url"] = describe_image(inner["url"])
            return {**{k: normalized(v) for k, v in value.items() if k != "image_url"}, "image_url": inner}
        return {k: normalized(v) for k, v in value.items()}
    return value


TRANSPORT_KEYS = ("model", "messages", "stream", "cache_prompt")
"""Request fields that do not change what the model computes: the model's name (each server names its own),
the messages (compared on their own), `stream: false` (the API's default) and llama-server's `cache_prompt`."""


def channels_put_back(value: Any) -> Any:
    """A golden with every image sent BGR described as the same pixels sent RGB (the one correction Conway makes
    to an official request: GTA1's `cv2.imencode` of an RGB array, docs/fidelity.md)."""
    if isinstance(value, list):
        return [channels_put_back(v) for v in value]
    if isinstance(value, dict):
        if value.get("channels") == "BGR" and "rgb_pixels_sha256" in value:
            fixed = {k: v for k, v in value.items() if k != "rgb_pixels_sha256"}
            return {**fixed, "pixels_sha256": value["rgb_pixels_sha256"], "channels": "RGB"}
        return {k: channels_put_back(v) for k, v in value.items()}
    return value


def request_record(body: dict[str, Any]) -> dict[str, Any]:
    """One chat request as the goldens keep it: its messages (images described) and its sampling fields."""
    sampling = {k: v for k, v in body.items() if k not in TRANSPORT_KEYS and not (k == "n" and v == 1)}
    return {"messages": normalized(body["messages"]), "sampling": dict(sorted(sampling.items()))}


def first_difference(got: Any, want: Any, path: str = "") -> str | None:
    """The first field where `got` (Conway) and `want` (the golden) differ, as one readable line; None if equal.
    Number types count: `1` and `1.0` are different bytes on the wire, and a server may read them differently
    (an integer field such as `top_k` refused or cast), so a request is held to the agent's own literal."""
    if type(got) is not type(want):
        return (f"{path or '(whole)'}: Conway {_short(got)} ({type(got).__name__}), official {_short(want)} "
                f"({type(want).__name__})")
    if isinstance(want, dict):
        for key in list(want) + [k for k in got if k not in want]:
            if key not in got:
                return f"{path}.{key}: Conway has none, official {_short(want[key])}"
            if key not in want:
                return f"{path}.{key}: Conway {_short(got[key])}, official has none"
            found = first_difference(got[key], want[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(want, list):
        for i, (a, b) in enumerate(zip(got, want)):
            found = first_difference(a, b, f"{path}[{i}]")
            if found:
                return found
        if len(got) != len(want):
            return f"{path}: Conway {len(got)} items, official {len(want)}"
        return None
    if got != want:
        if isinstance(want, str) and isinstance(got, str):
            at = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            return (f"{path}: texts differ at char {at}: Conway …{got[max(0, at - 30):at + 50]!r}…, "
                    f"official …{want[max(0, at - 30):at + 50]!r}…")
        return f"{path}: Conway {_short(got)}, official {_short(want)}"
    return None


def _short(value: Any, n: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= n else text[:n] + "…"
