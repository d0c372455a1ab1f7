"""Judges compared over one rollout set: `conway sweep` with `command: judge` and a grid of judge endpoints; each
cell's best-of-N is what its picks imply, and the sweep table shows pass@1, pass@k and best-of-N per cell.

The rollout set is written as `conway rollouts` writes one (manifest, report), its rollouts without homes (no
screenshots to narrate: the judge compares them by their empty narratives); the judges are FAKE OpenAI-compatible
servers (tests/fixtures/scripted_server.py) that always name the same index, which is the point: the figures
must follow the picks exactly.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from fixtures.scripted_server import Reply, ScriptedFakeServer

from conway.cli.main import main
from conway.evals.report_render import render_report


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("CONWAY_HOME", str(tmp_path / "home"))


def _rollout_set(out: Path, outcomes: dict[str, list[str]], policy: dict | None = None) -> Path:
    out.mkdir(parents=True)
    cases = [{"index": i, "task": t, "instruction": f"do {t}", "sample": k, "seed": k, "outcome": o,
              "score": 1.0 if o == "pass" else 0.0, "reward": 1.0 if o == "pass" else 0.0, "steps": 3,
              "cost": {"prompt_tokens": 100, "generated_tokens": 10, "model_s": 1.0, "wall_s": 2.0}}
             for i, (t, k, o) in enumerate((t, k, o) for t, os in outcomes.items() for k, o in enumerate(os))]
    (out / "rollouts.json").write_text(json.dumps({"format": "conway-report/1", "kind": "tasks", "status": "fail",
                                                   "cases": cases, "summary": {}}))
    (out / "manifest.json").write_text(json.dumps({"format": "conway-rollouts/1", "report": "rollouts.json",
                                                   "samples": 2, "scoring": {"prices": None},
                                                   "policy": policy or {"kind": "generic"}}))
    return out


def _judge(index: int):
    return lambda body: Reply.text(f"<thoughts>the cleaner one</thoughts><answer>{index}</answer>")


def test_a_sweep_of_judges_over_one_rollout_set(tmp_path, capsys):
    rollouts = _rollout_set(tmp_path / "r0", {"a": ["pass", "fail"], "b": ["fail", "pass"], "c": ["fail", "fail"]})
    with ScriptedFakeServer(responder=_judge(1)) as first, ScriptedFakeServer(responder=_judge(2)) as second:
        sweep = tmp_path / "sweep.yaml"
        sweep.write_text(yaml.safe_dump({"command": "judge", "args": [str(rollouts)],
                                         "overrides": ["policy=generic", "policy.structured_output=none"],
                                         "grid": {"endpoint": [first.base_url, second.base_url]}}))
        code = main(["sweep", str(sweep), "--output", str(tmp_path / "out")])
        assert len(first.chat_requests) == len(second.chat_requests) == 3  # one comparison per task, no narration
    assert code == 0
    table = json.loads((tmp_path / "out" / "sweep.json").read_text())
    by_endpoint = {c["settings"]["endpoint"]: c for c in table["cases"]}
    one, two = by_endpoint[first.base_url], by_endpoint[second.base_url]
    # picks: the first judge a:0 (pass) b:0 (fail) c:0; the second a:1 (fail) b:1 (pass) c:1
    assert (one["successes"], one["cases"]) == (two["successes"], two["cases"]) == (1, 3)
    assert one["pass1"] == two["pass1"] == round(2 / 6, 4) and one["passk"] == round(2 / 3, 4)
    assert one["best_of_n"] == round(1 / 3, 4)
    cell = json.loads((tmp_path / "out" / one["report"]).read_text())
    assert cell["kind"] == "best-of-n" and [c["pick"] for c in cell["cases"]] == [0, 0, 0]
    assert cell["summary"]["agreement"]["hits"] == 1 and cell["summary"]["agreement"]["n"] == 2
    text = render_report(tmp_path / "out" / "sweep.json")
    assert "pass@1" in text and "best-of-N" in text and "33.3%" in text


def test_mixed_agents_are_judged_together(tmp_path, capsys):
    """Two sets of the same tasks (two agents); the judge compares all four rollouts of a task and names the third:
    the second set's first rollout."""
    one = _rollout_set(tmp_path / "uitars", {"a": ["fail", "fail"], "b": ["pass", "fail"]},
                       {"kind": "uitars", "model_id": "ui-tars"})
    two = _rollout_set(tmp_path / "opencua", {"a": ["pass", "fail"], "b": ["fail", "fail"]},
                       {"kind": "opencua", "model_id": "opencua"})
    with ScriptedFakeServer(responder=_judge(3)) as judge:
        code = main(["judge", str(one), str(two), "policy=generic", f"policy.endpoint={judge.base_url}",
                     "policy.structured_output=none", "--output", str(tmp_path / "mixed.json"), "--quiet"])
        system = judge.chat_requests[0]["messages"][0]["content"]
    assert code == 0 and "judging 4 sequences" in system
    report = json.loads((tmp_path / "mixed.json").read_text())
    o = report["figures"]["overall"]
    assert (o["pass1"]["hits"], o["pass1"]["n"]) == (2, 8) and (o["passk"]["hits"], o["passk"]["n"]) == (2, 2)
    assert (o["best_of_n"]["hits"], o["best_of_n"]["n"]) == (1, 2)  # a's third is opencua's pass; b's is a fail
    assert [c["pick"] for c in report["cases"]] == [2, 2]
    sides = report["cases"][0]["rollouts"]
    assert [(s["set"].split(": ")[1], s["outcome"]) for s in sides] == [
        ("uitars", "fail"), ("uitars", "fail"), ("opencua", "pass"), ("opencua", "fail")]
    by_set = report["by_set"]
    assert [(g["picked"], g["picked_passed"], g["pass1"]["hits"]) for g in by_set.values()] == [(0, 0, 1), (2, 1, 1)]
    text = render_report(tmp_path / "mixed.json")
    assert "set 2: opencua (opencua): pass@1 1/4; picked 2 time(s), 1 of them passing" in text
    capsys.readouterr()
    assert main(["judge", str(one), str(two), "--mock"]) == 1
    assert "give --output FILE" in capsys.readouterr().err


