"""Golden conversations from OSWorld's own agents, for `tests/policies/test_conversation_golden.py`.

    python -m scripts.build.osworld_goldens /path/to/OSWorld-checkout [--commit SHA] [--hai-cookbook PATH]

Runs the message building of `mm_agents/uitars15_v1.py`, `mm_agents/opencua/opencua_agent.py`,
`mm_agents/qwen3vl_agent.py` and `mm_agents/qwen25vl_agent.py` (read from the checkout at `--commit` with `git show`, never copied into Conway)
over one fixed 6-step episode, offline: their network clients and loggers are replaced by STAND-INS that
record the messages and answer with the episode's scripted answers (no model is asked). Each screenshot is
written as `<image k>` (the step it was taken at, told by its colour) and the instruction as `<instruction>`,
so a test can put Conway's messages in the same form and compare them whole.

The grounding models' requests are stateless (one screenshot, one description): GTA1's is the
`request_vllm` function inside `GTA1Agent.predict` (`mm_agents/gta1/gta1_agent.py`), taken out of the
source with `ast` and run as written; Holo1.5's is `build_messages` of the hcompai/hai-cookbook notebook
`holo1_5/openai_client/invoke_localization.ipynb` (its code cells' definitions, run as written, from a
checkout of the cookbook given with `--hai-cookbook`). Two steps each: the second shows no history.

Conway slides its history by half (`conway/history.py`) where the agents drop one screenshot per step; for
each step the agent is run with the history length Conway holds at that step (`conway_images`), so the
golden says what the agent sends with exactly Conway's number of screenshots.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

from PIL import Image

OUT = Path(__file__).resolve().parents[2] / "tests" / "data" / "conversations"
DEFAULT_COMMIT = "b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6"
INSTRUCTION = "<instruction>"
SIZE = (1280, 800)
COLOURS = [(200, 30, 30), (30, 200, 30), (30, 30, 200), (200, 200, 30), (30, 200, 200), (200, 30, 200)]
"""The episode's six screenshots: one flat colour each, so an image's step is read back from its pixels."""

ANSWERS: dict[str, list[str]] = {
    "uitars": [
        "Thought: The Files icon is on the left.\nAction: click(start_box='(120,340)')",
        "Thought: A window opened; I type the name.\nAction: type(content='report\\n')",
        "Thought: Scroll down to the list.\nAction: scroll(start_box='(640,400)', direction='down')",
        "Thought: Drag the file to the folder.\nAction: drag(start_box='(300,420)', end_box='(900,420)')",
        "Thought: Save it.\nAction: hotkey(key='ctrl s')",
        "Thought: Wait for the dialog.\nAction: wait()",
    ],
    "opencua": [
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
    ],
    "qwen3vl": [
        'Action: Click the Files icon.\n<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", '
        '"coordinate": [94, 425]}}\n</tool_call>',
        'Action: Type the name.\n<tool_call>\n{"name": "computer_use", "arguments": {"action": "type", '
        '"text": "report"}}\n</tool_call>',
        'Action: Scroll down the list.\n<tool_call>\n{"name": "computer_use", "arguments": {"action": "scroll", '
        '"pixels": -5}}\n</tool_call>',
        'Action: Double-click the report.\n<tool_call>\n{"name": "computer_use", "arguments": {"action": '
        '"double_click", "coordinate": [234, 525]}}\n</tool_call>',
        'Action: Save it.\n<tool_call>\n{"name": "computer_use", "arguments": {"action": "key", "keys": ["ctrl", '
        '"s"]}}\n</tool_call>',
        'Action: Wait for the dialog.\n<tool_call>\n{"name": "computer_use", "arguments": {"action": "wait", '
        '"time": 2}}\n</tool_call>',
    ],
    "qwen25vl": [
        'Action: Click the Files icon.\n<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", '
        '"coordinate": [120, 340]}}\n</tool_call>',
        'I will type the name.\n<tool_call>\n{"name": "computer_use", "arguments": {"action": "type", '
        '"text": "report"}}\n</tool_call>',
        '<tool_call>\n{"name": "computer_use", "arguments": {"action": "scroll", "pixels": -5}}\n</tool_call>',
        'Action: Double-click the report.\n<tool_call>\n{"name": "computer_use", "arguments": {"action": '
        '"double_click", "coordinate": [300, 420]}}\n</tool_call>',
        '<tool_call>\n{"name": "computer_use", "arguments": {"action": "key", "keys": ["ctrl", "s"]}}\n</tool_call>',
        'Now I wait for the dialog.\n<tool_call>\n{"name": "computer_use", "arguments": {"action": "wait", '
        '"time": 2}}\n</tool_call>',
    ],
}
"""Each family's scripted answers, one a step; every one holds a valid action, so Conway replays them all."""

