"""`scripts/demos/learning_demo.py --agent` (issue 16 §2): practice through the real loop on Xvfb, labels from Conway's
acceptance checks and hindsight, export, train, convert, held-out evaluation through the loop, promotion rule.

The end-to-end test runs the whole pipeline at a tiny size (2 practice tasks, 2 training steps, 1 held-out task)
with the real parts: Xvfb, the Tk board, `conway start --execute` with the GUI tool and llama.cpp, the trainer
and the GGUF converter. The numbers are meaningless at this size; the artefacts and the rule are the point.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.desktop_fixtures import need

REPO = Path(__file__).resolve().parents[2]
DEMO = "scripts.demos.learning_demo"


def _demo(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", DEMO, *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})


def test_the_promotion_rule_compares_wilson_intervals_of_verified_runs():
    from scripts.demos.board_runs import compare, snap
    runs = lambda ok, n: [{"verified": i < ok} for i in range(n)]  # noqa: E731
    s = compare(runs(0, 30), runs(29, 30))
    assert s["base"]["ci95"] == [0.0, 0.1135] and s["candidate"]["ci95"] == [0.8333, 0.9941]
    assert s["intervals_separated"] and s["paired"]["only_candidate"] == 29
    assert not compare(runs(10, 30), runs(18, 30))["intervals_separated"]  # better, but the intervals overlap
    assert not compare(runs(20, 30), runs(5, 30))["intervals_separated"]
    assert snap([43, 2, 76, 29], 28, (84, 84)) == (70, 14)  # the token-cell centre inside the box
    assert snap([43, 2, 76, 29], 0, (84, 84)) == (59.5, 15.5)  # no grid: the box centre


@pytest.mark.parametrize("args, message", [
    (["--buttons", "0"], "--buttons must be 1-4, not 0"),
    (["--buttons", "5"], "--buttons must be 1-4, not 5"),
    (["--tasks", "0"], "--tasks must be 1-10000, not 0"),
    (["--eval-tasks", "-3"], "--eval-tasks must be 1-10000, not -3"),
    (["--train-seconds", "0"], "--train-seconds must be positive"),
])
def test_bad_counts_are_one_line_errors(args, message):
    done = _demo("--agent", *args, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [done.stderr.strip()] and message in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


def test_a_missing_xvfb_says_how_to_install_it(tmp_path):
    bare = tmp_path / "bin"
    bare.mkdir()  # a PATH without Xvfb
    done = _demo("--agent", "--work", str(tmp_path / "w"), env={"PATH": str(bare)}, timeout=60)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "Xvfb is not installed" in done.stderr and "apt-get install xvfb" in done.stderr
    assert not (tmp_path / "w").exists()  # refused before anything ran


def test_a_base_folder_without_the_model_is_refused(tmp_path):
    need("Xvfb", "xvfb")
    done = _demo("--agent", "--base", str(tmp_path), timeout=60)
    assert done.returncode == 1 and "lacks tiny-vlm.gguf" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
@pytest.mark.llama
def test_the_agent_pipeline_end_to_end_at_a_tiny_size(tmp_path):
    need("Xvfb", "xvfb")
    pytest.importorskip("llama_cpp")
    pytest.importorskip("peft")
    work = tmp_path / "w"
    done = _demo("--agent", "--work", str(work), "--tasks", "2", "--eval-tasks", "1", "--train-seconds", "120",
                 "train.max_steps=2", "train.short_prompt_steps=0", "train.warmup_steps=1", "train.batch_size=2",
                 "train.eval_every=2", "train.eval_generate=0", "train.early_stop_hits=null", "train.log_every=1")
    out = done.stdout
    assert done.returncode in (0, 2), done.stdout[-3000:] + done.stderr[-2000:]
    assert "practice 2/2" in out and "base 1/1" in out and "candidate 1/1" in out  # progress throughout
    home = work / "home"

    # the journal: every session (2 practice + 1 base + 1 candidate) carries Conway's acceptance result
    events = [json.loads(line) for f in sorted((home / "journal").glob("*.jsonl"))
              for line in f.read_text().splitlines() if line.strip()]
    checks = [e["payload"] for e in events if e["kind"] == "session" and e["payload"].get("event") == "acceptance"]
    assert len(checks) == 4 and all(c["executed"] and c["verified"] in (True, False) for c in checks)

    # labels and exported rows: from the acceptance check; failed steps relabelled in hindsight with the box
    labels = [json.loads(line) for line in (home / "labels.jsonl").read_text().splitlines()]
    assert len(labels) == 2 and all(lab["source"] == "task-check" and lab["target_box"] for lab in labels)
    assert all(lab["hindsight"] == (lab["success"] == "failure") for lab in labels)
    from conway.config import load_config
    from conway.experience.conversation import step_context
    from conway.store.provenance import prompt_record
    from datasets import load_from_disk
    rows = load_from_disk(str(work / "dataset"))
    assert len(rows) == 2 and set(rows["label_source"]) == {"task-check"}
    for row in rows:
        rec = json.loads(row["record"])
        assert row["hindsight"] == (row["success"] == "failure")
        if row["hindsight"]:  # the target turn clicks inside the target's box from the board's ready log
            x0, y0, x1, y1 = rec["labels"]["target_box"]
            act = json.loads(row["target"])["action"]
            assert act["type"] == "click" and x0 <= act["x"] <= x1 and y0 <= act["y"] <= y1
        # the training prompt is the loop's own: the rebuilt prompt hashes to the journaled one
        png = io.BytesIO()
        row["image"].save(png, format="PNG")
        ctx = step_context(rec, png.getvalue(), load_config(None, []))
        assert prompt_record(ctx.parts)["prompt_sha256"] == rec["prompt"]["sha256"]

    # the candidate: complete (manifest last), GGUF + mmproj
    manifest = json.loads((home / "candidates" / "agent" / "manifest.json").read_text())
    assert manifest and (home / "candidates" / "agent" / "gguf").is_dir()

    # the report: verified rates with Wilson intervals for both, the same held-out task, the rule applied
    report = json.loads((work / "agent-eval.json").read_text())
    s = report["summary"]
    assert report["kind"] == "agent-eval" and report["seed"] == 1000
    for side in ("base", "candidate"):
        assert s[side]["tasks"] == 1 and len(s[side]["ci95"]) == 2 and 0 <= s[side]["ci95"][0] <= s[side]["ci95"][1]
    assert len(report["cases"]) == 1 and report["cases"][0]["base"]["session"] != report["cases"][0]["candidate"]["session"]
    promoted = (home / "promotions.jsonl").exists()
    assert promoted == s["intervals_separated"] == (done.returncode == 0)
    assert not promoted  # with one task per side the intervals always overlap
    assert "not promoted: the candidate's interval" in out and "95% CI" in out
