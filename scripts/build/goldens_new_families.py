"""Request goldens of the newer families from their UNMODIFIED official code, for `tests/policies/test_new_family_goldens.py`.

    python -m scripts.build.goldens_new_families --osworld /tmp/families-src --cookbook /tmp/hai-cookbook

`--maiui` (for `mai-ui`) is an extracted Tongyi-MAI/MAI-UI at 4dd07b9e (`git -C <mirror> archive HEAD src | tar -x
-C /tmp/maiui-src`), whose navigation agent is run with its `OpenAI` client class the recorder; its prompt's sum
and location go into `tests/data/goldens/prompt_sources.json`; `--venus` (for `ui-venus-1.5`) likewise an
extracted inclusionAI/UI-Venus at c3a1442c (`git archive HEAD Venus_framework`), its framework's policy posting to
the recorder.
`--osworld` is an extracted copy of OSWorld (ljxpython/OSWorldUse b5007a93, upstream-identical: `git -C <mirror>
archive HEAD mm_agents | tar -x -C /tmp/families-src`), `--cookbook` one of hcompai/hai-cookbook 2ba89619
(`holo2/` and `utils/`). Neither is committed. The official agents need their own dependencies (openai, backoff,
httpx, loguru, requests, numpy, google-api-core, oss2, Pillow): a build environment's, not Conway's
(`pip install -e '.[goldens]'` installs them).

Each agent is imported as written and constructed as its runner constructs it (`scripts/python/run_multienv_*.py`
defaults, screen 1920x1080); only its network client is replaced by a RECORDER that keeps the whole request body
(over the wire: the OpenAI client's `extra_body` merged in) and answers the episode's scripted answer:
`openai.OpenAI` (EvoCUA, GUI-Owl 1.5), `requests.post` (Jedi), `httpx.post` (Kimi), and the object store's
bucket GUI-Owl's own `push_oss` uploads each screenshot to, whose URL the agent sends (the stand-in keeps the bytes
uploaded, JPEG q75 as `push_oss` converts them; the golden holds them as the data URL of those bytes). Holo2's request is the hosted-API notebook's
`build_messages` cell, run as written. The episode is 16 steps (Holo2's stateless request: 4), one distinct
screenshot a step (`screenshot`), every answer valid for both the agent's parser and Conway's and none ending the
task. The golden keeps every request: its messages (images described by `describe_image`: declared type,
encoding, size, sha256 of the decoded pixels, the step it shows) and its sampling fields.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import copy
import hashlib
import importlib
import importlib.util
import io
import json
import logging
import os
import random
import sys
import tempfile
import types
from pathlib import Path
from typing import Any, Callable, Iterator

from PIL import Image, ImageDraw

OUT = Path(__file__).resolve().parents[2] / "tests" / "data" / "goldens_new"
OSWORLD_COMMIT = "b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6"
COOKBOOK_COMMIT = "2ba89619bdcfe729d31649d976bdaa7b9551e216"
SCREEN = (1920, 1080)
STEPS = 16
INSTRUCTION = "Rename report.txt in the Documents folder to final.txt and save it."
COLOURS = [(200, 30, 30), (30, 200, 30), (30, 30, 200), (200, 200, 30), (30, 200, 200), (200, 30, 200),
           (120, 60, 20), (20, 120, 60), (60, 20, 120), (240, 140, 0), (0, 140, 240), (140, 0, 240),
           (90, 90, 90), (250, 250, 250), (160, 220, 120), (220, 120, 160)]
"""One background colour a step: a screenshot's step is read back from its centre pixel after any resize."""


def _call(action: str, rest: str = "") -> str:
    return '<tool_call>\n{"name": "computer_use", "arguments": {"action": "%s"%s}}\n</tool_call>' % (action, rest)


_TOOL_STEPS = [  # (Action line or None for a bare call, action, arguments)
    ("Click the Files icon.", "left_click", ', "coordinate": [62, 315]'),
    ("Type the name.", "type", ', "text": "report"'),
    (None, "scroll", ', "pixels": -5'),
    ("Double-click the report.", "double_click", ', "coordinate": [156, 389]'),
    (None, "key", ', "keys": ["ctrl", "s"]'),
    ("Wait for the dialog.", "wait", ', "time": 2'),
    ("Select all the text.", "key", ', "keys": ["ctrl", "a"]'),
    ("Type the new name.", "type", ', "text": "final"'),
    ("Open the file's menu.", "right_click", ', "coordinate": [260, 555]'),
    (None, "mouse_move", ', "coordinate": [500, 500]'),
    ("Scroll up the list.", "scroll", ', "pixels": 5'),
    (None, "key", ', "keys": ["enter"]'),
    ("Click the Save button.", "left_click", ', "coordinate": [781, 833]'),
    ("Wait for the save.", "wait", ', "time": 2'),
    ("Select the name field.", "triple_click", ', "coordinate": [625, 46]'),
    (None, "left_click", ', "coordinate": [937, 55]'),
]

EVOCUA_S2 = [(f"Action: {line}\n" if line else "") + _call(a, rest) for line, a, rest in _TOOL_STEPS]
"""EvoCUA S2 answers on its 0..999 grid; four bare calls (the agent then keeps "Performing <fn> action")."""