GROUNDING_ANSWERS = {"gta1": ["(120,340)", "(300,420)"],
                     "holo": ['{"action": "click_absolute", "x": 120, "y": 340}',
                              '{"action": "click_absolute", "x": 300, "y": 420}']}
"""The grounding models' answers, one a step (each a click)."""
HOLO_COMMIT = "2ba89619bdcfe729d31649d976bdaa7b9551e216"

SOURCES = {"uitars": "mm_agents/uitars15_v1.py", "opencua": "mm_agents/opencua/opencua_agent.py",
           "qwen3vl": "mm_agents/qwen3vl_agent.py", "qwen25vl": "mm_agents/qwen25vl_agent.py"}
HISTORY = {"uitars": 5, "opencua": 3, "qwen3vl": 5, "qwen25vl": 5}
"""Each family's screenshots in one request (Conway's `Conversation.history_images`, the agents' defaults)."""


def conway_images(step: int, images: int) -> int:
    """Screenshots Conway sends at `step` (1-based): past ones kept by its half slide, plus the current one."""
    cap, kept = images - 1, 0
    for _ in range(step - 1):
        kept += 1
        if kept > cap:
            kept = max(1, cap // 2) if cap else 0
    return kept + 1


def screenshot(step: int) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", SIZE, COLOURS[step - 1]).save(buf, format="PNG")
    return buf.getvalue()


def image_step(data: bytes) -> int:
    """Which step's screenshot `data` is (by its centre pixel's colour)."""
    img = Image.open(io.BytesIO(data)).convert("RGB")
    pixel = img.getpixel((img.width // 2, img.height // 2))
    return min(range(len(COLOURS)), key=lambda i: sum(abs(a - b) for a, b in zip(COLOURS[i], pixel))) + 1  # type: ignore[arg-type]


def normalized(messages: Any) -> Any:
    """Images as `<image k>`; everything else as sent."""
    if isinstance(messages, list):
        return [normalized(m) for m in messages]
    if isinstance(messages, dict):
        if messages.get("type") == "image_url":
            url = messages["image_url"]["url"]
            return {"type": "image_url", "image_url": f"<image {image_step(base64.b64decode(url.split(',', 1)[1]))}>"}
        return {k: normalized(v) for k, v in messages.items()}
    return messages


# --- stand-ins for the agents' network clients and loggers (no model is asked) ---------------------------


def _stand_ins() -> None:
    def module(name: str, **attrs: Any) -> None:
        mod = types.ModuleType(name)
        mod.__dict__.update(attrs)
        sys.modules[name] = mod

    class Anything:
        def __init__(self, *a: Any, **k: Any) -> None:
            pass

        def __getattr__(self, name: str) -> Any:
            return lambda *a, **k: None

    logger = Anything()
    module("loguru", logger=logger)
    module("openai", OpenAI=Anything, RateLimitError=Exception, BadRequestError=Exception,
           InternalServerError=Exception, APIConnectionError=Exception, APIError=Exception)
    module("httpx", post=None)
    module("backoff", on_exception=lambda *a, **k: (lambda fn: fn), constant=None, expo=None)
    module("dashscope", MultiModalConversation=Anything)
    module("google")
    module("google.api_core")
    module("google.api_core.exceptions", InvalidArgument=Exception, ResourceExhausted=Exception,
           InternalServerError=Exception, BadRequest=Exception)
    module("pytesseract", Output=Anything, image_to_data=None)
    module("cv2", imencode=_png_of_array)  # the GTA1 agent encodes its screenshot with OpenCV
    module("mm_agents.accessibility_tree_wrap")
    module("mm_agents.accessibility_tree_wrap.heuristic_retrieve", filter_nodes=lambda *a, **k: [])


def _png_of_array(ext: str, array: Any) -> tuple[bool, Any]:
    """STAND-IN for `cv2.imencode('.png', array)` (PNG bytes as a numpy buffer), by Pillow."""
    import numpy as np

    buf = io.BytesIO()
    Image.fromarray(array).save(buf, format="PNG")
    return True, np.frombuffer(buf.getvalue(), dtype=np.uint8)


def _checkout(repo: Path, commit: str, into: Path) -> None:
    """The agents' files at `commit`, as a package under `into` (read with git show)."""
    files = ["mm_agents/uitars15_v1.py", "mm_agents/opencua/__init__.py", "mm_agents/opencua/opencua_agent.py",
             "mm_agents/opencua/prompts.py", "mm_agents/opencua/utils.py", "mm_agents/qwen3vl_agent.py",
             "mm_agents/qwen25vl_agent.py", "mm_agents/utils/qwen_vl_utils.py",
             "mm_agents/gta1/gta1_agent.py", "mm_agents/prompts.py"]
    for name in files:
        text = subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{name}"], check=True, capture_output=True,
                              text=True).stdout
        path = into / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for pkg in ("mm_agents", "mm_agents/utils", "mm_agents/gta1"):
        (into / pkg / "__init__.py").touch()


def _episode(family: str, make: Any, predict: Any) -> list[Any]:
    """For each step: the messages the agent sends, run with Conway's number of screenshots at that step."""
    steps = []
    for step in range(1, 7):
        agent = make(conway_images(step, HISTORY[family]))
        sent: list[Any] = []
        for k in range(1, step + 1):
            sent.clear()
            with contextlib.redirect_stdout(io.StringIO()):  # the agents print every answer
                predict(agent, k, sent)
        steps.append({"step": step, "images": conway_images(step, HISTORY[family]),
                      "messages": normalized(sent[-1])})
    return steps


def uitars() -> list[Any]:
    from mm_agents import uitars15_v1 as mod

    def make(n: int) -> Any:
        os.environ.setdefault("DOUBAO_API_URL", "http://stand-in")
        os.environ.setdefault("DOUBAO_API_KEY", "stand-in")
        conf = {"infer_mode": "qwen25vl_normal", "prompt_style": "qwen25vl_normal", "input_swap": True,
                "language": "English", "history_n": n, "max_pixels": 16384 * 28 * 28, "min_pixels": 100 * 28 * 28,
                "callusr_tolerance": 3, "temperature": 0.0, "top_k": -1, "top_p": 0.9, "max_tokens": 1000}
        return mod.UITARSAgent(model="stand-in", runtime_conf=conf, max_trajectory_length=50)

    def predict(agent: Any, k: int, sent: list[Any]) -> None:
        class Completions:
            def create(self, *, messages: Any, **kw: Any) -> Any:
                sent.append(json.loads(json.dumps(messages)))
                msg = types.SimpleNamespace(content=ANSWERS["uitars"][k - 1])
                return types.SimpleNamespace(choices=[types.SimpleNamespace(message=msg)])
        agent.vlm = types.SimpleNamespace(chat=types.SimpleNamespace(completions=Completions()))
        agent.predict(INSTRUCTION, {"screenshot": screenshot(k), "accessibility_tree": None})

    return _episode("uitars", make, predict)


def opencua() -> list[Any]:
    from mm_agents.opencua import opencua_agent as mod

    def make(n: int) -> Any:
        agent = mod.OpenCUAAgent(model="stand-in", history_type="action_history", max_steps=50,
                                 max_image_history_length=n, cot_level="l2", screen_size=SIZE,
                                 coordinate_type="qwen25", use_old_sys_prompt=True)
        agent.system_prompt = "<system>"  # Conway's is the training data's L2 (test_prompts.py holds it)
        return agent

    def predict(agent: Any, k: int, sent: list[Any]) -> None:
        def call_llm(payload: Any, model: Any) -> str:
            sent.append(json.loads(json.dumps(payload["messages"])))
            return ANSWERS["opencua"][k - 1]
        agent.call_llm = call_llm
        agent.predict(INSTRUCTION, {"screenshot": screenshot(k)})

    return _episode("opencua", make, predict)


def qwen3vl() -> list[Any]:
    import logging

    from mm_agents import qwen3vl_agent as mod

    mod.logger = logging.getLogger("stand-in")  # the agent's module logger is set by its runner
    def make(n: int) -> Any:
        return mod.Qwen3VLAgent(history_n=n - 1, coordinate_type="relative", api_backend="openai")

    def predict(agent: Any, k: int, sent: list[Any]) -> None:
        def call_llm(payload: Any, model: Any) -> str:
            messages = json.loads(json.dumps(payload["messages"]))
            messages[0]["content"][0]["text"] = "<system>"  # Conway's: its stored prompt (test_prompts.py)
            sent.append(messages)
            return ANSWERS["qwen3vl"][k - 1]
        agent.call_llm = call_llm
        agent.predict(INSTRUCTION, {"screenshot": screenshot(k)})

    return _episode("qwen3vl", make, predict)


def qwen25vl() -> list[Any]:
    import logging

    from mm_agents import qwen25vl_agent as mod

    mod.logger = logging.getLogger("stand-in")  # set by its runner (`reset`)

    def make(n: int) -> Any:
        return mod.Qwen25VLAgent(history_n=n - 1)

    def predict(agent: Any, k: int, sent: list[Any]) -> None:
        def call_llm(payload: Any, model: Any) -> str:
            messages = json.loads(json.dumps(payload["messages"]))
            messages[0]["content"][0]["text"] = "<system>"  # Conway's: the cookbook's tool (test_presets.py)
            sent.append(messages)
            return ANSWERS["qwen25vl"][k - 1]
        agent.call_llm = call_llm
        agent.predict(INSTRUCTION, {"screenshot": screenshot(k)})

    return _episode("qwen25vl", make, predict)


def _grounding_steps(family: str, request: Any) -> list[Any]:
    steps = []
    for step in (1, 2):
        sent: list[Any] = []
        request(step, sent)
        steps.append({"step": step, "images": 1, "messages": normalized(sent[-1])})
    return steps


def gta1() -> list[Any]:
    import ast
    import textwrap

    os.environ.setdefault("OPENAI_API_KEY", "stand-in")  # the module builds its planner engines when imported
    from mm_agents.gta1 import gta1_agent as mod

    source = Path(mod.__file__).read_text(encoding="utf-8")
    found = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef) and n.name == "request_vllm")
    code = textwrap.dedent("\n".join(source.splitlines()[found.lineno - 1:found.end_lineno]))
    space = dict(mod.__dict__)
    exec(compile(code, mod.__file__, "exec"), space)  # the agent's own function, as written

    def request(step: int, sent: list[Any]) -> None:
        class Client:
            def __init__(self, **kw: Any) -> None:
                self.chat = types.SimpleNamespace(completions=self)

            def create(self, *, messages: Any, **kw: Any) -> Any:
                sent.append(json.loads(json.dumps(messages)))
                msg = types.SimpleNamespace(content=GROUNDING_ANSWERS["gta1"][step - 1])
                return types.SimpleNamespace(choices=[types.SimpleNamespace(message=msg)])
        space["OpenAI"] = Client
        space["request_vllm"](screenshot(step), INSTRUCTION)

    return _grounding_steps("gta1", request)


