"""Every shipped preset, as `conway run policy=<name>` builds it, asks its model as its source does and reads a
sample answer from that source into the right screen point.

Per preset: the config is loaded and the policy built (factory, family defaults), one decision is made on a real
PNG of a fixed screen size against a scripted OpenAI-compatible server (the point of the fake: to record the
request and play back the sample answer), and the request and the resulting click are checked against numbers
worked out with the source's own formulas (resize, coordinate mapping), not with Conway's code:

- the screenshot in the request has the size the source's resize gives (OSWorld's `qwen_vl_utils.smart_resize`,
  UI-TARS' and hai-cookbook's copies, run offline on these screen sizes);
- the stored trained prompt is in the request, the image size filled in where the source fills it;
- `max_tokens` and `temperature` are the family's (its source's);
- the sample answer lands on the input point the source's own mapping gives.
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass
from pathlib import Path

import pytest
from fixtures.scripted_server import Reply, ScriptedFakeServer
from helpers.prompt_frames import prompt_text
from PIL import Image

from conway.config import load_config
from conway.errors import UserError
from conway.geometry import ScreenGeometry, captured_to_input
from conway.policies.factory import build_model_policy
from conway.policies.families import MOCK
from conway.protocols import ContextPart, DecisionContext, Observation
from conway.store.home import resolve_home

REPO = Path(__file__).resolve().parents[2]
TYPES = ["click", "double_click", "triple_click", "right_click", "move", "drag", "type", "key", "hotkey", "scroll",
         "wait", "finish"]

UITARS_README = "Thought: Click the button\nAction: click(point='<point>200 300</point>')"
"""The `ui-tars` package's README example answer (ui-tars 0.5.1, the package README's "Parse output into structured actions")."""


@dataclass(frozen=True)
class Case:
    screen: tuple[int, int]
    sent: tuple[int, int]
    """(w, h) the source's resize gives for `screen`."""
    prompt: tuple[str, ...]
    """Texts of the source's prompt that the request must hold, whole."""
    answer: str
    point: tuple[int, int]
    """The input point the source's own mapping gives for `answer` on `screen`."""
    max_tokens: int | None
    """What the runner sends as max_tokens (None: none, the server's default)."""
    extra: tuple[str, ...] = ()
    temperature: float | None = 0.0
    """What the runner samples at (None: the agent sends no temperature)."""
    image: tuple[int, int] | None = None
    """(w, h) of the screenshot sent when not `sent`: the agent sends it as captured and the server's processor
    rounds it to `sent`, the size the answers are in."""


def _uitars_head(action_space: str) -> str:
    head = prompt_text("uitars/user_thought.txt").split("## User Instruction", 1)[0]
    return head.replace("{action_space}", prompt_text(action_space)).replace("{language}", "Chinese").strip()  # the runner's