GUIOWL = [(f"The screen shows step {n}.\nAction: {line}\n" if line and n % 3 == 0 else
           f"Action: {line}\n" if line else "") + _call(a, rest)
          for n, (line, a, rest) in enumerate(_TOOL_STEPS, start=1)]
"""GUI-Owl 1.5 answers on its 0..1000 grid: some with a line before `Action:`, four bare calls."""

_CODE_STEPS = [  # (thought, action, code) in pixels of the Qwen2.5-VL smart-resized screen (1932x1092)
    ("The terminal is open.", "Type the command and run it.", "pyautogui.write(message='stat')\n"
     "pyautogui.press(keys=['enter'])"),
    ("The Files icon.", "Click the Files icon.", "pyautogui.click(x=120, y=340)"),
    ("The list is below.", "Scroll down the list.", "pyautogui.moveTo(x=640, y=400)\npyautogui.scroll(-5)"),
    ("The report file.", "Double-click the report.\nIt is the second row.", "pyautogui.doubleClick(x=300, y=420)"),
    ("Save.", "Press Ctrl+S.", "pyautogui.hotkey('ctrl', 's')"),
    ("The dialog is slow.", "Wait for the dialog.", "computer.wait()"),
    ("Select the name.", "Select all the text.", "pyautogui.hotkey('ctrl', 'a')"),
    ("Type it.", "Type the new name.", "pyautogui.write(message='final')"),
    ("Its menu.", "Right-click the file.", "pyautogui.rightClick(x=500, y=600)"),
    ("Open it.", "Double-click the file.", "pyautogui.doubleClick(x=700, y=300)"),
    ("The top.", "Scroll up the list.", "pyautogui.moveTo(x=960, y=540)\npyautogui.scroll(5)"),
    ("Confirm.", "Press Enter.", "pyautogui.press('enter')"),
    ("Save.", "Click the Save button.", "pyautogui.click(x=1500, y=900)"),
    ("Still saving.", "Wait for the save.", "computer.wait()"),
    ("The window.", "Drag the window to the right.", "pyautogui.moveTo(x=400, y=50)\npyautogui.dragTo(x=1200, y=50)"),
    ("Done with the dialog.", "Close the dialog.", "pyautogui.click(x=1800, y=60)"),
]

EVOCUA_S1 = [f"# Step: {n}\n## Thought:\n{t}\n## Action:\n{a}\n## Code:\n```python\n{c}\n```"
             for n, (t, a, c) in enumerate(_CODE_STEPS, start=1)]
"""EvoCUA S1 answers (its system prompt's format), one with a two-line Action (the agent keeps the first line)."""


def _relative(code: str) -> str:
    """A step's code with each pixel point as a fraction of the 1932x1092 screen (3 decimals)."""
    import re

    def fix(m: Any) -> str:
        return f"x={int(m.group(1)) / 1932:.3f}, y={int(m.group(2)) / 1092:.3f}"
    return re.sub(r"x=(\d+), y=(\d+)", fix, code)


KIMI = [f"## Thought\n{t}\n## Action:\n{a}\n## Code:\n```python\n{_relative(c)}\n```" for t, a, c in _CODE_STEPS]
"""Kimi K2.5 answers (its non-thinking prompt's format), points as fractions of the screen."""

JEDI_TARGETS = ["The Files icon in the dock", "The report.txt file in the list", "The Save button",
                "The Close button of the dialog"]
JEDI_PLANNER = [
    "Observation:\nThe desktop is shown.\nThought:\nOpen Files.\n```python\n# The Files icon in the dock\n"
    "pyautogui.click(x=120, y=340)\n```",
    "Observation:\nFiles is open.\nThought:\nType the name.\n```python\n# Type the name\n"
    "pyautogui.typewrite('report')\n```",
    "Observation:\nThe list.\nThought:\nOpen the file.\n```python\n# The report.txt file in the list\n"
    "pyautogui.doubleClick(x=300, y=420)\n```",
    "Observation:\nThe file is open.\nThought:\nSave it.\n```python\n# Save\npyautogui.hotkey('ctrl', 's')\n```",
    "Observation:\nSaving.\nThought:\nWait for it.\n```WAIT```",
    "Observation:\nSaved.\nThought:\nClick Save.\n```python\n# The Save button\npyautogui.click(x=1500, y=900)\n```",
    "Observation:\nA dialog.\nThought:\nClose it.\n```python\n# The Close button of the dialog\n"
    "pyautogui.click(x=1800, y=60)\n```",
    "Observation:\nThe editor.\nThought:\nSelect all.\n```python\n# Select all\npyautogui.hotkey('ctrl', 'a')\n```",
] * 2
"""The planner's answers (gpt-4o's form in Jedi's prompt): four steps of eight ask the grounder."""
JEDI_GROUNDER = ['<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [%d, %d]}}'
                 '\n</tool_call>' % p for p in [(121, 344), (302, 425), (1511, 909), (1813, 61)] * 2]
"""Jedi's answers, one per grounded step, in pixels of the 1932x1092 size its prompt states."""

HOLO2_TARGETS = ["Select July 14th as the check-out date", "The Files icon in the dock", "The Save button",
                 "The Close button of the dialog"]
HOLO2 = ['{"x": 62, "y": 315}', '{"x": 156, "y": 389}', '{"x": 781, "y": 833}', '{"x": 937, "y": 55}']

