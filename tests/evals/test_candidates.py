"""Candidates: listing, promote / rollback (config + journal), and candidate-eval on two real tiny GGUF models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from conway.cli.main import main
from conway.evals.candidates import MANIFEST, list_candidates, write_manifest
from conway.store.home import Home
from conway.store.journal import read_journal

REPO = Path(__file__).resolve().parents[2]


def make_candidate(home: Path, name: str, model: Path | None = None, mmproj: Path | None = None,
                   base: tuple[Path, Path] | None = None, manifest: bool = True) -> Path:
    folder = home / "candidates" / name
    (folder / "gguf").mkdir(parents=True)
    if model is None:
        (folder / "gguf" / "model.gguf").write_bytes(b"GGUF" + b"\0" * 60)
        (folder / "gguf" / "mmproj.gguf").write_bytes(b"GGUF" + b"\0" * 60)
    else:
        (folder / "gguf" / "model.gguf").write_bytes(model.read_bytes())
        (folder / "gguf" / "mmproj.gguf").write_bytes(mmproj.read_bytes())  # type: ignore[union-attr]
    if manifest:
        write_manifest(folder, {
            "name": name,
            "base_model": {"path": "/base/hf", "gguf": {"model": str(base[0]), "mmproj": str(base[1])} if base else {}},
            "recipe": {"name": "tiny_cpu"}, "metrics": {"final_loss": 0.1},
            "gguf": {"model": "gguf/model.gguf", "mmproj": "gguf/mmproj.gguf"},
            "policy": {"kind": "generic"}, "eval": {"size": [84, 84], "profile": "demo"}})
    return folder


def test_list_shows_complete_and_incomplete(initialized_home, capsys):
    make_candidate(initialized_home, "good")
    make_candidate(initialized_home, "half", manifest=False)
    items = {c["name"]: c["status"] for c in list_candidates(Home(initialized_home))}
    assert items == {"good": "complete", "half": "incomplete (no manifest)"}
    assert main(["candidates"]) == 0
    out = capsys.readouterr().out
    assert "good" in out and "incomplete" in out


def test_manifest_is_refused_when_it_names_a_missing_file(tmp_path):
    folder = tmp_path / "c"
    folder.mkdir()
    with pytest.raises(ValueError):
        write_manifest(folder, {"name": "c", "base_model": {}, "gguf": {"model": "gguf/model.gguf"}})
    assert not (folder / MANIFEST).exists()


def test_promote_and_rollback_change_the_config_and_journal_the_change(initialized_home, capsys):
    cfg = initialized_home / "config.yaml"
    cfg.write_text("policy:\n  kind: generic\n  endpoint: http://127.0.0.1:9/v1\n  temperature: 0.2\nagent:\n  repetition_limit: 5\n")
    folder = make_candidate(initialized_home, "cand1")
    assert main(["promote", "cand1"]) == 0
    data = yaml.safe_load(cfg.read_text())
    assert data["policy"]["model_path"] == str(folder / "gguf" / "model.gguf")
    assert data["policy"]["mmproj_path"] == str(folder / "gguf" / "mmproj.gguf")
    assert data["policy"]["kind"] == "generic" and "endpoint" not in data["policy"]
    assert data["policy"]["temperature"] == 0.2 and data["agent"] == {"repetition_limit": 5}
    assert main(["config", "--check"]) == 0  # the promoted config is valid
    events = [e for e in read_journal(initialized_home / "journal").events if e["kind"] == "control"]
    assert events[-1]["payload"]["request"] == "promote"
    assert events[-1]["payload"]["previous_policy"]["endpoint"] == "http://127.0.0.1:9/v1"

    assert main(["promote", "--rollback"]) == 0
    data = yaml.safe_load(cfg.read_text())
    assert data["policy"] == {"kind": "generic", "endpoint": "http://127.0.0.1:9/v1", "temperature": 0.2}
    events = [e for e in read_journal(initialized_home / "journal").events if e["kind"] == "control"]
    assert events[-1]["payload"]["request"] == "rollback" and events[-1]["payload"]["candidate"] == "cand1"
    history = [json.loads(line) for line in (initialized_home / "promotions.jsonl").read_text().splitlines()]
    assert [h["action"] for h in history] == ["promote", "rollback"]
    capsys.readouterr()
    assert main(["promote", "--rollback"]) == 1  # nothing left to undo
    assert "nothing to roll back" in capsys.readouterr().err


def test_two_promotions_roll_back_one_at_a_time(initialized_home):
    make_candidate(initialized_home, "a")
    make_candidate(initialized_home, "b")
    cfg = initialized_home / "config.yaml"
    assert main(["promote", "a"]) == 0
    assert main(["promote", "b"]) == 0
    assert "candidates/b/" in yaml.safe_load(cfg.read_text())["policy"]["model_path"]
    assert main(["promote", "--rollback"]) == 0
    assert "candidates/a/" in yaml.safe_load(cfg.read_text())["policy"]["model_path"]
    assert main(["promote", "--rollback"]) == 0
    assert "policy" not in (yaml.safe_load(cfg.read_text()) or {})


def test_promote_keeps_the_users_comments_and_rollback_restores_the_policy_as_written(initialized_home):
    cfg = initialized_home / "config.yaml"
    written = ("# my notes on this home\n"
               "policy:\n"
               "  # the old server, until the candidate proves itself\n"
               "  kind: generic\n"
               "  endpoint: http://127.0.0.1:9/v1  # port 9: nothing answers\n"
               "  temperature: 0.2\n"
               "\n"
               "# agent settings follow\n"
               "agent:\n"
               "  repetition_limit: 5  # the default is 3\n")
    cfg.write_text(written)
    make_candidate(initialized_home, "cand1")
    assert main(["promote", "cand1"]) == 0
    promoted = cfg.read_text()
    assert promoted.startswith("# my notes on this home\npolicy:\n")
    assert promoted.endswith("\n# agent settings follow\nagent:\n  repetition_limit: 5  # the default is 3\n")
    assert "candidates/cand1/" in yaml.safe_load(promoted)["policy"]["model_path"]
    assert main(["promote", "--rollback"]) == 0
    assert cfg.read_text() == written


def test_promote_and_rollback_of_a_fresh_home_give_back_its_config(initialized_home):
    cfg = initialized_home / "config.yaml"
    fresh = cfg.read_text()
    make_candidate(initialized_home, "cand1")
    assert main(["promote", "cand1"]) == 0
    assert cfg.read_text().startswith(fresh.removesuffix("{}\n"))  # init's comments stay
    assert main(["promote", "--rollback"]) == 0
    assert cfg.read_text() == fresh


# --- bad input -------------------------------------------------------------------------------


def test_promoting_an_incomplete_candidate_is_refused(initialized_home, capsys):
    make_candidate(initialized_home, "half", manifest=False)
    before = (initialized_home / "config.yaml").read_text()
    assert main(["promote", "half"]) == 1
    err = capsys.readouterr().err
    assert "incomplete" in err and "manifest.json" in err
    assert (initialized_home / "config.yaml").read_text() == before


def test_promoting_an_unknown_candidate_names_the_known_ones(initialized_home, capsys):
    make_candidate(initialized_home, "real")
    assert main(["promote", "ghost"]) == 1
    assert "real" in capsys.readouterr().err


@pytest.mark.parametrize("pool", [[], ["--workers", "2"]], ids=["serial", "pool"])
def test_candidate_eval_with_no_server_able_to_load_the_candidate(initialized_home, tmp_path, capsys, pool):
    """A GGUF that llama.cpp cannot load: exit 1 and say which model could not be loaded (in a pool: the
    workers could not load it)."""
    pytest.importorskip("llama_cpp")
    base = tmp_path / "bad-base.gguf"
    base.write_bytes(b"GGUF" + b"\x03\0\0\0" + b"\0" * 64)
    make_candidate(initialized_home, "broken", base=(base, base))
    out = tmp_path / "eval.json"
    assert main(["candidate-eval", "broken", "--samples", "2", "--output", str(out), "--quiet", *pool]) == 1
    err = capsys.readouterr().err
    assert "no llama.cpp backend could load the candidate model" in err and "broken" in err
    assert not out.exists()


def test_candidate_eval_without_manifest_is_refused(initialized_home, tmp_path, capsys):
    make_candidate(initialized_home, "half", manifest=False)
    assert main(["candidate-eval", "half", "--output", str(tmp_path / "e.json")]) == 1
    assert "incomplete" in capsys.readouterr().err


# --- candidate-eval on real models ----------------------------------------------------------


def _build(out: Path, seed: int) -> tuple[Path, Path]:
    from scripts.build import build_tiny_vlm as b
    settings = b.load_settings(REPO / "configs" / "tiny_vlm_demo.yaml")
    settings.seed = seed
    b.build(out, settings)
    return out / b.MODEL_FILE, out / b.MMPROJ_FILE


def _other_candidate(home: Path, tmp_path: Path, max_tokens: int) -> tuple[Path, Path]:
    """Candidate `other` (another seed's tiny VLM) against a base of seed 0, answers capped at `max_tokens`;
    the base's (model, mmproj)."""
    base = _build(tmp_path / "base", seed=0)
    other = _build(tmp_path / "other", seed=7)
    make_candidate(home, "other", model=other[0], mmproj=other[1], base=base)
    (home / "config.yaml").write_text(f"policy:\n  max_tokens: {max_tokens}\n")
    return base


@pytest.mark.slow
@pytest.mark.llama
def test_candidate_eval_gives_each_model_its_own_numbers_on_the_same_cases(initialized_home, tmp_path, capsys):
    pytest.importorskip("llama_cpp")
    base = _other_candidate(initialized_home, tmp_path, max_tokens=48)
    out = tmp_path / "eval.json"
    code = main(["candidate-eval", "other", "--samples", "4", "--seed", "5", "--output", str(out), "--quiet"])
    assert code in (0, 2)
    report = json.loads(out.read_text())
    s = report["summary"]
    assert report["kind"] == "candidate-eval" and s["cases"] == 4
    assert s["base"]["model"] == str(base[0]) and s["candidate"]["model"].endswith("candidates/other/gguf/model.gguf")
    assert s["base"]["model_id"] != s["candidate"]["model_id"]
    for side in ("base", "candidate"):
        assert 0 <= s[side]["hits"] <= 4 and len(s[side]["hit_rate_ci95"]) == 2
    hashes = [c["image_sha256"] for c in report["cases"]]
    from conway.observe.vision_cases import generate_case
    assert hashes == [generate_case(5, i, (84, 84), "demo").sha256 for i in range(4)]
    raw = [(c["base"]["raw_output"], c["candidate"]["raw_output"]) for c in report["cases"]]
    assert any(b != c for b, c in raw)  # two different models answered
    printed = capsys.readouterr().out
    assert "base" in printed and "candidate" in printed and "95% CI" in printed
    answered = sum(s[side]["latency_s"]["mean"] * s[side]["latency_s"]["n"] for side in ("base", "candidate"))
    assert report["duration_s"] >= answered > 0  # both models' runs are inside the time the report gives
    assert main(["report", str(out)]) == 0
    text = capsys.readouterr().out
    assert "summary: {" not in text and "difference" in text and "base      hits" in text
    evals = (initialized_home / "candidates" / "other" / "evals.jsonl").read_text().splitlines()
    assert json.loads(evals[-1])["cases"] == 4


@pytest.mark.slow
@pytest.mark.llama
def test_ctrl_c_between_the_two_runs_writes_a_partial_report_of_what_finished(initialized_home, tmp_path):
    """Item 25.2: a candidate-eval cut short keeps the finished model's cases, compares nothing, exits 130."""
    pytest.importorskip("llama_cpp")
    from conway.evals.candidates import candidate_eval
    from conway.store.home import Home

    _other_candidate(initialized_home, tmp_path, max_tokens=16)
    said: list[str] = []

    def say(line: str) -> None:  # Ctrl+C as the base model's run is about to start
        said.append(line)
        if line.startswith("candidate-eval: base"):
            raise KeyboardInterrupt

    out = tmp_path / "eval.json"
    code = candidate_eval(Home(initialized_home), "other", suite="vision-check", samples=3, seed=5, output=str(out),
                          progress=False, say=say)
    assert code == 130
    report = json.loads(out.read_text())
    assert report["status"] == "partial" and report["exit_code"] == 130
    s = report["summary"]
    assert s["cases_planned"] == 3 and s["candidate"]["cases"] == 3 and "base" not in s
    assert "candidate 3 of 3" in s["interrupted"] and "nothing is compared" in s["interrupted"]
    assert "difference" not in s and any("the report is partial" in line for line in said)


@pytest.mark.slow
@pytest.mark.llama
def test_candidate_eval_in_a_pool_of_two_workers_scores_as_the_serial_run(initialized_home, tmp_path):
    """Each run's cases in two worker processes that each load that run's model: the same answers per case."""
    pytest.importorskip("llama_cpp")
    _other_candidate(initialized_home, tmp_path, max_tokens=16)
    reports = {}
    for name, pool in (("serial", []), ("pooled", ["--workers", "2"])):
        out = tmp_path / f"{name}.json"
        assert main(["candidate-eval", "other", "--samples", "4", "--seed", "5", "--output", str(out), "--quiet",
                     *pool]) in (0, 2)
        reports[name] = json.loads(out.read_text())
    serial, pooled = reports["serial"], reports["pooled"]

    def answers(report: dict) -> list:
        return [(c["image_sha256"], c["base"]["predicted"], c["base"]["hit"], c["candidate"]["predicted"],
                 c["candidate"]["hit"]) for c in report["cases"]]

    assert answers(pooled) == answers(serial)
    for side in ("base", "candidate"):
        assert pooled["summary"][side]["hits"] == serial["summary"][side]["hits"]
        assert pooled["summary"][side]["model_id"] == serial["summary"][side]["model_id"]
    assert pooled["pool"] == {"workers": 2, "ray": None} and serial["pool"] == {"workers": 1}


def test_candidate_eval_takes_no_pool_endpoint(initialized_home, tmp_path, capsys):
    make_candidate(initialized_home, "half")
    with pytest.raises(SystemExit):
        main(["candidate-eval", "half", "--pool-endpoint", "http://127.0.0.1:9/v1", "--output", str(tmp_path / "e.json")])
    assert "unrecognized arguments: --pool-endpoint" in capsys.readouterr().err