CASES: dict[str, Case] = {
    # smart_resize(1080, 1920, 28, 100*28*28, 16384*28*28) = (1092, 1932); the README answer through the ui-tars
    # package (model_type qwen25vl): start_box [200/1932, 300/1092] of the screen -> (198.76, 296.70)
    "uitars-1.5-7b": Case((1920, 1080), (1932, 1092), (_uitars_head("uitars/action_space_normal.txt"),),
                          UITARS_README, (199, 297), 1000, image=(1920, 1080)),
    # UI-TARS 1.0: OSWorld's uitars_agent.py keeps 1920x1080 (under its 2116800 px); 28-px rounding as the server's
    # processor does; parse_action_qwen2vl divides by 1000: (200, 300) -> (384, 324)
    "uitars": Case((1920, 1080), (1932, 1092), (_uitars_head("uitars/action_space_call_user.txt"),),
                   UITARS_README, (384, 324), 1500, temperature=1.0, image=(1920, 1080)),  # run_multienv_uitars.py
    # OpenCUA qwen25 coordinates: OSWorld's own parse_response_to_cot_and_action (opencua_agent.py), run offline on
    # this answer at 1920x1080, gives pyautogui.click(1434, 339)
    "opencua-7b": Case((1920, 1080), (1932, 1092), (prompt_text("opencua/system_l2.txt"),),
                       "## Thought:\nThe File menu opens the dialog.\n\n## Action:\nClick the File menu.\n\n"
                       "## Code:\n```python\npyautogui.click(x=1443, y=343)\n```", (1434, 339), 2048, image=(1920, 1080)),
    "opencua-32b": Case((1920, 1080), (1932, 1092), (prompt_text("opencua/system_l2.txt"),),
                        "## Thought:\nThe File menu opens the dialog.\n\n## Action:\nClick the File menu.\n\n"
                        "## Code:\n```python\npyautogui.click(x=1443, y=343)\n```", (1434, 339), 2048, image=(1920, 1080)),
    # Qwen2.5-VL: OSWorld's qwen25vl_agent.py resizes to at most 1,003,520 px (1316x728) and scales the answer's
    # pixels by captured / processed: int(658 * 1920 / 1316), int(364 * 1080 / 728) = (960, 540)
    "qwen2.5-vl": Case((1920, 1080), (1316, 728),
                       ("You are a helpful assistant\n\n# Tools\n\nYou may call one or more functions",
                        '"description": "Use a mouse and keyboard to interact with a computer, and take screenshots."',
                        "return a json object with function name and arguments within <tool_call></tool_call>"),
                       '<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", '
                       '"coordinate": [658, 364]}}\n</tool_call>', (960, 540), 1500,
                       temperature=1.0),  # run_multienv_qwen25vl.py
    # Qwen3-VL: factor 32 -> 1920x1088; OSWorld's qwen3vl_agent.py scales 500 * 1920 / 999, 500 * 1080 / 999 =
    # (960.96, 540.54) and truncates to (960, 540); Conway rounds to the nearest pixel
    "qwen3-vl": Case((1920, 1080), (1920, 1088), ("* The screen's resolution is 1000x1000.", "# Response format"),
                     'Action: Click the Display entry in the sidebar.\n<tool_call>\n{"name": "computer_use", '
                     '"arguments": {"action": "left_click", "coordinate": [500, 500]}}\n</tool_call>', (961, 541),
                     32768, temperature=None),  # run_multienv_qwen3vl.py; qwen3vl_agent.py sends no temperature
    # GTA1: the agent's request_vllm: x / W * 1920 with W, H the smart-resized size it states -> round(1005.7, 497.5)
    "gta1": Case((1920, 1080), (1932, 1092),
                 ("The image resolution is height 1092 and width 1932. For elements with area, return the center "
                  "point.\n\nOutput the coordinate pair exactly:\n(x,y)",), "(1012,503)", (1006, 497), 100, image=(1920, 1080)),
    # Holo1.5: the cookbook's own example: calendar_example.jpg (1710x852) resized to 1400x700 (the size of the
    # image its notebook shows), answered ClickAbsoluteAction(x=342, y=345): on the screen 342*1710/1400, 345*852/700
    "holo1.5": Case((1710, 852), (1400, 700), (prompt_text("holo/localization.txt"),),
                    '{"action": "click_absolute", "x": 342, "y": 345}', (418, 420), None),
    # EvoCUA S2: factor 32 (process_image) -> 1920x1088; _parse_response_s2 scales 500 * 1920 / 999, 500 * 1080 / 999
    # and truncates to (960, 540); Conway rounds to the nearest pixel
    "evocua": Case((1920, 1080), (1920, 1088), ("* The screen's resolution is 1000x1000.",
                                                "Rules:\n- Output exactly in the order: Action, <tool_call>."),
                   'Action: Click the Display entry.\n<tool_call>\n{"name": "computer_use", "arguments": {"action": '
                   '"left_click", "coordinate": [500, 500]}}\n</tool_call>', (961, 541), 32768),
    # EvoCUA S1 (--coordinate_type qwen25): project_coordinate_to_absolute_scale gives int(1443 / 1932 * 1920),
    # int(343 / 1092 * 1080) = (1434, 339) for this answer at 1920x1080
    "evocua-s1": Case((1920, 1080), (1932, 1092),
                      (prompt_text("evocua/s1_system.txt").replace("{password}", "osworld-public-evaluation"),),
                      "# Step: 1\n## Thought:\nThe File menu.\n## Action:\nClick the File menu.\n## Code:\n"
                      "```python\npyautogui.click(x=1443, y=343)\n```", (1434, 339), 32768, image=(1920, 1080)),
    # GUI-Owl 1.5: update_image_size_(max_tokens=2645, patch 16) -> 1920x1088; convert_point_format_qwen3vl:
    # int(500 / 1000 * 1920), int(300 / 1000 * 1080)
    "gui-owl-1.5": Case((1920, 1080), (1920, 1088), (prompt_text("guiowl/system.txt"),),
                        'Action: Open Files.\n<tool_call>\n{"name": "computer_use", "arguments": {"action": '
                        '"left_click", "coordinate": [500, 300]}}\n</tool_call>', (960, 324), 2048),
    # the same agent on its OpenAI engine: max_tokens 4096 (its DashScope default engine's is 2048)
    "gui-owl-1.5-openai": Case((1920, 1080), (1920, 1088), (prompt_text("guiowl/system.txt"),),
                               'Action: Open Files.\n<tool_call>\n{"name": "computer_use", "arguments": {"action": '
                               '"left_click", "coordinate": [500, 300]}}\n</tool_call>', (960, 324), 4096),
    # Jedi: smart_resize(max_pixels=2700*28*28) -> 1932x1092 stated in its prompt; parse_jedi_response:
    # 1012 * 1920 / 1932, 503 * 1080 / 1092 -> (1005.7, 497.5), rounded
    "jedi-7b": Case((1920, 1080), (1932, 1092), ("* The screen's resolution is 1932x1092.",),
                    '<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": '
                    '[1012, 503]}}\n</tool_call>', (1006, 497), 1500, temperature=0.5, image=(1920, 1080)),
    "jedi-3b": Case((1920, 1080), (1932, 1092), ("* The screen's resolution is 1932x1092.",),
                    '<tool_call>\n{"name": "computer_use", "arguments": {"action": "left_click", "coordinate": '
                    '[1012, 503]}}\n</tool_call>', (1006, 497), 1500, temperature=0.5, image=(1920, 1080)),
    # Holo2: the hosted-API notebook's smart_resize(factor=32, 64*32*32 .. 16384*32*32) -> 1920x1088; its
    # visualisation scales x / 1000 * width
    "holo2": Case((1920, 1080), (1920, 1088), (prompt_text("holo2/localization.txt"),), '{"x": 500, "y": 300}',
                  (960, 324), None),
    # Kimi K2.5: the screenshot as captured; project_coordinate_to_absolute_scale: round(0.5 * 1920), round(0.3 * 1080)
    "kimi-k2.5": Case((1920, 1080), (1920, 1080),
                      (prompt_text("kimi/system_non_thinking.txt").replace("{password}", "osworld-public-evaluation"),),
                      "## Thought\nThe File menu.\n## Action:\nClick the File menu.\n## Code:\n```python\n"
                      "pyautogui.click(x=0.5, y=0.3)\n```", (960, 324), 4096, temperature=1.0),
    # MAI-UI: the screenshot as captured; parse_action_to_structure_output: 504 / 999, 63 / 999 of the screen
    "mai-ui": Case((1920, 1080), (1920, 1080), (prompt_text("maiui/system.txt"),),
                   '<thinking>\nOpen the report.\n</thinking>\n<tool_call>\n{"name": "mobile_use", "arguments": '
                   '{"action": "click", "coordinate": [504, 63]}}\n</tool_call>', (969, 68), 2048),
    # UI-Venus 1.5: the screenshot as captured; normalize_to_screen: int(500 * 1920 / 1000), int(300 * 1080 / 1000)
    "ui-venus-1.5": Case((1920, 1080), (1920, 1080), (prompt_text("uivenus/instruction.txt").split("{user_task}")[0],),
                         "<think>The Files icon.</think>\n<action>Click(box=(500,300))</action>\n"
                         "<conclusion>Open Files.</conclusion>", (960, 324), None),
    # Holo3.1: the screenshot as captured ("send a screenshot at any size"); the agent-loop page's example step,
    # scaled as the page scales it: int((932 / 1000) * 1920), int((880 / 1000) * 1080); temperature 0.8, no max_tokens
    "holo3.1": Case((1920, 1080), (1920, 1080),
                    (prompt_text("holo3/output_format.txt").replace("{schema}", prompt_text("holo3/step_schema.json")),),
                    '{"note": "Submit succeeded; receipt URL is /orders/8421.", "thought": "Recording the receipt URL '
                    'before navigating away.", "tool_call": {"tool_name": "click", "element": "Continue button at the '
                    'bottom right", "x": 932, "y": 880}}', (1789, 950), None, temperature=0.8),
    "generic": Case((1920, 1080), (1932, 1092), ("Answer with exactly one JSON object and nothing else",),
                    '{"thought": "the button", "action": {"type": "click", "x": 100, "y": 200}}', (99, 198), 512,
                    ("policy.structured_output=none",)),
}