_MOBILE_STEPS = [  # (thinking, mobile_use arguments) on MAI-UI's 0..999 grid
    ("Open the Files app from the dock.", '{"action": "click", "coordinate": [32, 292]}'),
    ("Type the name.", '{"action": "type", "text": "report"}'),
    ("The list goes on below.", '{"action": "swipe", "direction": "up"}'),
    ("Open the report.", '{"action": "click", "coordinate": [504, 63]}'),  # the agent replays [503, 62]
    ("Drag the file onto the folder.", '{"action": "drag", "start_coordinate": [156, 389], "end_coordinate": [468, 389]}'),
    ("Confirm.", '{"action": "system_button", "button": "enter"}'),
    ("Wait for the dialog.", '{"action": "wait"}'),
    ("Click the name field.", '{"action": "click", "coordinate": [600, 40, 651, 52]}'),  # a box: its centre
    ("Type the new name.", '{"action": "type", "text": "final"}'),
    ("Back to the top of the list.", '{"action": "swipe", "direction": "down", "coordinate": [500, 500]}'),
    ("The panel scrolls sideways.", '{"action": "swipe", "direction": "left"}'),
    ("Click the Save button.", '{"action": "click", "coordinate": [781, 833]}'),
    ("Wait for the save.", '{"action": "wait"}'),
    ("Confirm the name.", '{"action": "system_button", "button": "enter"}'),
    ("Close the dialog.", '{"action": "click", "coordinate": [937, 55]}'),
    ("Select the report again.", '{"action": "click", "coordinate": [126, 252]}'),
]

MAIUI = [(f"<thinking>\n{t}\n</thinking>" if n != 7 else f"{t}\n</think>") +
         f'\n<tool_call>\n{{"name": "mobile_use", "arguments": {a}}}\n</tool_call>'
         for n, (t, a) in enumerate(_MOBILE_STEPS, start=1)]
"""MAI-UI answers (its system prompt's format); the 7th as a thinking model writes it (a bare `</think>`)."""

_VENUS_STEPS = [  # (think, action, conclusion) of UI-Venus's mobile prompt, points on its 0..1000 grid
    ("The Files icon is in the dock.", "Click(box=(32,292))", "Open Files."),
    ("The search field is active.", "Type(content='report')", "Type the name."),
    ("The list goes on below.", "Scroll(start=(500,700), end=(500,300))", "Scroll down the list."),
    ("The report is the first row.", "Click(box=(504,63))", "Open the report."),
    ("Move the file onto the folder.", "Drag(start=(156,389), end=(468,389))", "Drag the file."),
    ("Confirm the search.", "PressEnter()", "Press Enter."),
    ("The dialog is loading.", "Wait()", "Wait."),
    ("The name field.", "Click(box=(625,46))", "Select the name field."),
    ("Type it.", "Type(content='final')", "Type the new name."),
    ("Back to the top.", "Scroll(start=(500,300), end=(500,700))", "Scroll up."),
    ("The panel scrolls sideways.", "Scroll(start=(800,500), end=(200,500))", "Scroll sideways."),
    ("", "Click(box=(781,833))", "Click Save."),  # no thinking: the framework keeps the action alone
    ("Still saving.", "Wait()", "Wait."),
    ("Confirm the name.", "PressEnter()", "Press Enter."),
    ("Close the dialog.", "Click(box=(937,55))", "Close it."),
    ("Select the report again.", "Click(box=(126,252))", "Select the report."),
]

VENUS = [(f"<think>{t}</think>\n" if t else "") + f"<action>{a}</action>\n<conclusion>{c}</conclusion>"
         for t, a, c in _VENUS_STEPS]
"""UI-Venus 1.5 answers (its prompt's output format); one without its thinking."""

ANSWERS: dict[str, list[str]] = {"evocua": EVOCUA_S2, "evocua-s1": EVOCUA_S1, "gui-owl-1.5": GUIOWL,
                                 "gui-owl-1.5-openai": GUIOWL, "kimi-k2.5": KIMI, "jedi-7b": JEDI_GROUNDER,
                                 "jedi-3b": JEDI_GROUNDER,
                                 "holo2": HOLO2, "mai-ui": MAIUI, "ui-venus-1.5": VENUS}
"""Each golden's scripted model answers (Jedi's: the grounder's), one a request."""


# --- the episode's screenshots and the form requests are kept in ------------------------------------------


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


def _encoding(data: bytes) -> str:
    if data.startswith(b"\x89PNG"):
        return "png"
    if data.startswith(b"\xff\xd8"):
        return "jpeg"
    return "unknown"


