"""Request goldens of Agent S3's behaviour Best-of-N from its UNMODIFIED code, for `tests/evals/test_judge_goldens.py`.

    python -m venv /tmp/goldens-venv
    /tmp/goldens-venv/bin/pip install -r scripts/build/goldens-requirements.txt
    /tmp/goldens-venv/bin/python -m scripts.build.agent_s3_goldens AGENT-S-GIT-DIR [--commit SHA]

AGENT-S-GIT-DIR is a git directory (or checkout) of simular-ai/Agent-S. Its `gui_agents/` at `--commit` is extracted
with `git archive` into a temporary folder and imported from there (never copied into Conway). Its
`BehaviorNarrator.judge` is asked for the facts of a four-step rollout (a click near the screen's corner, a drag,
typing, DONE) over the screenshots of `scripts/build/golden_episode.py`, and its `ComparativeJudge.judge` to
compare that rollout with a shorter one, each from OSWorld-style result folders (`step_0.png` … as its
`run_judge.py` reads them). Nothing of theirs is changed; only the network is replaced, at `openai`'s
`Completions.create`, by the RECORDER of `scripts/build/osworld_goldens.py`, which keeps each request whole and
answers a scripted reply. Each request is stored with its images described (declared type, encoding, size,
sha256 of the decoded pixels): `tests/data/goldens/agent_s3_bbon.json` (made with openai 3.63.0, Pillow 13.0.0,
OpenCV 5.1.0), beside the episode (the screenshots'
steps and the actions as PyAutoGUI code) the test replays through Conway's requests.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from scripts.build.golden_episode import INSTRUCTION, request_record, screenshot
from scripts.build.osworld_goldens import Recorder, recording

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "tests" / "data" / "goldens" / "agent_s3_bbon.json"
DEFAULT_COMMIT = "5caa76cb19c6a6b947a524f74995c45848c2efbc"
SOURCE = "simular-ai/Agent-S"

EPISODE = [
    {"before": 1, "after": 2, "actions": [{"type": "click", "x": 1905, "y": 1072}]},
    {"before": 2, "after": 3, "actions": [{"type": "drag", "x": 100, "y": 200, "to_x": 400, "to_y": 300}]},
    {"before": 3, "after": 4, "actions": [{"type": "type", "text": "hello"}]},
    {"before": 4, "after": 5, "actions": [{"type": "finish", "status": "DONE", "message": "done"}]},
]
"""The long rollout: each step's screenshots (golden_episode's steps) and Conway's actions; the codes S3 is given
are what Conway writes for them (`conway.evals.judge.agent_s3.pyautogui_code`), stored with the golden."""
SHORT = {"initial": 1, "final": 3, "facts": ["Fact Caption from Screenshot 1: - a dialog opened"]}
"""The other rollout the judge compares: its first and last screenshots and its fact."""


def fact_reply(n: int) -> str:
    return f"<thoughts>step {n} looked at</thoughts>\n<answer>- change {n}</answer>"


def build(agent_s_git: str, commit: str) -> dict[str, Any]:
    sys.path.insert(0, str(REPO))
    from conway.evals.judge.agent_s3 import pyautogui_code

    codes = [pyautogui_code(step["actions"]) for step in EPISODE]
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", f"--git-dir={agent_s_git}", "archive", commit, "gui_agents"],
                                 check=True, capture_output=True).stdout
        tarfile.open(fileobj=io.BytesIO(archive)).extractall(tmp, filter="data")
        sys.path.insert(0, tmp)
        from gui_agents.s3.bbon.behavior_narrator import BehaviorNarrator
        from gui_agents.s3.bbon.comparative_judge import ComparativeJudge

        engine = {"engine_type": "openai", "model": "judge-model", "base_url": "http://127.0.0.1:9/v1",
                  "api_key": "recorder"}  # never reached: the recorder answers
        narrator_calls = Recorder(lambda body: fact_reply(len(narrator_calls.requests)))
        facts = []
        with recording(narrator_calls):
            narrator = BehaviorNarrator(engine)
            for n, (step, code) in enumerate(zip(EPISODE, codes), start=1):
                facts.append(narrator.judge(screenshot_num=n, before_img_bytes=screenshot(step["before"]),
                                            after_img_bytes=screenshot(step["after"]), pyautogui_action=code))
        results = Path(tmp) / "results"
        for name, shots in (("long", {0: 1, len(EPISODE): EPISODE[-1]["after"]}),
                            ("short", {0: SHORT["initial"], 2: SHORT["final"]})):
            folder = results / name / "os" / "golden"
            folder.mkdir(parents=True)
            for k, step in shots.items():
                (folder / f"step_{k}.png").write_bytes(screenshot(step))
        judge_calls = Recorder(lambda body: "<thoughts>the first is complete</thoughts>\n<answer>1</answer>")
        with recording(judge_calls):
            answer, thoughts, chosen = ComparativeJudge(engine).judge(
                INSTRUCTION, "os/golden", [str(results / "long"), str(results / "short")],
                [[f["fact_answer"] for f in facts], SHORT["facts"]])
        assert answer == "1" and chosen == str(results / "long"), (answer, chosen)
    return {"source": f"{SOURCE} gui_agents/s3/bbon/ (behavior_narrator.py, comparative_judge.py)",
            "commit": commit, "instruction": INSTRUCTION,
            "episode": [{**step, "code": code} for step, code in zip(EPISODE, codes)], "short": SHORT,
            "facts": facts, "narrator": [request_record(b) for b in narrator_calls.requests],
            "narrator_replies": [fact_reply(n) for n in range(1, len(narrator_calls.requests) + 1)],
            "judge": request_record(judge_calls.requests[0])}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("agent_s_git", help="a git directory of simular-ai/Agent-S")
    ap.add_argument("--commit", default=DEFAULT_COMMIT)
    args = ap.parse_args()
    golden = build(args.agent_s_git, args.commit)
    OUT.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {OUT}: {len(golden['narrator'])} narrator request(s), 1 judge request")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
