"""Best of N end to end: rollouts on real desktops that pass some tasks and not others, a judge that narrates
each rollout and picks one per task, and the report's figures exactly what the rollouts and the picks imply;
the same from one worker and from two.

Real desktops (bubblewrap, Xvfb, a session bus), the real loop, the tasks' own checkers, the real HTTP client.
Two FAKE OpenAI-compatible servers (tests/fixtures/scripted_server.py) stand in for the models, because the point
is what reaches them and what Conway makes of their answers: the acting "model" passes a task or not by the
task's mark and the sample's seed, the judge "model" answers the narrator with a fixed fact and names the rollout
the test chose per task.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.scripted_server import Reply, ScriptedFakeServer
from helpers.task_desktop import need_desktop
from helpers.task_suites import ok_task

from conway.cli.main import main
from conway.evals.judge import agent_s3

WRITE_OK = {"thought": "", "action": {"type": "shell", "command": "echo ok > ~/out.txt"}}
WAIT = {"thought": "", "action": {"type": "wait", "seconds": 0.1}}
PASSES = {"a": {0, 1}, "b": {1}, "c": set()}
"""Which samples pass each task: a always, b its second only, c never (a rollout's seed is seed + K * the task's
index + sample, so with K = 2 its sample is the seed's parity)."""
PICKS = {"a": 2, "b": 1, "c": 1}
"""The judge's 1-based pick per task: a's second (passed), b's first (failed: a wrong pick), c's first."""


def _policy(body: dict) -> Reply:
    text = json.dumps(body["messages"])
    task = next(t for t in PASSES if f"mark-{t}-" in text)
    return Reply.text(json.dumps(WRITE_OK if body.get("seed", 0) % 2 in PASSES[task] else WAIT))


def _judge(body: dict) -> Reply:
    system = body["messages"][0]["content"]
    if system == agent_s3.prompt("narrator_system.txt"):
        return Reply.text("<thoughts>compared</thoughts>\n<answer>- the screen did not change</answer>",
                          usage={"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107})
    task = next(t for t in PICKS if f"mark-{t}-" in system)
    return Reply.text(f"<thoughts>rollout {PICKS[task]} is cleaner</thoughts>\n<answer>{PICKS[task]}</answer>",
                      usage={"prompt_tokens": 300, "completion_tokens": 9, "total_tokens": 309})


def _suite(tmp_path: Path) -> Path:
    folder = tmp_path / "suite" / "examples" / "os"
    folder.mkdir(parents=True)
    for t in PASSES:
        task = ok_task(t)
        task["instruction"] = f"Write ok into ~/out.txt (mark-{t}-)."
        (folder / f"{t}.json").write_text(json.dumps(task))
    return tmp_path / "suite"


def _run(tmp_path: Path, name: str, acting: str, judge: str, *pool: str, inline: bool = False) -> dict:
    """The rollouts, then the judge: its own command, or (`inline`) `conway rollouts --judge-endpoint`."""
    home, out = tmp_path / "home", tmp_path / name
    suite = tmp_path / "suite" if (tmp_path / "suite").exists() else _suite(tmp_path)
    assert main(["--home", str(home), "rollouts", str(suite), "policy=generic", f"policy.endpoint={acting}",
                 "policy.structured_output=none", "--samples", "2", "--output", str(out), "--max-steps", "1",
                 "--quiet", "--price-in", "1", "--price-out", "2", *pool,
                 *(["--judge-endpoint", judge] if inline else [])]) == 0
    if not inline:
        assert main(["--home", str(home), "judge", str(out), "policy=generic", f"policy.endpoint={judge}",
                     "policy.structured_output=none", "--quiet", *pool]) == 0
    return json.loads((out / "judged.json").read_text())


@pytest.mark.desktop
def test_best_of_n_figures_are_what_the_rollouts_and_picks_imply_on_one_and_two_workers(tmp_path, capsys):
    need_desktop()
    with ScriptedFakeServer(responder=_policy) as acting, ScriptedFakeServer(responder=_judge) as judge:
        serial = _run(tmp_path, "serial", acting.base_url, judge.base_url)
        asked = list(judge.chat_requests)
        # judged again: the narratives kept beside the rollouts are read back, only the comparisons are asked
        assert main(["--home", str(tmp_path / "home"), "judge", str(tmp_path / "serial"), "policy=generic",
                     f"policy.endpoint={judge.base_url}", "policy.structured_output=none", "--quiet", "--output",
                     str(tmp_path / "again.json")]) == 0
        assert len(judge.chat_requests) == len(asked) + 3
        again = json.loads((tmp_path / "again.json").read_text())
        assert again["figures"]["overall"]["best_of_n"] == serial["figures"]["overall"]["best_of_n"]
        pooled = _run(tmp_path, "pooled", acting.base_url, judge.base_url, "--workers", "2", inline=True)
    for report in (serial, pooled):
        o = report["figures"]["overall"]
        assert (o["pass1"]["hits"], o["pass1"]["n"]) == (3, 6)
        assert (o["passk"]["hits"], o["passk"]["n"]) == (2, 3)
        assert (o["best_of_n"]["hits"], o["best_of_n"]["n"]) == (1, 3)
        assert (o["agreement"]["hits"], o["agreement"]["n"]) == (1, 2)
        assert {c["task"]: c["pick"] for c in report["cases"]} == {"a": 1, "b": 0, "c": 0}  # samples
        tasks = report["figures"]["tasks"]
        assert [r["outcome"] for r in tasks["b"]["rollouts"]] == ["fail", "pass"]
        assert tasks["a"]["best"] and not tasks["b"]["best"] and tasks["b"]["agrees"] is False
        # what it cost: the acting fake's usage (10 in, 5 out per decision), one step per rollout, priced
        assert tasks["a"]["cost"]["tokens_in"] == 20 and tasks["a"]["cost"]["tokens_out"] == 10
        assert tasks["a"]["cost"]["steps"] == 2 and tasks["a"]["cost"]["money"] == (20 * 1 + 10 * 2) / 1e6
        # the judge's spend: a narration per rollout's step, then one comparison
        assert report["cases"][0]["judge_cost"]["tokens_in"] == 2 * 100 + 300
        assert o["cost_per_success"]["best_of_n"]["tokens_in"] == 60 + 3 * 500
    assert serial["figures"]["tasks"].keys() == pooled["figures"]["tasks"].keys()
    # what the judge was asked: per task two narrations (each the shell step, its screenshots), then the comparison
    assert len(asked) == 3 * 3
    narration = next(b for b in asked if b["messages"][0]["content"] == agent_s3.prompt("narrator_system.txt"))
    assert narration["temperature"] == 0.0 and "max_tokens" not in narration and "seed" not in narration
    content = narration["messages"][1]["content"]
    assert content[2]["text"] in ('Agent Action: # shell: {"command": "echo ok > ~/out.txt"}',
                                  "Agent Action: import time; time.sleep(0.1)")
    comparison = next(b for b in asked if "mark-a-" in json.dumps(b["messages"][0]))
    facts = [m for m in comparison["messages"][1:] if m["content"][0].get("text", "").startswith("Fact captions")]
    assert [f["content"][1]["text"] for f in facts] == ["Fact Caption from Screenshot 1: - the screen did not change"] * 2
    # the requests are kept as sent; the narratives beside each rollout; conway report says it all
    case = serial["cases"][0]
    kept = Path(case["requests"]).read_text().splitlines()
    assert Path(case["requests"]).parent.parent == tmp_path / "serial" / "judged.requests"
    assert len(kept) == 3 and json.loads(kept[-1])["answer"].endswith("<answer>2</answer>")
    assert len(list((tmp_path / "serial" / "rollouts.tasks").glob("*/narrative.jsonl"))) == 6
    capsys.readouterr()
    assert main(["report", str(tmp_path / "serial" / "judged.json")]) == 0
    text = capsys.readouterr().out
    assert "best-of-N (the judged rollout passed): 1/3" in text and "pass@k (any rollout passed): 2/3" in text
    assert "a: sample 1" in text
    # conway view draws each task's rollouts side by side, the pick marked, their last screens served
    site = tmp_path / "site"
    assert main(["--home", str(tmp_path / "home"), "view", str(tmp_path / "serial" / "judged.json"), "--output",
                 str(site)]) == 0
    page = (site / "index.html").read_text()
    assert "best-of-N (the pick passed)" in page and "1/3 = 33.3%" in page
    assert "sample 1 · pass · the judge&#x27;s pick" in page or "sample 1 · pass · the judge's pick" in page
    assert page.count('class="picked"') == 3 and page.count('class="rollout"') == 3
    assert len(list((site / "img").glob("case-*-*.jpg"))) == 6
    assert page.count("Fact Caption from Screenshot 1: - the screen did not change") == 6  # what the judge read