def describe_image(url: str) -> dict[str, Any]:
    """An image's data URL as the goldens keep it: declared type, encoding, size, sha256 of its decoded RGB pixels,
    and the step whose screenshot it is (by its centre pixel)."""
    head, _, payload = url.partition(",")
    data = base64.b64decode(payload)
    img = Image.open(io.BytesIO(data)).convert("RGB")
    pixel = img.getpixel((img.width // 2, img.height // 2))
    step = min(range(len(COLOURS)), key=lambda i: sum(abs(a - b) for a, b in zip(COLOURS[i], pixel))) + 1  # type: ignore[arg-type]
    return {"declared": head, "encoding": _encoding(data), "size": [img.width, img.height],
            "pixels_sha256": hashlib.sha256(img.tobytes()).hexdigest(), "step": step}


def normalized(value: Any) -> Any:
    """Messages with each image's data URL replaced by `describe_image`; everything else exactly as sent."""
    if isinstance(value, list):
        return [normalized(v) for v in value]
    if isinstance(value, dict):
        if value.get("type") == "image_url" and isinstance(value.get("image_url"), dict):
            inner = dict(value["image_url"])
            inner["url"] = describe_image(inner["url"])
            return {**{k: normalized(v) for k, v in value.items() if k != "image_url"}, "image_url": inner}
        if set(value) == {"image"} and str(value["image"]).startswith("data:"):  # DashScope's image part
            return {"image": describe_image(value["image"])}
        return {k: normalized(v) for k, v in value.items()}
    return value


TRANSPORT_KEYS = ("model", "messages", "stream", "cache_prompt", "timeout")
"""Request fields that do not change what the model computes (the model's name, the messages, compared on their
own, `stream: false`, llama-server's `cache_prompt`, the DashScope SDK's request `timeout`)."""


def request_record(body: dict[str, Any]) -> dict[str, Any]:
    """One chat request as the goldens keep it: its messages (images described) and its sampling fields."""
    sampling = {k: v for k, v in body.items() if k not in TRANSPORT_KEYS}
    return {"messages": normalized(body["messages"]), "sampling": dict(sorted(sampling.items()))}


# --- the recorders: each agent's network client, and nothing else ------------------------------------------


class Recorder:
    """Keeps every request body and answers the next scripted answer (of the queue the request's model names)."""

    def __init__(self, answers: dict[str, list[str]]):
        self.answers = {k: list(v) for k, v in answers.items()}
        self.bodies: list[tuple[str, dict[str, Any]]] = []

    def answer(self, queue: str, body: dict[str, Any]) -> str:
        self.bodies.append((queue, copy.deepcopy(body)))
        return self.answers[queue].pop(0)

    def openai_class(self, queue: str) -> type:
        recorder = self

        class _Completions:
            def create(self, **params: Any) -> Any:
                body = {k: v for k, v in params.items() if k != "extra_body"}
                body.update(params.get("extra_body") or {})  # merged into the JSON body by the client
                text = recorder.answer(queue, body)
                message = types.SimpleNamespace(content=text, reasoning_content=None)
                return types.SimpleNamespace(choices=[types.SimpleNamespace(message=message, finish_reason="stop")])

        class RecordingOpenAI:  # the RECORDER standing in for openai.OpenAI
            def __init__(self, *args: Any, **kwargs: Any):
                self.chat = types.SimpleNamespace(completions=_Completions())

        return RecordingOpenAI

    def post(self, queue_of: Callable[[dict[str, Any]], str]) -> Callable[..., Any]:
        """A stand-in for `requests.post` / `httpx.post`: the JSON body recorded, a 200 with the answer."""
        def post(url: str, *args: Any, json: dict[str, Any] | None = None, **kwargs: Any) -> Any:
            body = json or {}
            text = self.answer(queue_of(body), body)
            payload = {"choices": [{"finish_reason": "stop", "message": {"role": "assistant", "content": text}}]}
            return types.SimpleNamespace(status_code=200, text="", json=lambda: payload)
        return post


@contextlib.contextmanager
def _osworld_on_path(root: Path) -> Iterator[None]:
    sys.path.insert(0, str(root))
    try:
        yield
    finally:
        sys.path.remove(str(root))


def _obs(step: int) -> dict[str, Any]:
    return {"screenshot": screenshot(step), "accessibility_tree": None, "instruction": INSTRUCTION}


def _evocua(style: str) -> tuple[dict[str, Any], Recorder]:
    module = importlib.import_module("mm_agents.evocua.evocua_agent")
    preset = "evocua" if style == "S2" else "evocua-s1"
    recorder = Recorder({"llm": ANSWERS[preset]})
    module.openai.OpenAI = recorder.openai_class("llm")  # type: ignore[attr-defined]
    # scripts/python/run_multienv_evocua.py's defaults; S1 only takes --coordinate_type qwen25 (its recommended
    # --resize_factor 28)
    args = dict(model="evocua", max_tokens=32768, top_p=0.9, temperature=0.0, action_space="pyautogui",
                observation_type="screenshot", max_steps=50, prompt_style=style, max_history_turns=3,
                screen_size=SCREEN, coordinate_type="relative" if style == "S2" else "qwen25",
                password="osworld-public-evaluation", resize_factor=32 if style == "S2" else 28)
    agent = module.EvoCUAAgent(**args)
    agent.reset(logging.getLogger("goldens"))
    for step in range(1, STEPS + 1):
        agent.predict(INSTRUCTION, _obs(step))
    return {"source": f"OSWorld mm_agents/evocua/evocua_agent.py (ljxpython/OSWorldUse {OSWORLD_COMMIT})",
            "runner": "scripts/python/run_multienv_evocua.py", "agent_args": _jsonable(args)}, recorder


class _Bucket:
    """The UPLOAD stand-in for `oss2.Bucket` (Alibaba's object store): keeps each object's bytes, as uploaded."""

    objects: dict[str, bytes] = {}

    def __init__(self, *args: Any, **kwargs: Any):
        pass

    def put_object(self, key: str, data: bytes) -> None:
        _Bucket.objects[key] = bytes(data)


def _guiowl() -> tuple[dict[str, Any], Recorder]:
    """Owl15Agent on its OpenAI path (`--engine openai`): only the network is replaced, the OpenAI client by the
    recorder and the object store's bucket by `_Bucket`; the agent's own `push_oss` runs, so each screenshot is
    what it uploads (its PNG converted to JPEG at Pillow's default quality, 75) and the golden holds those bytes as
    the server would fetch them from the URL the agent sends."""
    module = importlib.import_module("mm_agents.owl15_agent")
    recorder = Recorder({"llm": ANSWERS["gui-owl-1.5"]})
    module.OpenAI = recorder.openai_class("llm")  # type: ignore[attr-defined]
    module.oss2 = types.SimpleNamespace(Auth=lambda *a, **k: None, Bucket=_Bucket)  # type: ignore[attr-defined]
    _Bucket.objects.clear()
    for key in ("access_key_id", "access_key_secret", "endpoint", "bucket_name"):
        os.environ[key] = "recorder"
    os.environ["url_prefix"] = "uploaded://"
    # scripts/python/run_multienv_gui_owl15.py's defaults, engine openai (an OpenAI-compatible server)
    args = dict(model="gui-owl-1.5", api_url="http://recorder/v1", api_key="none", history_n=5,
                action_space="pyautogui", observation_type="screenshot", max_trajectory_length=50, top_p=0.9,
                top_k=1, temperature=0.0, engine="openai", keep_full_response=0)
    agent = module.Owl15Agent(**args)
    agent.reset(logging.getLogger("goldens"))
    for step in range(1, STEPS + 1):
        agent.predict(INSTRUCTION, _obs(step))
    for _, body in recorder.bodies:  # each URL as the data URL of the bytes uploaded under its name
        for message in body["messages"]:
            for part in message["content"]:
                url = part.get("image_url", {}).get("url", "") if isinstance(part, dict) else ""
                if url.startswith("uploaded://"):
                    data = _Bucket.objects["images/" + url.removeprefix("uploaded://")]
                    part["image_url"]["url"] = f"data:image/{_encoding(data)};base64," + base64.b64encode(data).decode()
    return {"source": f"OSWorld mm_agents/owl15_agent.py (ljxpython/OSWorldUse {OSWORLD_COMMIT})",
            "runner": "scripts/python/run_multienv_gui_owl15.py --engine openai (the object store's upload "
                      "recorded)", "agent_args": args}, recorder


class _DashSession:
    """The NETWORK stand-in for the DashScope SDK's HTTP session: keeps each JSON body it posts and answers the next
    scripted answer in DashScope's response form."""

    def __init__(self, recorder: Recorder):
        self.recorder = recorder

    def post(self, url: str, data: bytes = b"", **kwargs: Any) -> Any:
        body = json.loads(data)
        text = self.recorder.answer("llm", body)
        payload = {"request_id": "recorded", "usage": {}, "output": {"choices": [
            {"finish_reason": "stop", "message": {"role": "assistant", "content": [{"text": text}]}}]}}
        return types.SimpleNamespace(status_code=200, headers={"content-type": "application/json"},
                                     json=lambda: payload)


def _guiowl_dash() -> tuple[dict[str, Any], Recorder]:
    """Owl15Agent on its runner's default engine (`--engine dash`: Alibaba's DashScope SDK) with only the network
    replaced: the SDK's HTTP session by `_DashSession`, and its upload of each local screenshot file (the SDK
    uploads a message's local file path to its object store and sends the `oss://` URL) by a stand-in that keeps
    the file's bytes, which the golden then holds as a data URL. The SDK's own message handling runs."""
    import dashscope  # the agent imports it inside predict; the same module object
    from dashscope.api_entities import http_request
    from dashscope.utils import oss_utils

    module = importlib.import_module("mm_agents.owl15_agent")
    recorder = Recorder({"llm": ANSWERS["gui-owl-1.5"]})
    uploaded: dict[str, bytes] = {}

    def upload(model: str, file_path: str, api_key: str | None = None, upload_certificate: Any = None,
               **kwargs: Any) -> tuple[str, dict[str, Any]]:
        key = "oss://recorded/" + os.path.basename(file_path)
        uploaded[key] = Path(file_path).read_bytes()
        return key, {}

    oss_utils.OssUtils.upload = upload  # type: ignore[method-assign,assignment]
    session = _DashSession(recorder)
    http_request._get_shared_sync_session = lambda: session  # type: ignore[attr-defined]
    # scripts/python/run_multienv_gui_owl15.py's defaults: --engine dash, --api_key "" (the SDK's key is unused here)
    args = dict(model="gui-owl-1.5", api_url="", api_key="recorder", history_n=5, action_space="pyautogui",
                observation_type="screenshot", max_trajectory_length=50, top_p=0.9, top_k=1, temperature=0.0,
                engine="dash", keep_full_response=0)
    agent = module.Owl15Agent(**args)
    agent.reset(logging.getLogger("goldens"))
    for step in range(1, STEPS + 1):
        agent.predict(INSTRUCTION, _obs(step))
    assert dashscope.api_key == "recorder"
    for n, (queue, body) in enumerate(recorder.bodies):  # the DashScope body as the server gets it, images as data
        messages = body["input"]["messages"]
        for message in messages:
            for part in message["content"]:
                if isinstance(part, dict) and str(part.get("image", "")).startswith("oss://recorded/"):
                    data = uploaded[part["image"]]
                    part["image"] = f"data:image/{_encoding(data)};base64," + base64.b64encode(data).decode()
        recorder.bodies[n] = (queue, {"model": body.get("model"), "messages": messages, **body.get("parameters", {})})
    return {"source": f"OSWorld mm_agents/owl15_agent.py (ljxpython/OSWorldUse {OSWORLD_COMMIT})",
            "runner": "scripts/python/run_multienv_gui_owl15.py (its default engine, dash: the DashScope SDK; "
                      "the SDK's HTTP session and upload recorded)", "api": "dashscope", "agent_args": args}, recorder


def _kimi() -> tuple[dict[str, Any], Recorder]:
    module = importlib.import_module("mm_agents.kimi.kimi_agent")
    recorder = Recorder({"llm": ANSWERS["kimi-k2.5"]})
    module.httpx.post = recorder.post(lambda body: "llm")  # type: ignore[attr-defined]
    os.environ.setdefault("KIMI_API_KEY", "none")
    args = dict(model="kimi-k2.5", max_steps=100, max_tokens=4096, top_p=0.95, temperature=1.0,
                action_space="pyautogui", observation_type="screenshot", screen_size=SCREEN,
                coordinate_type="relative", max_image_history_length=3, thinking=False,
                password="osworld-public-evaluation")
    agent = module.KimiAgent(**args)
    agent.reset(logging.getLogger("goldens"))
    for step in range(1, STEPS + 1):
        agent.predict(INSTRUCTION, _obs(step))
    return {"source": f"OSWorld mm_agents/kimi/kimi_agent.py (ljxpython/OSWorldUse {OSWORLD_COMMIT})",
            "runner": "scripts/python/run_multienv_kimi_k25.py", "agent_args": _jsonable(args)}, recorder


def _jedi(size: str = "7B") -> tuple[dict[str, Any], Recorder]:
    """`JediAgent7B` or `JediAgent3B` (`size`) at its own defaults, its planner and executor requests recorded."""
    name = size.lower()
    module = importlib.import_module(f"mm_agents.jedi_{name}_agent")
    recorder = Recorder({"planner": JEDI_PLANNER, "grounder": JEDI_GROUNDER})
    module.requests.post = recorder.post(  # type: ignore[attr-defined]
        lambda body: "grounder" if body["model"].startswith("jedi") else "planner")
    args = dict(platform="ubuntu", planner_model="gpt-4o", executor_model=f"jedi-{name}", max_tokens=1500, top_p=0.9,
                temperature=0.5, action_space="pyautogui", observation_type="screenshot", max_steps=15)
    agent = getattr(module, f"JediAgent{size}")(**args)
    agent.reset(logging.getLogger("goldens"))
    for step in range(1, STEPS + 1):
        agent.predict(INSTRUCTION, _obs(step))
    return {"source": f"OSWorld mm_agents/jedi_{name}_agent.py (ljxpython/OSWorldUse {OSWORLD_COMMIT})",
            "runner": f"JediAgent{size}'s own defaults (OSWorld has no runner script for it)", "agent_args": args}, \
        recorder


HOLO2_NOTEBOOK = "holo2/holo_2_localization_hosted_api.ipynb"


def _holo2(cookbook: Path) -> tuple[dict[str, Any], Recorder]:
    """The hosted-API notebook's code cells run as written, in a copy of the cookbook whose example image (a data
    file, `data/calendar_example.jpg`) is the step's screenshot: its preparation cell opens and resizes it, its
    request cell builds the messages and calls the client. Left out: the pip cell and the API-key cells (the key
    is set); `IPython.display` is a no-op; `openai.OpenAI` is the recorder (the network). For the targets after
    the first, `task` is set after the preparation cell (whose own target is the first)."""
    import openai

    nb = json.loads((cookbook / HOLO2_NOTEBOOK).read_text(encoding="utf-8"))
    cells = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    recorder = Recorder({"llm": ANSWERS["holo2"]})
    copy_root = Path(tempfile.mkdtemp(prefix="hai-cookbook-")) / "hai-cookbook"
    import shutil

    shutil.copytree(cookbook, copy_root)
    display = types.ModuleType("IPython.display")
    display.display = lambda *a, **k: None  # type: ignore[attr-defined]
    sys.modules.update({"IPython": types.ModuleType("IPython"), "IPython.display": display})
    module = types.ModuleType("holo_2_localization_hosted_api")  # pydantic resolves annotations through it
    sys.modules[module.__name__] = module
    space = module.__dict__
    saved_openai = openai.OpenAI
    openai.OpenAI = recorder.openai_class("llm")  # type: ignore[misc]  # the request cell imports it from here
    prepare = next(c for c in cells if "image_path" in c)
    request = next(c for c in cells if "chat.completions.create" in c)
    try:
        with contextlib.chdir(copy_root / "holo2"):  # the notebook finds the cookbook's root from its own folder
            for cell in cells:
                if cell is prepare or cell is request or cell.lstrip().startswith("!") or "API_KEY" in cell:
                    continue
                exec(compile(cell, HOLO2_NOTEBOOK, "exec"), space)
            space["API_KEY"] = "recorder"
            for step, target in enumerate(HOLO2_TARGETS, start=1):
                (copy_root / "data" / "calendar_example.jpg").write_bytes(screenshot(step))
                exec(compile(prepare, HOLO2_NOTEBOOK, "exec"), space)
                if step > 1:
                    space["task"] = target
                with contextlib.redirect_stdout(io.StringIO()):  # rich.print of the click
                    exec(compile(request, HOLO2_NOTEBOOK, "exec"), space)
    finally:
        openai.OpenAI = saved_openai  # type: ignore[misc]
        shutil.rmtree(copy_root.parent, ignore_errors=True)
    assert [b["messages"][0]["content"][1]["text"].rsplit("\n", 1)[1] for _, b in recorder.bodies] == HOLO2_TARGETS
    return {"source": f"hcompai/hai-cookbook {HOLO2_NOTEBOOK} ({COOKBOOK_COMMIT})",
            "runner": "the notebook's code cells as written (its example image file the episode's screenshot)",
            "agent_args": {"targets": HOLO2_TARGETS}}, recorder


def _jsonable(args: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(args, default=list))


MAIUI_COMMIT = "4dd07b9e910a294f001452e888514d912b96cc41"


def _maiui(root: Path) -> tuple[dict[str, Any], Recorder]:
    """`MAIUINaivigationAgent` (Tongyi-MAI/MAI-UI `src/`) as its README's quick start builds it (the runtime_conf it
    shows is the agent's own default), only its network replaced: the module's `OpenAI` client class is the
    recorder (a stand-in `openai` module lets it import where the package is not installed)."""
    if importlib.util.find_spec("openai") is None:
        sys.modules["openai"] = types.ModuleType("openai")
        sys.modules["openai"].OpenAI = None  # type: ignore[attr-defined]  # replaced below before any use
    recorder = Recorder({"llm": ANSWERS["mai-ui"]})
    with _osworld_on_path(root / "src"):
        module = importlib.import_module("mai_naivigation_agent")
        module.OpenAI = recorder.openai_class("llm")  # type: ignore[attr-defined]
        args = dict(llm_base_url="http://recorder/v1", model_name="MAI-UI-8B",
                    runtime_conf={"history_n": 3, "temperature": 0.0, "top_k": -1, "top_p": 1.0, "max_tokens": 2048})
        agent = module.MAIUINaivigationAgent(**args)
        with contextlib.redirect_stdout(io.StringIO()):  # the agent prints every request and answer
            for step in range(1, STEPS + 1):
                _, action = agent.predict(INSTRUCTION, {"screenshot": screenshot(step)})
                assert action.get("action"), (step, action)
    return {"source": f"Tongyi-MAI/MAI-UI src/mai_naivigation_agent.py ({MAIUI_COMMIT})",
            "runner": "the README's quick start (MAIUINaivigationAgent, its default runtime_conf)",
            "agent_args": args}, recorder


VENUS_COMMIT = "c3a1442c3c4501af18c124458dbbddcbda5c2c6f"


def _venus(root: Path) -> tuple[dict[str, Any], Recorder]:
    """The Venus framework's processor, policy and runtime context (inclusionAI/UI-Venus `Venus_framework/`) as
    `app/run_handler.py`'s `RunHandler.run` calls them each step (`handle_client_req`, then the history update
    after the action: `history.append`, `update_action_description`, `update_history`), with its
    `config/ui_venus_single.yaml` parameters; only the policy module's `requests.post` is the recorder (the
    handler's device is adb, which the episode replaces by the screenshots: its calls are made here in its order)."""
    recorder = Recorder({"llm": ANSWERS["ui-venus-1.5"]})

    def post(url: str, data: str = "", **kwargs: Any) -> Any:  # the framework posts json.dumps(body) as data
        text = recorder.answer("llm", json.loads(data))
        payload = {"choices": [{"finish_reason": "stop", "message": {"role": "assistant", "content": text}}]}
        return types.SimpleNamespace(status_code=200, raise_for_status=lambda: None, json=lambda: payload)

    with _osworld_on_path(root / "Venus_framework"):
        policy_module = importlib.import_module("policy.ui_venus_policy")
        processor_module = importlib.import_module("processor.uivenus_processor")
        context_module = importlib.import_module("app.runtime_context")
        policy_module.requests.post = post  # type: ignore[attr-defined]
        params = {"model_host": "http://recorder", "model_port": 8000, "model_name": "model", "temperature": 0.0}
        context = context_module.RuntimeContext()
        processor = processor_module.UIVenusProcessor()
        policy = policy_module.UIVenusPolicy(context, **params)
        for step in range(1, STEPS + 1):
            context.step = step
            req = {"screenshot_str": base64.b64encode(screenshot(step)).decode(), "purpose": INSTRUCTION}
            state = processor.process(req, context.step, context.history)
            action, pred_action, _, _, _ = policy.get_next_action(state)
            assert action and action.get("action_type") not in (None, "CallUser", "SUCCESS"), (step, action)
            context.history.append({"state": state, "action": action})
            context.update_action_description(state, action, pred_action)
            context.update_history("action_description", context.action_description[-1])
    return {"source": f"inclusionAI/UI-Venus Venus_framework/ ({VENUS_COMMIT})",
            "runner": "app/run_handler.py RunHandler.run's calls in its order, config/ui_venus_single.yaml",
            "agent_args": params}, recorder


def venus_prompts(root: Path) -> dict[str, tuple[str, str]]:
    """UI-Venus's stored prompt file from the framework's own module: file -> (text, where it is)."""
    with _osworld_on_path(root / "Venus_framework"):
        module = importlib.import_module("processor.uivenus_processor")
        return {"instruction.txt": (module.USER_PROMPT, "Venus_framework/processor/uivenus_processor.py USER_PROMPT")}


def maiui_prompts(root: Path) -> dict[str, tuple[str, str]]:
    """MAI-UI's stored prompt files from its own module: file -> (text, where it is)."""
    with _osworld_on_path(root / "src"):
        prompt = importlib.import_module("prompt")
        return {"system.txt": (prompt.MAI_MOBILE_SYS_PROMPT, "src/prompt.py MAI_MOBILE_SYS_PROMPT")}


def build(preset: str, osworld: Path, cookbook: Path | None, maiui: Path | None = None,
          venus: Path | None = None) -> dict[str, Any]:
    """Run one agent over the episode; the golden (its source, the runner's arguments, every request)."""
    with tempfile.TemporaryDirectory() as tmp, contextlib.chdir(tmp), _osworld_on_path(osworld):
        if preset == "ui-venus-1.5":
            if venus is None:
                raise SystemExit("ui-venus-1.5 needs --venus")
            meta, recorder = _venus(venus)
        elif preset == "mai-ui":
            if maiui is None:
                raise SystemExit("mai-ui needs --maiui")
            meta, recorder = _maiui(maiui)
        elif preset == "holo2":
            if cookbook is None:
                raise SystemExit("holo2 needs --cookbook")
            meta, recorder = _holo2(cookbook)
        else:
            run = {"evocua": lambda: _evocua("S2"), "evocua-s1": lambda: _evocua("S1"), "gui-owl-1.5": _guiowl_dash,
                   "gui-owl-1.5-openai": _guiowl, "kimi-k2.5": _kimi, "jedi-7b": _jedi,
                   "jedi-3b": lambda: _jedi("3B")}[preset]
            meta, recorder = run()
        requests = [{"call": queue, **request_record(body)} for queue, body in recorder.bodies]
    return {**meta, "preset": preset, "instruction": INSTRUCTION, "screen": list(SCREEN),
            "answers": ANSWERS[preset], "requests": requests}


PRESETS = ("evocua", "evocua-s1", "gui-owl-1.5", "gui-owl-1.5-openai", "kimi-k2.5", "jedi-7b", "jedi-3b", "holo2",
           "mai-ui", "ui-venus-1.5")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--osworld", type=Path, help="extracted OSWorld tree (holds mm_agents/; every preset but mai-ui)")
    ap.add_argument("--cookbook", type=Path, help="extracted hcompai/hai-cookbook tree (holds holo2/, utils/)")
    ap.add_argument("--maiui", type=Path, help=f"extracted Tongyi-MAI/MAI-UI tree at {MAIUI_COMMIT[:8]} (holds src/)")
    ap.add_argument("--venus", type=Path, help=f"extracted inclusionAI/UI-Venus tree at {VENUS_COMMIT[:8]} "
                    "(holds Venus_framework/)")
    ap.add_argument("presets", nargs="*", default=list(PRESETS), help=f"which (default: {', '.join(PRESETS)})")
    args = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    for preset in args.presets:
        if preset not in PRESETS:
            ap.error(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
        if preset not in ("mai-ui", "ui-venus-1.5") and args.osworld is None:
            ap.error(f"{preset} needs --osworld")
        golden = build(preset, (args.osworld or Path(".")).resolve(), args.cookbook.resolve() if args.cookbook else None,
                       args.maiui.resolve() if args.maiui else None, args.venus.resolve() if args.venus else None)
        path = OUT / f"{preset}.json"
        path.write_text(json.dumps(golden, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"{path.relative_to(OUT.parents[2])}: {len(golden['requests'])} requests")
    if args.maiui is not None:
        _own_sources("maiui", "Tongyi-MAI/MAI-UI", "src/", MAIUI_COMMIT, maiui_prompts(args.maiui.resolve()))
    if args.venus is not None:
        _own_sources("uivenus", "inclusionAI/UI-Venus", "Venus_framework/", VENUS_COMMIT,
                     venus_prompts(args.venus.resolve()))
    return 0


def _own_sources(family: str, repo: str, folder: str, commit: str, prompts: dict[str, tuple[str, str]]) -> None:
    """A family's prompt files' sums and official locations into `tests/data/goldens/prompt_sources.json` (made by
    `osworld_goldens.py` for OSWorld's and the cookbook's; MAI-UI's and UI-Venus's sources are their own
    repositories)."""
    path = OUT.parent / "goldens" / "prompt_sources.json"
    sums = json.loads(path.read_text(encoding="utf-8"))
    for file, (text, where) in prompts.items():
        sums["sha256"][f"{family}/{file}"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
        sums["locations"][f"{family}/{file}"] = f"{repo} @ {commit}: {where}"
    source = f"{repo} {folder} @ {commit} ({family}/)"
    if source not in sums["sources"]:
        sums["sources"].append(source)
    for key in ("sha256", "locations"):
        sums[key] = dict(sorted(sums[key].items()))
    path.write_text(json.dumps(sums, indent=1) + "\n", encoding="utf-8")
    print(f"{path.relative_to(OUT.parents[2])}: {family}'s prompt sums")


if __name__ == "__main__":
    sys.exit(main())