def holo(cookbook: Path) -> list[Any]:
    notebook = subprocess.run(["git", "-C", str(cookbook), "show",
                               f"{HOLO_COMMIT}:holo1_5/openai_client/invoke_localization.ipynb"],
                              check=True, capture_output=True, text=True).stdout
    utils = subprocess.run(["git", "-C", str(cookbook), "show", f"{HOLO_COMMIT}:utils/image.py"], check=True,
                           capture_output=True, text=True).stdout
    notebook_mod = types.ModuleType("invoke_localization")  # pydantic resolves the model's annotations through it
    sys.modules[notebook_mod.__name__] = notebook_mod
    space = notebook_mod.__dict__
    utils_mod = types.ModuleType("utils.image")
    exec(compile(utils, "utils/image.py", "exec"), utils_mod.__dict__)
    sys.modules["utils"] = types.ModuleType("utils")
    sys.modules["utils.image"] = utils_mod
    sys.modules["IPython"] = types.ModuleType("IPython")
    sys.modules["IPython.display"] = types.ModuleType("IPython.display")
    sys.modules["IPython.display"].display = None  # type: ignore[attr-defined]  # the notebook shows images with it
    cells = ["".join(c["source"]) for c in json.loads(notebook)["cells"] if c["cell_type"] == "code"]
    defining = [c for c in cells if "def build_messages" in c or c.startswith("from typing")]
    for cell in defining:  # the imports and the definitions of the prompt and its message building, as written
        exec(compile(cell, "invoke_localization.ipynb", "exec"), space)

    def request(step: int, sent: list[Any]) -> None:
        image = Image.open(io.BytesIO(screenshot(step)))
        h, w = utils_mod.smart_resize(height=image.height, width=image.width)
        sent.append(space["build_messages"](task=INSTRUCTION, image=image.resize((w, h)), image_format="JPEG"))

    return _grounding_steps("holo", request)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("osworld", type=Path, help="a git checkout of OSWorld (or its upstream-identical copy)")
    ap.add_argument("--commit", default=DEFAULT_COMMIT)
    ap.add_argument("--hai-cookbook", type=Path, help=f"a git checkout of hcompai/hai-cookbook (holds {HOLO_COMMIT})")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        _checkout(args.osworld, args.commit, Path(tmp))
        sys.path.insert(0, tmp)
        os.chdir(tmp)  # the Qwen3-VL agent writes a debug copy of its messages under ./draft/
        _stand_ins()
        OUT.mkdir(parents=True, exist_ok=True)
        for family, run in (("uitars", uitars), ("opencua", opencua), ("qwen3vl", qwen3vl),
                            ("qwen25vl", qwen25vl)):
            golden = {"source": f"ljxpython/OSWorldUse {SOURCES[family]} @ {args.commit} (upstream-identical copy "
                                "of xlang-ai/OSWorld)",
                      "made_by": "scripts/build/osworld_goldens.py", "answers": ANSWERS[family], "steps": run()}
            path = OUT / f"{family}.json"
            path.write_text(json.dumps(golden, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            print(f"{path}: {len(golden['steps'])} steps")
        grounding = [("gta1", f"ljxpython/OSWorldUse mm_agents/gta1/gta1_agent.py (request_vllm) @ {args.commit} "
                              "(upstream-identical copy of xlang-ai/OSWorld)", gta1)]
        if args.hai_cookbook is not None:
            grounding.append(("holo", "hcompai/hai-cookbook holo1_5/openai_client/invoke_localization.ipynb "
                                      f"(build_messages) @ {HOLO_COMMIT}", lambda: holo(args.hai_cookbook)))
        for family, source, make in grounding:
            golden = {"source": source, "made_by": "scripts/build/osworld_goldens.py",
                      "answers": GROUNDING_ANSWERS[family], "steps": make()}
            path = OUT / f"{family}.json"
            path.write_text(json.dumps(golden, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            print(f"{path}: {len(golden['steps'])} steps")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
