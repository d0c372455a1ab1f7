"""Request goldens from the UNMODIFIED official agents, for `tests/policies/test_request_goldens.py`.

    python -m venv /tmp/goldens-venv
    /tmp/goldens-venv/bin/pip install -r scripts/build/goldens-requirements.txt
    /tmp/goldens-venv/bin/python -m scripts.build.osworld_goldens OSWORLD-GIT-DIR [--commit SHA]

OSWORLD-GIT-DIR is a git directory (or checkout) of OSWorld or of its upstream-identical copy ljxpython/OSWorldUse.
Its `mm_agents/` at `--commit` is extracted with `git archive` into a temporary folder and imported from there
(never copied into Conway). Each agent is built as its runner builds it (`scripts/python/run_multienv_*.py`: the
same constructor arguments, at the runner's defaults) and asked for 16 steps over the episode of
`scripts/build/golden_episode.py` (1920x1080 screenshots, one scripted answer a step). Nothing of the agents is
changed: no parameter, prompt, method or library (OpenCV is the real one: the GTA1 agent encodes with it). Only
the network is replaced, at the client library: `openai`'s `Completions.create`, `httpx.post` (OpenCUA) and
`requests.post` (GTA1's planner) are RECORDERS that keep the whole request (messages and every sampling field)
and answer the step's scripted answer. Each request is stored with its images described (declared type,
encoding, size, sha256 of the decoded pixels, the step they show): `tests/data/goldens/<preset>.json`.

With `--hai-cookbook`, Holo1.5's golden too: the request cell of hcompai/hai-cookbook's localization notebook,
run as written (`holo`).

It also extracts the official text of every OSWorld prompt Conway stores (`conway/policies/families/*/prompts/`)
from the same sources and writes their sha256 to `tests/data/goldens/prompt_sources.json`; it names each stored
file that is not that text and exits 1 (`--write-prompts` writes them).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from typing import Any, Callable

from scripts.build import family_prompts
from scripts.build.golden_episode import ANSWERS, GTA1_TARGETS, INSTRUCTION, STEPS, request_record, screenshot

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "tests" / "data" / "goldens"
FAMILIES = REPO / "conway" / "policies" / "families"
DEFAULT_COMMIT = "b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6"
SOURCE = "ljxpython/OSWorldUse (upstream-identical copy of xlang-ai/OSWorld)"


class Recorder:
    """The network STAND-IN: keeps every request and answers from a script (no model is asked)."""

    def __init__(self, answer: Callable[[dict[str, Any]], str]):
        self.answer = answer
        self.requests: list[dict[str, Any]] = []

    def take(self, body: dict[str, Any]) -> Any:
        body = json.loads(json.dumps(body))
        self.requests.append(body)
        return self.answer(body)


def _completion(texts: list[str]) -> Any:
    choices = [types.SimpleNamespace(message=types.SimpleNamespace(content=t), finish_reason="stop") for t in texts]
    return types.SimpleNamespace(choices=choices)


def _json_response(texts: list[str]) -> Any:
    body = {"choices": [{"message": {"content": t}, "finish_reason": "stop"} for t in texts]}
    return types.SimpleNamespace(status_code=200, json=lambda: body, text=json.dumps(body))


def _choices(answer: str | list[str], body: dict[str, Any]) -> list[str]:
    """The choices of a reply: a scripted list as it is (one a choice), one answer repeated `n` times."""
    return list(answer) if isinstance(answer, list) else [answer] * int(body.get("n") or 1)


@contextlib.contextmanager
def recording(recorder: Recorder):
    """openai's chat `create`, httpx.post and requests.post answered by `recorder` while inside."""
    import httpx
    import openai.resources.chat.completions as chat
    import requests

    saved = (chat.Completions.create, httpx.post, requests.post)

    def create(self: Any, **kwargs: Any) -> Any:
        kwargs.update(kwargs.pop("extra_body", None) or {})  # the client merges it into the request's JSON body
        return _completion(_choices(recorder.take(kwargs), kwargs))

    def post(url: str, *a: Any, json: Any = None, **kw: Any) -> Any:
        return _json_response(_choices(recorder.take(json), json))

    chat.Completions.create, httpx.post, requests.post = create, post, post  # type: ignore[method-assign]
    try:
        yield recorder
    finally:
        chat.Completions.create, httpx.post, requests.post = saved  # type: ignore[method-assign]


