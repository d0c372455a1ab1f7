"""training/iterate.py's bookkeeping: on-policy rounds (each rolls out the latest candidate), a curve point per
round, resumable after a stop (finished pieces are not made again, an unfinished one is moved aside), a round
without signal trains nothing and keeps the policy, and a resumed run must be the same command.

The pieces that run desktops and models (rollouts, training, evaluation) are replaced here by recorders: what
is tested is the order and the resumption, which the slow demo (scripts/demos/reward_demo.py) runs for real."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conway.errors import UserError
from training import iterate


def _args(tmp_path: Path, rounds: int = 3, **kw) -> object:
    argv = ["--work", str(tmp_path / "work"), "--home", str(tmp_path / "home"), "--train-tasks", "T",
            "--held-out", "H", "--base-hf", "hf", "--base-gguf", "base.gguf", "--base-mmproj", "base-mm.gguf",
            "--rounds", str(rounds), "--samples", "2"]
    return iterate.parse_args(argv + [f"--{k.replace('_', '-')}={v}" for k, v in kw.items()])


class Recorder:
    """Stands in for the pieces; `stop_at` raises KeyboardInterrupt (a stop) at that call."""

    def __init__(self, monkeypatch, no_signal_rounds=(), stop_at=None):
        self.calls: list[tuple] = []
        self.stop_at = stop_at
        self.no_signal = set(no_signal_rounds)
        monkeypatch.setattr(iterate.Rounds, "rollouts", self.rollouts)
        monkeypatch.setattr(iterate.Rounds, "train", self.train)
        monkeypatch.setattr(iterate.Rounds, "success", self.success)
        monkeypatch.setattr(iterate, "plot_curve", lambda points, path, title: path.write_bytes(b"png"))
        monkeypatch.setattr("conway.evals.rollouts.load_rollouts", lambda d: {"mean_reward": 0.25})

    def _call(self, *what):
        self.calls.append(what)
        if self.stop_at == what:
            raise KeyboardInterrupt

    def rollouts(self, r, policy):
        self._call("rollouts", r, policy["name"])
        return f"rollouts-{r}"

    def train(self, r, rollouts_dir, policy):
        self._call("train", r, policy["name"])
        if r in self.no_signal:
            return None
        return {"name": f"iter-r{r}", "gguf": f"r{r}.gguf", "mmproj": f"r{r}-mm.gguf", "adapter": f"a{r}", "kl": 0.1}

    def success(self, r, label, suite, policy):
        self._call("success", r, label, policy["name"])
        return {"hits": r, "n": 4, "rate": r / 4, "ci95": [0, 1]}


def test_rounds_roll_out_the_latest_candidate_and_draw_a_point_each(tmp_path, monkeypatch):
    rec = Recorder(monkeypatch)
    points = iterate.iterate(_args(tmp_path), say=lambda _: None)
    rolled = [c for c in rec.calls if c[0] == "rollouts"]
    assert rolled == [("rollouts", 0, "base"), ("rollouts", 1, "iter-r0"), ("rollouts", 2, "iter-r1")]
    assert [p["policy"] for p in points] == ["base", "iter-r0", "iter-r1", "iter-r2"]
    assert points[0]["mean_reward"] is None and points[1]["mean_reward"] == 0.25 and points[1]["kl"] == 0.1
    curve = (tmp_path / "work" / "curve.jsonl").read_text().splitlines()
    assert len(curve) == 4 and (tmp_path / "work" / "learning_curve.png").exists()


def test_a_stopped_run_resumes_where_it_stopped(tmp_path, monkeypatch):
    rec = Recorder(monkeypatch, stop_at=("train", 1, "iter-r0"))
    with pytest.raises(KeyboardInterrupt):
        iterate.iterate(_args(tmp_path), say=lambda _: None)
    done = list(rec.calls)
    rec2 = Recorder(monkeypatch)
    points = iterate.iterate(_args(tmp_path), say=lambda _: None)
    assert ("rollouts", 0, "base") in done and ("rollouts", 0, "base") not in rec2.calls
    assert ("rollouts", 1, "iter-r0") not in rec2.calls  # round 1's rollouts had finished
    assert rec2.calls[0] == ("train", 1, "iter-r0")  # the piece that was cut is the first one made again
    assert [p["round"] for p in points] == [0, 1, 2, 3]


def test_a_round_without_signal_keeps_the_policy_and_says_so(tmp_path, monkeypatch):
    rec = Recorder(monkeypatch, no_signal_rounds={0})
    points = iterate.iterate(_args(tmp_path, rounds=2), say=lambda _: None)
    assert [c for c in rec.calls if c[0] == "rollouts"] == [("rollouts", 0, "base"), ("rollouts", 1, "base")]
    assert points[1]["note"].startswith("no signal") and points[1]["policy"] == "base"
    assert points[2]["policy"] == "iter-r1"


def test_resuming_with_other_arguments_is_refused(tmp_path, monkeypatch):
    Recorder(monkeypatch)
    iterate.iterate(_args(tmp_path, rounds=1), say=lambda _: None)
    with pytest.raises(UserError, match="other arguments"):
        iterate.iterate(_args(tmp_path, rounds=1, samples=3), say=lambda _: None)
    state = json.loads((tmp_path / "work" / "state.json").read_text())
    assert state["args"]["samples"] == 2


def test_an_unfinished_piece_is_moved_aside(tmp_path):
    piece = tmp_path / "rollouts"
    piece.mkdir()
    (piece / "half").write_text("x")
    iterate._aside(piece)
    assert not piece.exists() and (tmp_path / "rollouts.stopped-1" / "half").exists()


def test_the_curve_is_a_report_the_viewer_reads_and_a_png_with_the_chance_line(tmp_path, monkeypatch):
    from conway.evals.report import load_report
    Recorder(monkeypatch)
    points = iterate.iterate(_args(tmp_path, rounds=2), say=lambda _: None)
    data, cases = load_report(tmp_path / "work" / "learning_curve.json")
    assert data["kind"] == "learning-curve" and [c["round"] for c in cases] == [p["round"] for p in points]
    for p in points:
        p["held_out_success"].update(chance=0.5, verdict="at chance")
    png = tmp_path / "curve.png"
    monkeypatch.undo()  # the real plot
    iterate.plot_curve(points, png, "t")
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_workers_run_the_desktops_in_a_pool_and_resume_across_a_change(tmp_path, monkeypatch):
    """--workers N > 1: the rollouts and measures get a pool of N worker processes (each loads the policy);
    what they pass to the workers pickles (a lambda does not); the worker count is not part of the run's
    identity, so a stopped run resumes with another."""
    import pickle

    from conway.config import ConwayConfig

    one, two = iterate.Rounds(_args(tmp_path)), iterate.Rounds(_args(tmp_path, workers=2))
    cfg = ConwayConfig()
    assert one.pool(cfg) is None
    pool = two.pool(cfg)
    assert pool.spec.workers == 2 and pool.recipe.config == cfg
    assert pickle.loads(pickle.dumps(iterate.silent)) is iterate.silent
    with pytest.raises(UserError, match="--workers must be at least 1"):
        _args(tmp_path, workers=0)
