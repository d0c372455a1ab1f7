"""The one eval runner and the one exit-code table: every suite judges alike and writes its report alike."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from fixtures.grounding_fixture_server import GroundingFixtureServer
from fixtures.vision_fixture_server import VisionFixtureServer
from helpers.grounding_data import write_dataset

from conway.cli.main import build_parser, main
from conway.errors import ExitCode
from conway.evals.report import Report
from conway.evals.runner import run_cases, run_suite


def test_a_model_that_never_answers_exits_the_same_code_from_vision_and_grounding_check(tmp_path: Path):
    dataset = tmp_path / "screenspot"
    write_dataset(dataset)
    common = ["--quiet", "policy=generic", "policy.structured_output=none"]
    with VisionFixtureServer(mode="garbage") as server:
        vision = main(["vision-check", "--samples", "3", "--size", "640x400", "--output", str(tmp_path / "v.json"),
                       "--endpoint", server.base_url, *common])
    with GroundingFixtureServer({}, token_limit=100_000) as server:  # knows no instruction: prose every time
        grounding = main(["grounding-check", "--dataset", str(dataset), "--output", str(tmp_path / "g.json"),
                          "--endpoint", server.base_url, *common])
    assert vision == grounding == ExitCode.NO_VALID_DECISION == 3
    for name in ("v.json", "g.json"):
        data = json.loads((tmp_path / name).read_text())
        assert data["status"] == "no valid decision" and data["exit_code"] == 3
        assert data["summary"]["no_valid_decision"].startswith("no valid decision in ")
    g = json.loads((tmp_path / "g.json").read_text())["summary"]
    assert g["no_valid_decision"] == f"no valid decision in {g['cases']} case(s): {g['cases']} × unparseable"


@pytest.mark.parametrize("command", ["vision-check", "grounding-check", "acceptance-check", "candidate-eval"])
def test_every_eval_command_says_its_exit_codes_from_the_table(command: str):
    sub = next(a for a in build_parser()._actions if getattr(a, "choices", None) and command in a.choices)
    text = " ".join(sub.choices[command].description.split())
    for code in (ExitCode.PASSED, ExitCode.NOT_PASSED, ExitCode.NO_VALID_DECISION, ExitCode.SETUP_ERROR):
        assert f" {code:d} " in text, (command, code, text)
    assert "3 the model never produced a valid decision" in text and "1 setup errors" in text


class SlowFirst:
    """A suite whose early cases finish last: the records must still come back in case order."""

    kind = "fake-check"

    def __init__(self) -> None:
        self.threads: set[str] = set()

    def run_case(self, policy: Any, case: int) -> dict[str, Any]:
        self.threads.add(threading.current_thread().name)
        time.sleep(0.05 * (4 - case))
        return {"case": case, "hit": case % 2 == 0}

    def summarize(self, records: list[dict[str, Any]], wall_s: float) -> dict[str, Any]:
        return {"hits": sum(1 for r in records if r["hit"]), "cases": len(records)}

    def verdict(self, records: list[dict[str, Any]], summary: dict[str, Any]) -> tuple[ExitCode, str]:
        return (ExitCode.PASSED, "pass") if summary["hits"] == len(records) else (ExitCode.NOT_PASSED, "fail")


def test_records_come_back_in_case_order_and_stream_as_they_finish():
    suite = SlowFirst()
    seen: list[int] = []
    records, wall = run_cases(suite, None, [0, 1, 2, 3], parallel=4, progress=False,
                              on_record=lambda r: seen.append(r["case"]))
    assert [r["case"] for r in records] == [0, 1, 2, 3]
    assert seen == [3, 2, 1, 0] and wall > 0  # streamed in completion order
    serial = SlowFirst()
    records, _ = run_cases(serial, None, [2, 0], progress=False)
    assert [r["case"] for r in records] == [2, 0]
    assert serial.threads == {threading.current_thread().name}  # one at a time runs here, no pool


def test_the_report_carries_the_verdict_and_a_failed_run_writes_none(tmp_path: Path):
    class Policy:
        model_id = "fake-model"

    out = tmp_path / "r.json"
    result = run_suite(SlowFirst(), Policy(), [0, 1], Report("fake-check", out, argv=["x"], config=None),
                       progress=False, extra=lambda res: {"extra_field": len(res.records)})
    data = json.loads(out.read_text())
    assert result.code == ExitCode.NOT_PASSED and data["exit_code"] == 2 and data["status"] == "fail"
    assert data["cases"] == [{"case": 0, "hit": True}, {"case": 1, "hit": False}]
    assert data["summary"] == {"hits": 1, "cases": 2} and data["extra_field"] == 2
    assert data["model_id"] == "fake-model"

    class Broken(SlowFirst):
        def run_case(self, policy: Any, case: int) -> dict[str, Any]:
            raise RuntimeError("the harness broke")

    with pytest.raises(RuntimeError):
        run_suite(Broken(), Policy(), [0], Report("fake-check", tmp_path / "b.json", argv=None, config=None),
                  progress=False)
    assert not (tmp_path / "b.json").exists()  # a report exists only for a run that completed



def test_the_runner_records_the_pool_and_reads_the_resume_for_every_command(tmp_path: Path):
    """The report's `pool` and `--resume` are the runner's: only the cases a partial report lacks run again,
    and a report that does not fit is refused before any case runs."""
    from conway.errors import UserError

    class Counting(SlowFirst):
        def run_case(self, policy: Any, case: int) -> dict[str, Any]:
            self.ran.append(case)
            return {"case": case, "hit": True}

    def suite() -> Counting:
        s = Counting()
        s.ran = []
        return s

    def report(name: str) -> Report:
        return Report("fake-check", tmp_path / name, argv=["x"], config=None, parameters={"parallel": 2})

    first = suite()
    run_suite(first, None, [0, 1, 2], report("done.json"), parallel=2, progress=False)
    done = json.loads((tmp_path / "done.json").read_text())
    assert done["pool"] == {"workers": 1, "parallel": 2} and sorted(first.ran) == [0, 1, 2]
    partial = {**done, "status": "partial", "case_positions": [1], "cases": [{"case": 1, "hit": True, "kept": 1}]}
    (tmp_path / "partial.json").write_text(json.dumps(partial))

    again = suite()
    result = run_suite(again, None, [0, 1, 2], report("resumed.json"), progress=False,
                       resume=str(tmp_path / "partial.json"))
    data = json.loads((tmp_path / "resumed.json").read_text())
    assert again.ran == [0, 2] and [r["case"] for r in result.records] == [0, 1, 2]
    assert data["cases"][1] == {"case": 1, "hit": True, "kept": 1}
    assert data["summary"]["resumed"] == "1 case(s) kept from the resumed report"
    assert data["pool"] == {"workers": 1, "parallel": 1}

    refused = suite()
    with pytest.raises(UserError, match="nothing to resume"):
        run_suite(refused, None, [0, 1, 2], report("refused.json"), progress=False,
                  resume=str(tmp_path / "done.json"))
    assert refused.ran == [] and not (tmp_path / "refused.json").exists()


def test_a_pool_builds_its_own_policies_so_suite_policy_builds_none(monkeypatch, tmp_path: Path):
    from conway.evals.pool import PolicyRecipe, Pool, PoolSpec
    from conway.evals.runner import suite_policy
    from conway.policies import factory

    def build_policy(config: Any, home: Any) -> Any:
        raise AssertionError("a pool's policy is built in its workers")

    monkeypatch.setattr(factory, "build_policy", build_policy)
    pool = Pool(PoolSpec(workers=2), PolicyRecipe(None, str(tmp_path)))  # type: ignore[arg-type]
    with suite_policy(None, None, None, pool) as policy:  # type: ignore[arg-type]
        assert policy is None

    class Given:
        closed = False

        def close(self) -> None:
            self.closed = True

    given = Given()
    with suite_policy(None, None, given, pool) as policy:  # type: ignore[arg-type]
        assert policy is given
    assert not given.closed  # the caller's policy is the caller's to close
    with pytest.raises(AssertionError, match="built in its workers"):  # no pool: the configured one is built here
        with suite_policy(None, None):  # type: ignore[arg-type]
            pass

def test_candidate_eval_stops_with_exit_3_when_a_model_answers_no_case(initialized_home: Path):
    from fixtures.scripted_server import Reply, ScriptedFakeServer

    from conway.errors import NoValidDecision
    from conway.evals.candidates import _run_one
    from conway.evals.vision_check import VisionSuite
    from conway.store.home import Home

    fail = Reply(status=500, body={"error": {"message": "model crashed"}})
    with ScriptedFakeServer(replies=[fail]) as fake:
        with pytest.raises(NoValidDecision) as err:
            _run_one(Home(initialized_home), "candidate",
                     ["policy=generic", f"policy.endpoint={fake.base_url}", "policy.structured_output=none"],
                     lambda cfg: VisionSuite(cfg, 0, (64, 64)), [0, 1], False)
        assert len(fake.chat_requests) >= 2  # both cases were asked
    assert err.value.exit_code == ExitCode.NO_VALID_DECISION == 3
    assert "the candidate model answered no case: model request failed" in str(err.value)


class SlowAfter(VisionFixtureServer):
    """Answers the first `quick` requests at once, every later one only after a minute."""

    def __init__(self, quick: int):
        super().__init__(mode="centre")
        self.quick, self.answered, self._mine = quick, 0, threading.local()

    def answer(self, body: dict[str, Any]) -> str:
        with self._lock:
            self.answered += 1
            self._mine.n = self.answered  # this request's number, read by delay_s in the same thread
        return super().answer(body)

    @property
    def delay_s(self) -> float:
        return 0.0 if getattr(self._mine, "n", 0) <= self.quick else 60.0

    @delay_s.setter
    def delay_s(self, value: float) -> None:
        pass


@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("parallel", ["1", "3"])
def test_ctrl_c_ends_an_eval_at_once_with_a_partial_report(initialized_home: Path, tmp_path: Path, how, parallel):
    """Item 25.2: the cases that finished are reported, marked partial, exit 130; the queued ones never run."""
    out = tmp_path / "v.json"
    with SlowAfter(quick=2) as server:
        env = {**os.environ, "CONWAY_HOME": str(initialized_home)}
        proc = subprocess.Popen([sys.executable, "-m", "conway.cli.main", "vision-check", "--samples", "12",
                                 "--size", "320x200", "--parallel", parallel, "--output", str(out), "--quiet",
                                 "--endpoint", server.base_url, "policy=generic", "policy.structured_output=none"],
                                cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, text=True)
        try:
            deadline = time.monotonic() + 60
            while len(server.requests) < 3 and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.05)  # the third request is a slow one: both quick ones have answered
            assert len(server.requests) >= 3, proc.communicate(timeout=10)
            time.sleep(1.5)
            sent = time.monotonic()
            proc.send_signal(how)
            code = proc.wait(timeout=30)  # the slow answers would take a minute each
            latency = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        out_text, err = proc.communicate()
    assert code == ExitCode.INTERRUPTED == 130, err
    assert "2 of 12 case(s) finished: the report is partial" in out_text + err
    assert "Traceback" not in err, err
    assert latency < 15, latency
    data = json.loads(out.read_text())
    assert data["status"] == "partial" and data["exit_code"] == 130
    assert len(data["cases"]) == 2 and all(c.get("hit") for c in data["cases"])
    assert "2 of 12 case(s) finished" in data["summary"]["interrupted"]