def _quiet(fn: Callable[[], Any]) -> Any:
    with contextlib.redirect_stdout(io.StringIO()):  # the agents print every answer
        return fn()


def _steps(agent: Any, preset: str, predict: Callable[[Any, int], Any]) -> list[dict[str, Any]]:
    """The agent asked over the episode: one request a step, stored whole."""
    answers = ANSWERS[preset]
    recorder = Recorder(lambda body: answers[len(recorder.requests) - 1])
    with recording(recorder):
        for step in range(1, STEPS + 1):
            _quiet(lambda: predict(agent, step))
            if len(recorder.requests) != step:
                raise SystemExit(f"{preset}: step {step} sent {len(recorder.requests) - step + 1} requests "
                                 "(an answer its parser refused?)")
    return [{"step": n, **request_record(body)} for n, body in enumerate(recorder.requests, start=1)]


def _obs(step: int) -> dict[str, Any]:
    return {"screenshot": screenshot(step), "accessibility_tree": None}


# --- the agents, as their runners build them ----------------------------------------------------------------------


def uitars15() -> list[dict[str, Any]]:
    """scripts/python/run_multienv_uitars15_v1.py at its defaults (--infer_mode qwen25vl_normal)."""
    from mm_agents.uitars15_v1 import UITARSAgent

    os.environ.setdefault("DOUBAO_API_URL", "http://127.0.0.1:9/v1")  # the agent's client reads them; never reached
    os.environ.setdefault("DOUBAO_API_KEY", "recorder")
    runtime_conf = {"infer_mode": "qwen25vl_normal", "prompt_style": "qwen25vl_normal", "input_swap": True,
                    "language": "Chinese", "history_n": 5, "max_pixels": 16384 * 28 * 28,
                    "min_pixels": 100 * 28 * 28, "callusr_tolerance": 3, "temperature": 0.0, "top_k": -1,
                    "top_p": 0.9, "max_tokens": 1000}  # the runner's dict for qwen25vl_normal, as written there
    agent = UITARSAgent(model="uitars15-7b", action_space="pyautogui", observation_type="screenshot",
                        max_trajectory_length=15, model_type="qwen25vl", runtime_conf=runtime_conf)
    return _steps(agent, "uitars-1.5", lambda a, k: a.predict(INSTRUCTION, _obs(k)))


def uitars10() -> list[dict[str, Any]]:
    """scripts/python/run_multienv_uitars.py at its defaults (the agent's own runtime_conf: qwen2vl_user)."""
    from mm_agents.uitars_agent import UITARSAgent

    os.environ.setdefault("DOUBAO_API_URL", "http://127.0.0.1:9/v1")
    os.environ.setdefault("DOUBAO_API_KEY", "recorder")
    agent = UITARSAgent(model="uitars-72b-dpo", max_tokens=1500, top_p=0.9, temperature=1.0,
                        action_space="pyautogui", observation_type="screenshot", max_trajectory_length=15)
    return _steps(agent, "uitars-1.0", lambda a, k: a.predict(INSTRUCTION, _obs(k)))


def opencua() -> list[dict[str, Any]]:
    """scripts/python/run_multienv_opencua.py as its docstring runs OpenCUA-7B/32B (--coordinate_type qwen25
    --use_old_sys_prompt), other arguments at their defaults."""
    import logging

    from mm_agents.opencua.opencua_agent import OpenCUAAgent

    os.environ.setdefault("OPENCUA_API_KEY", "recorder")
    agent = OpenCUAAgent(env=None, model="OpenCUA-32B", max_tokens=2048, top_p=0.9, temperature=0,
                         action_space="pyautogui", observation_type="screenshot", cot_level="l2",
                         history_type="action_history", screen_size=(1920, 1080), coordinate_type="qwen25",
                         max_image_history_length=3, max_steps=100, use_old_sys_prompt=True,
                         password="osworld-public-evaluation")
    agent.reset(logging.getLogger("desktopenv.agent"))  # as lib_run_single does, with the runner's logger
    return _steps(agent, "opencua", lambda a, k: a.predict(INSTRUCTION, _obs(k)))