def test_a_small_judge_can_be_bounded_and_held_to_the_answer_s_format_each_a_named_deviation(tmp_path):
    """--max-tokens and --grammar (for a model too small for S3's unbounded, free-form answer: the tiny test VLM):
    the comparison goes with the grammar (which bounds it), and the report lists both deviations."""
    from conway.evals.judge.run import choice_grammar

    rollouts = _rollout_set(tmp_path / "r0", {"a": ["pass", "fail"]})
    with ScriptedFakeServer(responder=_judge(2)) as judge:
        assert main(["judge", str(rollouts), "policy=generic", f"policy.endpoint={judge.base_url}",
                     "policy.structured_output=none", "--quiet", "--max-tokens", "16", "--grammar"]) == 0
        body = judge.chat_requests[0]
    assert body["grammar"] == choice_grammar(2) and "max_tokens" not in body and body["temperature"] == 0.0
    assert '("1" | "2")' in choice_grammar(2) and "[1-9] [0-9]*" in choice_grammar(12)
    case = json.loads((rollouts / "judged.json").read_text())["cases"][0]
    assert case["pick"] == 1 and any("max_tokens 16" in d for d in case["deviations"])
    assert any("grammar" in d for d in case["deviations"])


def test_the_judge_on_a_real_ray_cluster_gives_the_serial_report(tmp_path, tmp_path_factory):
    pytest.importorskip("ray", reason="the ray extra is not installed")
    from helpers.ray_cluster import conway_process, ray_cluster

    rollouts = _rollout_set(tmp_path / "r0", {"a": ["pass", "fail"], "b": ["fail", "pass"], "c": ["fail", "fail"]})
    with ScriptedFakeServer(responder=_judge(2)) as judge:
        common = ["policy=generic", f"policy.endpoint={judge.base_url}", "policy.structured_output=none", "--quiet"]
        assert main(["judge", str(rollouts), *common, "--output", str(tmp_path / "serial.json")]) == 0
        with ray_cluster(tmp_path_factory.mktemp("ray")) as address:  # the driver in a process of its own
            done = conway_process("--home", str(tmp_path / "home"), "judge", str(rollouts), *common, "--output",
                                  str(tmp_path / "ray.json"), "--workers", "2", "--ray", address)
    assert (tmp_path / "ray.json").exists(), done.stdout[-2000:] + done.stderr[-2000:]
    serial, ray = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("serial", "ray"))
    assert ray["pool"]["ray"] == address
    rates = ("pass1", "passk", "best_of_n", "agreement")
    assert [ray["summary"][k] for k in rates] == [serial["summary"][k] for k in rates]
    assert [c["pick"] for c in ray["cases"]] == [c["pick"] for c in serial["cases"]] == [1, 1, 1]
    assert (ray["summary"]["best_of_n"]["hits"], ray["summary"]["agreement"]["hits"]) == (1, 1)