def _context(size: tuple[int, int]) -> DecisionContext:
    buf = io.BytesIO()
    Image.new("RGB", size, (40, 90, 160)).save(buf, format="PNG")
    obs = Observation(png=buf.getvalue(), captured_size=size, source="synthetic", content_hash="h", change_key="k")
    parts = [ContextPart("constitution.md", "I am the owner's agent."),
             ContextPart("goals.md", "Select July 14th as the check-out date")]
    return DecisionContext(parts=parts, observation=obs, step=1, action_types=TYPES)


def _texts(messages: list[dict]) -> str:
    out = []
    for m in messages:
        content = m["content"]
        for part in [content] if isinstance(content, str) else content:
            if isinstance(part, str):
                out.append(part)
            elif part.get("type") == "text":
                out.append(part["text"])
    return "\n".join(out)


def _image_sizes(messages: list[dict]) -> list[tuple[int, int]]:
    sizes = []
    for m in messages:
        for part in m["content"] if isinstance(m["content"], list) else []:
            if isinstance(part, dict) and part.get("type") == "image_url":
                data = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
                sizes.append(Image.open(io.BytesIO(data)).size)
    return sizes


def test_every_shipped_preset_has_a_case():
    shipped = {p.stem for p in (REPO / "configs" / "policy").glob("*.yaml")}
    assert set(CASES) == shipped - {MOCK}