def qwen3vl() -> list[dict[str, Any]]:
    """scripts/python/run_multienv_qwen3vl.py at its defaults, on the agent's OpenAI-compatible backend (the
    runner leaves `api_backend` at the agent's `dashscope`, whose call sends the same messages in DashScope's
    schema; a local server is reached through `openai`)."""
    import logging

    from mm_agents import qwen3vl_agent as mod

    mod.logger = logging.getLogger("desktopenv.agent")  # the module's logger, set by the runner
    agent = mod.Qwen3VLAgent(model="qwen3-vl", max_tokens=32768, top_p=0.9, temperature=0,
                             action_space="pyautogui", coordinate_type="relative", add_thought_prefix=False,
                             api_backend="openai")
    return _steps(agent, "qwen3vl", lambda a, k: a.predict(INSTRUCTION, _obs(k)))


def qwen25vl() -> list[dict[str, Any]]:
    """scripts/python/run_multienv_qwen25vl.py at its defaults."""
    import logging

    from mm_agents import qwen25vl_agent as mod

    agent = mod.Qwen25VLAgent(model="gpt-4o", max_tokens=1500, top_p=0.9, temperature=1.0,
                              action_space="pyautogui", add_thought_prefix=False)
    agent.reset(logging.getLogger("desktopenv.agent"))
    return _steps(agent, "qwen25vl", lambda a, k: a.predict(INSTRUCTION, _obs(k)))


def gta1() -> list[dict[str, Any]]:
    """scripts/python/run_multienv_gta1.py (`GTA1Agent(max_steps=15, client_password=...)`), the whole agent: its
    planner (o3, through requests.post) proposes `agent.click(<target>)`, its judge picks, and the grounding
    request (the one Conway's `gta1` preset is) locates it. Only the grounding requests are kept."""
    import logging

    os.environ.setdefault("OPENAI_API_KEY", "recorder")
    from mm_agents.gta1 import gta1_agent as mod

    mod.logger = logging.getLogger("desktopenv.agent")
    agent = mod.GTA1Agent(max_steps=15, client_password="password")
    step = {"n": 0}

    def answer(body: dict[str, Any]) -> str:
        target = GTA1_TARGETS[(step["n"] - 1) % len(GTA1_TARGETS)]
        if "max_completion_tokens" in body and any("JSON" in json.dumps(m) and "index" in json.dumps(m)
                                                   for m in body["messages"][:1]):
            return '```json\n{"explaining": "the only plan", "index": 0}\n```'
        if "max_completion_tokens" in body:  # the planner
            return (f"Observation:\nThe desktop at step {step['n']}.\nThought:\nI click {target}.\n"
                    f"Action:\n```python\nagent.click(\"{target}\")\n```")
        return ANSWERS["gta1"][(step["n"] - 1) % len(GTA1_TARGETS)]  # the grounding model

    recorder = Recorder(answer)
    kept = []
    with recording(recorder):
        for n in range(1, 5):
            step["n"] = n
            before = len(recorder.requests)
            _quiet(lambda: agent.predict(INSTRUCTION, _obs(n)))
            grounding = [b for b in recorder.requests[before:] if "max_completion_tokens" not in b]
            if len(grounding) != 1:
                raise SystemExit(f"gta1: step {n} sent {len(grounding)} grounding requests")
            kept.append({"step": n, "target": GTA1_TARGETS[n - 1], **request_record(grounding[0])})
    return kept


PROMPTS: dict[str, str] = {}
"""Official prompt texts found while running a source (the notebook's), beside `official_prompts`'."""
HOLO_COMMIT = "2ba89619bdcfe729d31649d976bdaa7b9551e216"
HOLO_NOTEBOOK = "holo1_5/openai_client/invoke_localization.ipynb"


