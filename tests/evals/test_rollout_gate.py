"""The promotion gate for candidates trained on rollouts: refused when the rollouts came from another policy than
the one the home serves (unless --force, recorded), or when no candidate-eval on held-out tasks put the candidate
above its base; accepted for a chain of on-policy rounds that starts at the served policy."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from conway.cli.main import main
from conway.config import load_config
from conway.evals.candidates import write_manifest
from conway.evals.rollouts import file_identity, policy_identity, same_policy


def make_candidate(home: Path, name: str) -> Path:
    folder = home / "candidates" / name
    (folder / "gguf").mkdir(parents=True)
    for f in ("model.gguf", "mmproj.gguf"):
        (folder / "gguf" / f).write_bytes(b"GGUF" + name.encode())
    write_manifest(folder, {"name": name, "base_model": {"path": "/base/hf", "gguf": {}},
                            "gguf": {"model": "gguf/model.gguf", "mmproj": "gguf/mmproj.gguf"},
                            "policy": {"kind": "generic"}})
    return folder


def _serve(home: Path, model: Path) -> None:
    (home / "config.yaml").write_text(f"policy:\n  kind: generic\n  model_path: {model}\n", encoding="utf-8")


def _trained_on(folder: Path, policy: dict) -> None:
    """The candidate's manifest names rollouts of `policy` (as training/grpo.py writes it)."""
    path = folder / "manifest.json"
    data = json.loads(path.read_text())
    data["rollouts"] = {"stage": "grpo", "path": "/r", "policy": policy, "rewards": {"t": [1, 0]}}
    path.write_text(json.dumps(data))


def _evaluated(folder: Path, separated: bool) -> None:
    with open(folder / "evals.jsonl", "a") as fh:
        fh.write(json.dumps({"suite": "tasks", "intervals_separated": separated, "report": "eval.json"}) + "\n")


def test_identity_is_the_model_files_hash(tmp_path):
    a, b = tmp_path / "a.gguf", tmp_path / "b.gguf"
    a.write_bytes(b"GGUF-a")
    b.write_bytes(b"GGUF-b")
    ia = policy_identity(load_config(None, ["policy=generic", f"policy.model_path={a}"]))
    assert ia["model"]["sha256"] == file_identity(a)["sha256"] and ia["model"]["size"] == 6
    moved = tmp_path / "moved.gguf"
    moved.write_bytes(a.read_bytes())
    assert same_policy(ia, policy_identity(load_config(None, ["policy=generic", f"policy.model_path={moved}"])))
    assert not same_policy(ia, policy_identity(load_config(None, ["policy=generic", f"policy.model_path={b}"])))


def test_a_candidate_trained_on_another_policys_rollouts_is_refused_unless_forced(initialized_home, tmp_path, capsys):
    served, other = tmp_path / "served.gguf", tmp_path / "other.gguf"
    served.write_bytes(b"GGUF-served")
    other.write_bytes(b"GGUF-other")
    _serve(initialized_home, served)
    folder = make_candidate(initialized_home, "rl1")
    _trained_on(folder, {"kind": "generic", "model": file_identity(other)})
    _evaluated(folder, True)
    capsys.readouterr()
    assert main(["promote", "rl1"]) == 1
    err = capsys.readouterr().err
    assert "rollouts of another policy" in err and "--force" in err and len(err.strip().splitlines()) == 1
    assert yaml.safe_load((initialized_home / "config.yaml").read_text())["policy"]["model_path"] == str(served)
    assert main(["promote", "rl1", "--force"]) == 0
    assert "forced past the gate" in capsys.readouterr().out
    entry = json.loads((initialized_home / "promotions.jsonl").read_text().splitlines()[-1])
    assert any("another policy" in r for r in entry["forced_past"])


def test_on_policy_rounds_pass_once_an_eval_on_tasks_separates_them(initialized_home, tmp_path, capsys):
    served = tmp_path / "served.gguf"
    served.write_bytes(b"GGUF-served")
    _serve(initialized_home, served)
    r0 = make_candidate(initialized_home, "iter-r0")
    _trained_on(r0, {"kind": "generic", "model": file_identity(served)})
    r1 = make_candidate(initialized_home, "iter-r1")
    (r1 / "gguf" / "model.gguf").write_bytes(b"GGUF-r1")  # a model of its own (r0's stays what r1 rolled out of)
    (r0 / "gguf" / "model.gguf").write_bytes(b"GGUF-r0")
    _trained_on(r1, {"kind": "generic", "model": file_identity(r0 / "gguf" / "model.gguf")})
    capsys.readouterr()
    assert main(["promote", "iter-r1"]) == 1
    assert "no candidate-eval on held-out tasks" in capsys.readouterr().err
    _evaluated(r1, False)
    assert main(["promote", "iter-r1"]) == 1
    assert "did not put it above its base" in capsys.readouterr().err
    _evaluated(r1, True)
    assert main(["promote", "iter-r1"]) == 0  # r1 rolled out of r0, which rolled out of the served model


def test_candidates_without_rollouts_are_promoted_as_before(initialized_home):
    make_candidate(initialized_home, "sft")
    assert main(["promote", "sft"]) == 0
