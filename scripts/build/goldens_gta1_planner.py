"""The golden of GTA1's planner protocol from its UNMODIFIED official agent, for `tests/policies/test_gta1_planner.py`.

    /tmp/goldens-venv/bin/python -m scripts.build.goldens_gta1_planner OSWORLD-GIT-DIR [--commit SHA]

OSWORLD-GIT-DIR is a git directory of OSWorld or of its upstream-identical copy ljxpython/OSWorldUse; its
`mm_agents/` at `--commit` (b5007a93…) is extracted to a temporary folder and imported from there (never copied
into Conway). The agent needs its own dependencies (`scripts/build/goldens-requirements.txt`, a separate venv).

`mm_agents/gta1/gta1_agent.py`'s `GTA1Agent` is built as `scripts/python/run_multienv_gta1.py` builds it
(`GTA1Agent(max_steps=15, client_password=...)`, the runner's `--client_password` default "") and asked `predict`
over the episode's first `len(STEPS_GTA1)` screenshots (`scripts/build/golden_episode.py`). Only the network is
replaced, by `osworld_goldens.recording`'s RECORDER: `requests.post` (the o3 planner and the judge) and openai's
chat `create` (the grounding model's `request_vllm`) keep each request whole and answer from the script below: the
planner's proposals (a list: one a choice, some refused by the agent's `isvalid` so it asks again), the judge's
JSON, the grounding model's `(x,y)`. Every request is stored (`tests/data/goldens_new/gta1-planner.json`): which
call (planner, judge, grounding), its messages with images described, its sampling fields.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from scripts.build.golden_episode import INSTRUCTION, request_record, screenshot

OUT = Path(__file__).resolve().parents[2] / "tests" / "data" / "goldens_new" / "gta1-planner.json"
DEFAULT_COMMIT = "b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6"
PASSWORD = ""
"""The runner's `--client_password` default."""


def proposal(caption: str, thought: str, call: str) -> str:
    """A planner answer in the form GTA1's planner prompt asks."""
    return f"Observation:\n{caption}\nThought:\n{thought}\nAction:\n```python\n{call}\n```"


def _eight(caption: str, call: str) -> list[str]:
    return [proposal(caption, f"Plan {i}: {call.split('(')[0]} is next.", call) for i in range(8)]


NO_THOUGHT = "Observation:\nThe desktop.\n```python\nagent.click(\"The Files icon in the dock\")\n```"
NOT_ACI = proposal("The desktop.", "Click it.", "pyautogui.click(120, 340)")
"""Two answers the agent's `isvalid` refuses: no Thought section; no `agent.*` call."""

STEPS_GTA1: list[dict[str, Any]] = [
    {"planner": [_eight("The desktop is shown.", 'agent.click("The Files icon in the dock")')[:6] + [NO_THOUGHT, NOT_ACI],
                 [proposal("The desktop is shown.", "Retry: open Files.", 'agent.click("The Files icon in the dock")'),
                  proposal("The desktop is shown.", "Retry: the dock.", 'agent.click("The Files icon in the dock", 2)')]],
     "judge": 7, "grounding": ["(121,344)"]},
    {"planner": [_eight("Files is open.", "agent.type(element_description=\"The name field of the rename dialog\", "
                                          "text=\"final.txt\", overwrite=True, enter=True)")],
     "judge": 0, "grounding": ["(640,400)"]},
    {"planner": [_eight("The file is renamed.", "agent.hotkey(['ctrl', 's'])")], "judge": 2, "grounding": []},
    {"planner": [_eight("The list is long.", 'agent.scroll("The list of files in the Documents folder", -5)')],
     "judge": 1, "grounding": ["(700,500)"]},
    {"planner": [_eight("The file is in the list.",
                        'agent.drag_and_drop("The report.txt file in the list", "The Archive folder in the sidebar")')],
     "judge": 0, "grounding": ["(300,420)", "(90,610)"]},
    {"planner": [_eight("Two rows to select.", "agent.hold_and_press(['shift'], ['down', 'down'])")],
     "judge": 4, "grounding": []},
    {"planner": [_eight("Saving.", "agent.wait(1.0)")], "judge": 0, "grounding": []},
]
"""Per step: the planner's replies (each a list of choices; a second one answers the agent's retry), the index the
judge answers, the grounding model's answers (in the 1932x1092 size its prompt states)."""


def judge_answer(index: int) -> str:
    return '```json\n{"explaining": "It advances the task.", "index": %d}\n```' % index


def _script() -> Any:
    queues = {"planner": [r for s in STEPS_GTA1 for r in s["planner"]],
              "judge": [judge_answer(s["judge"]) for s in STEPS_GTA1],
              "grounding": [g for s in STEPS_GTA1 for g in s["grounding"]]}

    def answer(body: dict[str, Any]) -> Any:
        return queues[call_of(body)].pop(0)
    return answer


def call_of(body: dict[str, Any]) -> str:
    """Which call a request is: the planner's asks `n` answers, the judge's only `max_completion_tokens`."""
    if "n" in body and "max_completion_tokens" in body:
        return "planner"
    return "judge" if "max_completion_tokens" in body else "grounding"


def build(osworld: Path, commit: str) -> dict[str, Any]:
    from scripts.build.osworld_goldens import Recorder, _extract, _quiet, recording

    with tempfile.TemporaryDirectory(prefix="gta1-planner-") as tmp:
        _extract(osworld, commit, Path(tmp))
        sys.path.insert(0, tmp)
        os.environ.setdefault("OPENAI_API_KEY", "recorder")
        from mm_agents.gta1 import gta1_agent as mod

        mod.logger = logging.getLogger("desktopenv.agent")
        agent = mod.GTA1Agent(max_steps=15, client_password=PASSWORD)
        agent.reset(logging.getLogger("desktopenv.agent"))
        recorder = Recorder(_script())
        actions = []
        with recording(recorder):
            for step in range(1, len(STEPS_GTA1) + 1):
                obs = {"screenshot": screenshot(step), "accessibility_tree": None}
                _, done = _quiet(lambda: agent.predict(INSTRUCTION, obs))
                actions.append(done)
    requests = [{"call": call_of(body), **request_record(body)} for body in recorder.requests]
    return {"source": f"OSWorld mm_agents/gta1/gta1_agent.py (ljxpython/OSWorldUse {commit})",
            "runner": "scripts/python/run_multienv_gta1.py", "made_by": "scripts/build/goldens_gta1_planner.py",
            "agent_args": {"max_steps": 15, "client_password": PASSWORD}, "instruction": INSTRUCTION,
            "script": STEPS_GTA1, "agent_actions": actions, "requests": requests}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    ap.add_argument("osworld", type=Path, help="a git directory of OSWorld (or ljxpython/OSWorldUse)")
    ap.add_argument("--commit", default=DEFAULT_COMMIT, help=f"the commit to run (default {DEFAULT_COMMIT})")
    args = ap.parse_args(argv)
    golden = build(args.osworld, args.commit)
    OUT.write_text(json.dumps(golden, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(golden['requests'])} requests")
    return 0


if __name__ == "__main__":
    sys.exit(main())