def holo(cookbook: Path, commit: str, into: Path) -> list[dict[str, Any]]:
    """hcompai/hai-cookbook's Holo1.5 localization notebook: its code cells run as written (the pip and API-key
    cells left out, the key set), with its example image file (`data/calendar_example.jpg`, data) replaced by the
    step's screenshot, so its preparation cell opens and resizes that as written; its request cell once per
    target (`task` set after the preparation cell); `IPython.display` is a no-op."""
    _extract(cookbook, commit, into, ".")
    os.chdir(into / "holo1_5" / "openai_client")  # the notebook finds the cookbook's root from its own folder
    display = types.ModuleType("IPython.display")
    display.display = lambda *a, **k: None  # type: ignore[attr-defined]
    sys.modules.update({"IPython": types.ModuleType("IPython"), "IPython.display": display})
    cells = ["".join(c["source"]) for c in json.loads((into / HOLO_NOTEBOOK).read_text(encoding="utf-8"))["cells"]
             if c["cell_type"] == "code"]
    module = types.ModuleType("invoke_localization")  # pydantic resolves the model's annotations through it
    sys.modules[module.__name__] = module
    space = module.__dict__
    request_cell = next(c for c in cells if "chat.completions.create" in c)
    prepare_cell = next(c for c in cells if "image_path" in c)
    for cell in cells:
        if cell in (request_cell, prepare_cell) or cell.lstrip().startswith("!") or "API_KEY" in cell:
            continue
        exec(compile(cell, HOLO_NOTEBOOK, "exec"), space)
    space.update(API_KEY="recorder", MODEL_NAME="Hcompany/Holo1.5-7B", BASE_URL="http://127.0.0.1:9/v1")
    recorder = Recorder(lambda body: '{"action": "click_absolute", "x": 120, "y": 340}')
    with recording(recorder):
        for n, target in enumerate(GTA1_TARGETS, start=1):
            (into / "data" / "calendar_example.jpg").write_bytes(screenshot(n))
            exec(compile(prepare_cell, HOLO_NOTEBOOK, "exec"), space)
            space["task"] = target
            _quiet(lambda: exec(compile(request_cell, HOLO_NOTEBOOK, "exec"), space))
    PROMPTS.update({"holo/localization.txt": space["LOCALIZATION_TASK_PROMPT"],
                    "holo/click_schema.json": json.dumps(space["ClickAbsoluteAction"].model_json_schema(), indent=2)
                    + "\n"})
    return [{"step": n, "target": t, **request_record(b)} for n, (t, b) in
            enumerate(zip(GTA1_TARGETS, recorder.requests), start=1)]


RUNS: dict[str, tuple[str, str, Callable[[], list[dict[str, Any]]]]] = {
    "uitars-1.5": ("mm_agents/uitars15_v1.py", "scripts/python/run_multienv_uitars15_v1.py", uitars15),
    "uitars-1.0": ("mm_agents/uitars_agent.py", "scripts/python/run_multienv_uitars.py", uitars10),
    "opencua": ("mm_agents/opencua/opencua_agent.py", "scripts/python/run_multienv_opencua.py", opencua),
    "qwen3vl": ("mm_agents/qwen3vl_agent.py", "scripts/python/run_multienv_qwen3vl.py", qwen3vl),
    "qwen25vl": ("mm_agents/qwen25vl_agent.py", "scripts/python/run_multienv_qwen25vl.py", qwen25vl),
    "gta1": ("mm_agents/gta1/gta1_agent.py (grounding requests)", "scripts/python/run_multienv_gta1.py", gta1),
}


# --- the official text of the stored prompts ----------------------------------------------------------------------