@pytest.mark.parametrize("name", list(CASES))
def test_the_preset_sends_its_sources_prompt_and_maps_its_sample_answer(name):
    case = CASES[name]
    with ScriptedFakeServer(replies=[Reply.text(case.answer)]) as fake:
        config = load_config(None, [f"policy={name}", f"policy.endpoint={fake.base_url}", *case.extra])
        with build_model_policy(config, resolve_home(None)) as policy:
            decision = policy.decide(_context(case.screen))
        request = fake.chat_requests[-1]
    assert request.get("max_tokens") == case.max_tokens and request.get("temperature") == case.temperature
    assert _image_sizes(request["messages"])[-1] == (case.image or case.sent)  # the current screenshot, as sent
    text = _texts(request["messages"])
    for expected in case.prompt:
        assert expected in text, f"{name}: {expected[:80]!r} not sent"
    (action,) = decision.actions
    assert action.type == "click", action
    w, h = case.screen
    assert captured_to_input(action.x, action.y, ScreenGeometry(0, 0, w, h, w, h)) == case.point


@pytest.mark.parametrize("name,model_type", [("uitars-1.5-7b", "qwen25vl"), ("uitars", "doubao")])
def test_uitars_presets_land_where_the_ui_tars_package_puts_the_readme_answer(name, model_type):
    """The `ui-tars` package (ByteDance's own parser): qwen25vl divides by the smart-resized size, the other
    model types by the 1000 factor, as UI-TARS 1.0 answers."""
    from ui_tars import action_parser  # the dev extra pins ui-tars 0.5.1
    w, h = CASES[name].screen
    (parsed,) = action_parser.parse_action_to_structure_output(UITARS_README, factor=1000, origin_resized_height=h,
                                                               origin_resized_width=w, model_type=model_type)
    rx, ry, _, _ = (float(v) for v in parsed["action_inputs"]["start_box"].strip("[]").split(","))
    assert (round(rx * w), round(ry * h)) == CASES[name].point


def test_the_uitars_prompts_differ_only_in_their_action_space():
    v15, v10 = _uitars_head("uitars/action_space_normal.txt"), _uitars_head("uitars/action_space_call_user.txt")
    assert "call_user()" in v10 and "call_user()" not in v15
    assert "click(start_box='<|box_start|>(x1,y1)<|box_end|>')" in v10  # 1.0's action space writes box tokens
    assert v10.split("## Action Space")[0] == v15.split("## Action Space")[0]


@pytest.mark.parametrize("overrides,needle", [
    (["policy=uitars", "policy.prompt=uitars-2.0"],
     "prompt: the uitars family has no prompt 'uitars-2.0' (known: uitars-1.5, uitars-1.0)"),
    (["policy=opencua-7b", "policy.prompt=l4"], "prompt: the opencua family has no prompt 'l4' (known: l2, l1, l3, l2-osworld)"),
    (["policy=gta1", "policy.prompt=l2"], "prompt: the gta1 family has no prompt 'l2' (known: only its one, "
                                          "policy.prompt=auto)"),
])
def test_an_unknown_prompt_is_refused_when_the_config_is_read_naming_the_familys(overrides, needle):
    with pytest.raises(UserError) as err:
        load_config(None, overrides)
    (line,) = [ln for ln in str(err.value).splitlines() if "prompt:" in ln]
    assert line.startswith("  policy: ") and needle in line


def test_a_family_builds_only_its_own_prompts():
    from conway.policies.families import get_family

    assert get_family("uitars").make_adapter("uitars-1.0").prompt == "uitars-1.0"
    assert get_family("opencua").make_adapter().level == "l2"  # auto: the first
    with pytest.raises(ValueError, match=r"^the uitars family has no prompt 'l2' \(known: uitars-1.5, uitars-1.0\)$"):
        get_family("uitars").make_adapter("l2")