def _first_binding(path: Path, name: str) -> str:
    """The value of the FIRST assignment to `name` in a module (a later one rebinds it at import)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return eval(compile(ast.Expression(node.value), str(path), "eval"), {})  # a literal (and .strip())
    raise SystemExit(f"{path}: no {name}")


def _qwen_tool(golden: list[dict[str, Any]], head: str) -> tuple[str, str]:
    """(system text with `{tools}` for the tool record, the tool record) as the agent sent them at step 1."""
    system = golden[0]["messages"][0]["content"][0]["text"]
    start = system.index(head) + len(head)
    end = system.index("\n</tools>")
    tool = json.loads(system[start:end])
    return system[:start] + "{tools}" + system[end:], json.dumps(tool, indent=2, ensure_ascii=False) + "\n"


def official_prompts(root: Path, goldens: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    """`family/file` -> the official text each stored prompt file must be, from the extracted sources."""
    from mm_agents import prompts as osworld
    from mm_agents import uitars15_v1
    from mm_agents.opencua import prompts as opencua_prompts

    opencua_file = root / "mm_agents" / "opencua" / "prompts.py"
    q3_system, q3_tool = _qwen_tool(goldens["qwen3vl"], "<tools>\n")
    q3_tool = q3_tool.replace("1000x1000", "{display_width_px}x{display_height_px}")  # the field the agent fills
    q25_system, q25_tool = _qwen_tool(goldens["qwen25vl"], "<tools>\n")
    q3_user = next(p["text"] for p in goldens["qwen3vl"][0]["messages"][1]["content"] if p["type"] == "text")
    q25_user = next(p["text"] for p in goldens["qwen25vl"][0]["messages"][1]["content"] if p["type"] == "text")
    template = q3_user.replace(INSTRUCTION, "{instruction}").replace("\nNone", "\n{previous_actions_str}")
    return {
        "uitars/user_thought.txt": uitars15_v1.UITARS_USR_PROMPT_THOUGHT,
        "uitars/action_space_normal.txt": uitars15_v1.UITARS_NORMAL_ACTION_SPACE,
        "uitars/action_space_call_user.txt": osworld.UITARS_CALL_USR_ACTION_SPACE,
        "uitars/system.txt": goldens["uitars-1.5"][0]["messages"][0]["content"][0]["text"],
        "opencua/system_l1.txt": opencua_prompts.SYSTEM_PROMPT_V1_L1,
        "opencua/system_l2.txt": _first_binding(opencua_file, "SYSTEM_PROMPT_V1_L2"),
        "opencua/system_l2_osworld.txt": opencua_prompts.SYSTEM_PROMPT_V1_L2,
        "opencua/system_l3.txt": opencua_prompts.SYSTEM_PROMPT_V1_L3,
        "opencua/instruction.txt": opencua_prompts.INSTRUTION_TEMPLATE,
        "qwen3vl/system.txt": q3_system,
        "qwen3vl/computer_use.json": q3_tool,
        "qwen3vl/instruction.txt": template,
        "qwen25vl/system.txt": q25_system.split("\n\n", 1)[0],
        "qwen25vl/fncall_template.txt": q25_system.split("\n\n", 1)[1].replace("{tools}", "{tool_descs}"),
        "qwen25vl/computer_use.json": q25_tool,
        "qwen25vl/instruction.txt": q25_user.replace(INSTRUCTION, "{instruction}").replace(
            "\nNone", "\n{previous_actions_str}"),
        "gta1/system.txt": osworld.GTA1_GROUNDING_SYSTEM_PROMPT,
        "gta1/planner_system.txt": osworld.GTA1_PLANNER_SYSTEM_PROMPT,
        "gta1/judge_system.txt": osworld.GTA1_JUDGE_SYSTEM_PROMPT,
        **_gta1_agent_texts(root / "mm_agents" / "gta1" / "gta1_agent.py"),
    }


LOCATIONS: dict[str, str] = {
    "uitars/user_thought.txt": "mm_agents/uitars15_v1.py UITARS_USR_PROMPT_THOUGHT",
    "uitars/action_space_normal.txt": "mm_agents/uitars15_v1.py UITARS_NORMAL_ACTION_SPACE",
    "uitars/action_space_call_user.txt": "mm_agents/prompts.py UITARS_CALL_USR_ACTION_SPACE",
    "uitars/system.txt": "mm_agents/uitars15_v1.py UITARS15Agent.predict's system message, as sent",
    "opencua/system_l1.txt": "mm_agents/opencua/prompts.py SYSTEM_PROMPT_V1_L1",
    "opencua/system_l2.txt": "mm_agents/opencua/prompts.py SYSTEM_PROMPT_V1_L2, its first binding",
    "opencua/system_l2_osworld.txt": "mm_agents/opencua/prompts.py SYSTEM_PROMPT_V1_L2, as the module rebinds it",
    "opencua/system_l3.txt": "mm_agents/opencua/prompts.py SYSTEM_PROMPT_V1_L3",
    "opencua/instruction.txt": "mm_agents/opencua/prompts.py INSTRUTION_TEMPLATE",
    "qwen3vl/system.txt": "mm_agents/qwen3vl_agent.py Qwen3VLAgent.predict's system text, as sent, its tool as {tools}",
    "qwen3vl/computer_use.json": "mm_agents/qwen3vl_agent.py Qwen3VLAgent.predict tools_def, as sent",
    "qwen3vl/instruction.txt": "mm_agents/qwen3vl_agent.py Qwen3VLAgent.predict instruction_prompt, as sent",
    "qwen25vl/system.txt": "mm_agents/qwen25vl_agent.py Qwen25VLAgent.predict's system line, as sent",
    "qwen25vl/fncall_template.txt": "mm_agents/qwen25vl_agent.py Qwen25VLAgent.predict's tool template, as sent",
    "qwen25vl/computer_use.json": "mm_agents/qwen25vl_agent.py Qwen25VLAgent.predict tools_def, as sent",
    "qwen25vl/instruction.txt": "mm_agents/qwen25vl_agent.py Qwen25VLAgent.predict instruction_prompt, as sent",
    "gta1/system.txt": "mm_agents/prompts.py GTA1_GROUNDING_SYSTEM_PROMPT",
    "gta1/planner_system.txt": "mm_agents/prompts.py GTA1_PLANNER_SYSTEM_PROMPT",
    "gta1/judge_system.txt": "mm_agents/prompts.py GTA1_JUDGE_SYSTEM_PROMPT",
    "gta1/planner_user.txt": "mm_agents/gta1/gta1_agent.py GTA1Agent.predict user_prompt",
    "gta1/retry.txt": "mm_agents/gta1/gta1_agent.py GTA1Agent.predict, the line for refused proposals",
    "holo/localization.txt": f"{HOLO_NOTEBOOK} LOCALIZATION_TASK_PROMPT",
    "holo/click_schema.json": f"{HOLO_NOTEBOOK} ClickAbsoluteAction.model_json_schema()",
}
"""`family/file` -> where in its source tree the official text is (file and symbol); with `family_prompts.LOCATIONS`
every stored file that is not Conway's own."""


def _gta1_agent_texts(path: Path) -> dict[str, str]:
    """GTA1Agent.predict's planner user text (its f-string, the `{instruction}` field kept as written) and the line
    it appends when proposals are refused (policy.planner.protocol=gta1)."""
    out = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "user_prompt":
            out["gta1/planner_user.txt"] = "".join(
                v.value if isinstance(v, ast.Constant) else "{" + ast.unparse(v.value) + "}"  # type: ignore[attr-defined]
                for v in node.value.values)  # type: ignore[attr-defined]
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                node.value.startswith("You didn't generate a valid"):
            out["gta1/retry.txt"] = node.value
    return out


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_stored(official: dict[str, str]) -> list[str]:
    """Each stored prompt file that is not its official text, one line each."""
    problems = []
    for name, text in official.items():
        path = FAMILIES / name.split("/")[0] / "prompts" / name.split("/")[1]
        stored = path.read_text(encoding="utf-8") if path.exists() else None
        if stored != text:
            problems.append(f"{path.relative_to(REPO)}: not the official text "
                            f"({'missing' if stored is None else 'sha256 ' + _sha(stored)}; official {_sha(text)})")
    return problems


def _extract(repo: Path, commit: str, into: Path, path: str = "mm_agents") -> None:
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(repo), "archive", commit, path], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("osworld", type=Path, help="a git directory or checkout of OSWorld (or ljxpython/OSWorldUse)")
    ap.add_argument("--commit", default=DEFAULT_COMMIT, help=f"the commit to run (default {DEFAULT_COMMIT})")
    ap.add_argument("--only", nargs="*", choices=sorted(RUNS), help="make only these goldens")
    ap.add_argument("--hai-cookbook", type=Path,
                    help=f"a git directory of hcompai/hai-cookbook (holds {HOLO_COMMIT}): also make holo1.5's golden")
    ap.add_argument("--write-prompts", action="store_true",
                    help="also overwrite the stored prompt files with the official text")
    args = ap.parse_args(argv)
    if not (args.osworld / "HEAD").exists() and not (args.osworld / ".git").exists():
        ap.error(f"{args.osworld}: not a git directory or checkout")
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="osworld-goldens-") as tmp:
        _extract(args.osworld, args.commit, Path(tmp))
        sys.path.insert(0, tmp)
        os.chdir(tmp)  # the Qwen3-VL agent writes a debug copy of its messages under ./draft/
        goldens = {}
        for preset, (agent_file, runner, run) in RUNS.items():
            if args.only and preset not in args.only:
                goldens[preset] = json.loads((OUT / f"{preset}.json").read_text(encoding="utf-8"))["requests"]
                continue
            goldens[preset] = run()
            record = {"source": f"{SOURCE} {agent_file} @ {args.commit}", "runner": runner,
                      "made_by": "scripts/build/osworld_goldens.py", "instruction": INSTRUCTION,
                      "answers": ANSWERS[preset], "requests": goldens[preset]}
            path = OUT / f"{preset}.json"
            path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            print(f"{path.relative_to(REPO)}: {len(goldens[preset])} requests")
        official = official_prompts(Path(tmp), goldens)
        if args.hai_cookbook is not None:
            requests = holo(args.hai_cookbook, HOLO_COMMIT, Path(tmp) / "hai-cookbook")
            record = {"source": f"hcompai/hai-cookbook {HOLO_NOTEBOOK} @ {HOLO_COMMIT}",
                      "made_by": "scripts/build/osworld_goldens.py", "targets": GTA1_TARGETS, "requests": requests}
            (OUT / "holo1.5.json").write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            print(f"tests/data/goldens/holo1.5.json: {len(requests)} requests")
            official.update(PROMPTS)
        located = {name: (f"hcompai/hai-cookbook @ {HOLO_COMMIT}" if name.startswith("holo/") else
                          f"{SOURCE} @ {args.commit}") + f": {LOCATIONS[name]}" for name in official}
        for family, (tree, _) in family_prompts.SOURCES.items():  # the newer families, from the same trees
            if tree == "cookbook" and args.hai_cookbook is None:
                continue
            texts = family_prompts.extract(family, Path(tmp), Path(tmp) / "hai-cookbook")
            for file, text in texts.items():
                name = f"{family}/{file}"
                official[name] = text
                repo = f"{SOURCE} @ {args.commit}" if tree == "osworld" else f"hcompai/hai-cookbook @ {HOLO_COMMIT}"
                located[name] = f"{repo}: {family_prompts.LOCATIONS[name]}"
    if args.write_prompts:
        for name, text in official.items():
            (FAMILIES / name.split("/")[0] / "prompts" / name.split("/")[1]).write_text(text, encoding="utf-8")
    sources = [f"{SOURCE} mm_agents/ @ {args.commit}"] + (
        [f"hcompai/hai-cookbook {HOLO_NOTEBOOK} @ {HOLO_COMMIT} (holo/)",
         f"hcompai/hai-cookbook holo2/holo_2_localization_hosted_api.ipynb @ {HOLO_COMMIT} (holo2/)"]
        if args.hai_cookbook else [])
    sums = {"sources": sources, "made_by": "scripts/build/osworld_goldens.py",
            "sha256": {name: _sha(text) for name, text in sorted(official.items())},
            "locations": dict(sorted(located.items()))}
    _keep_made_elsewhere(sums, OUT / "prompt_sources.json")
    (OUT / "prompt_sources.json").write_text(json.dumps(sums, indent=1) + "\n", encoding="utf-8")
    problems = check_stored(official)
    for line in problems:
        print(line)
    return 1 if problems else 0