def test_opencua_levels_are_prompts_of_the_preset():
    with ScriptedFakeServer(replies=[Reply.text("## Action:\nWait.\n\n## Code:\n```python\ncomputer.wait()\n```")]) \
            as fake:
        config = load_config(None, ["policy=opencua-32b", f"policy.endpoint={fake.base_url}", "policy.prompt=l3"])
        with build_model_policy(config, resolve_home(None)) as policy:
            assert policy.decide(_context((1280, 800))).actions[0].type == "wait"
        assert prompt_text("opencua/system_l3.txt") in _texts(fake.chat_requests[-1]["messages"])


def test_the_readme_presets_table_lists_every_preset_with_its_numbers():
    text = (REPO / "docs" / "running-models.md").read_text(encoding="utf-8")
    section = text.split("\n## Presets\n", 1)[1].split("\n## ", 1)[0]
    rows = {line.split("|")[1].strip(): line for line in section.splitlines() if line.startswith("| `policy=")}
    assert set(rows) == {f"`policy={name}`" for name in CASES}
    for name, case in CASES.items():
        cells = [c.strip() for c in rows[f"`policy={name}`"].split("|")]
        said = "none" if case.max_tokens is None else str(case.max_tokens)
        assert cells[7].split(" ")[0] == said, (name, cells[7])  # the max_tokens column



def test_holo_offers_its_cookbooks_schema_to_a_server_that_honours_json_schema():
    import json

    from conway.geometry import Convention
    from conway.policies.backends.backend import Backend
    from conway.policies.backends.http_client import ChatResult
    from conway.policies.base import ModelPolicy
    from conway.policies.families.holo.adapter import HoloAdapter
    from conway.policies.settings import PolicySettings

    class Schemas(Backend):  # a backend that honours json_schema and records what it was asked with
        kind, model_id = "stub", "holo-stub"

        def __init__(self):
            self.calls = []

        def structured_support(self):
            return ["json_schema"]

        def complete(self, messages, *, mode, spec, max_tokens, temperature, seed, sampling=None):
            self.calls.append((mode, spec))
            return ChatResult(text=CASES["holo1.5"].answer, reasoning=None, finish_reason="stop", model=self.model_id,
                              usage={})

    backend = Schemas()
    policy = ModelPolicy(HoloAdapter(), backend, PolicySettings(convention=Convention.ABSOLUTE, resize_rule="holo1.5",
                                                                structured_output="json_schema"))
    assert policy.decide(_context((1710, 852))).actions[0].type == "click"
    ((mode, spec),) = backend.calls
    schema = json.loads(prompt_text("holo/click_schema.json"))
    assert mode == "json_schema" and spec.schema == schema
    assert schema["required"] == ["x", "y"] and schema["properties"]["action"]["const"] == "click_absolute"
    assert str(schema) in prompt_text("holo/localization.txt")  # the prompt shows the same schema (its Python repr)


def test_the_qwen25vl_system_turn_is_what_osworlds_agent_sends():
    """The system turn of OSWorld's Qwen2.5-VL agent, recorded from its unmodified code (tests/data/goldens/)."""
    import json

    from conway.geometry import Convention
    from conway.policies.families.qwen25vl.adapter import system_prompt

    golden = json.loads((REPO / "tests" / "data" / "goldens" / "qwen25vl.json").read_text(encoding="utf-8"))
    sent = golden["requests"][0]["messages"][0]["content"][0]["text"]
    assert system_prompt(None, (1316, 728), Convention.ABSOLUTE) == sent


def test_an_osworld_task_run_sends_the_prompt_the_osworld_agent_sends():
    """OpenCUA on OSWorld's tasks: the rebound prompt its agent sends (the VM's facts); on the user's own desktop
    (Conway's tasks, `start --task`) the training one; a prompt set explicitly is kept."""
    config = load_config(None, ["policy=opencua-7b"])
    assert config.policy.prompt == "auto"
    assert config.for_task_formats({"osworld"}).policy.prompt == "l2-osworld"
    assert config.for_task_formats({"conway"}).policy.prompt == "auto"
    assert config.for_task_formats({"osworld", "conway"}).policy.prompt == "auto"
    assert load_config(None, ["policy=opencua-7b", "policy.prompt=l1"]).for_task_formats({"osworld"}).policy.prompt == "l1"
    assert load_config(None, ["policy=uitars-1.5-7b"]).for_task_formats({"osworld"}).policy.prompt == "uitars-1.5"