OWN_REPOSITORIES = ("Tongyi-MAI/MAI-UI", "inclusionAI/UI-Venus")
"""Families whose prompts come from their own repositories: `goldens_new_families.py --maiui / --venus` writes their
entries."""


def _made_elsewhere(where: str) -> bool:
    """An entry another builder makes: a family's own repository, or a documentation page by its digest
    (`goldens_holo3.py`'s `@ sha256:`)."""
    return where.startswith(OWN_REPOSITORIES) or " @ sha256:" in where


def _keep_made_elsewhere(sums: dict[str, Any], path: Path) -> None:
    """Keep the entries this builder does not make, so that rebuilding the OSWorld goldens does not drop them."""
    if not path.exists():
        return
    old = json.loads(path.read_text(encoding="utf-8"))
    for name, where in old.get("locations", {}).items():
        if _made_elsewhere(where) and name in old.get("sha256", {}) and name not in sums["locations"]:
            sums["sha256"][name], sums["locations"][name] = old["sha256"][name], where
    sums["sources"] += [s for s in old.get("sources", []) if _made_elsewhere(s) and s not in sums["sources"]]
    sums["sha256"], sums["locations"] = dict(sorted(sums["sha256"].items())), dict(sorted(sums["locations"].items()))


if __name__ == "__main__":
    raise SystemExit(main())
