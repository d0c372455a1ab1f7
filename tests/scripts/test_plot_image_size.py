"""scripts/demos/plot_image_size.py: learning-demo summaries at several sizes become one plot and one table; nothing to
plot, an unreadable summary, mixed profiles or two runs of one size are one line and exit 1."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from conway.evals.stats import wilson

REPO = Path(__file__).resolve().parents[2]


def _summary(size: int, base: int, cand: int, profile: str = "offcentre") -> dict:
    def rate(hits: int) -> dict:
        return {"hits": hits, "hit_rate": hits / 100, "hit_rate_ci95": list(wilson(hits, 100))}
    return {"profile": profile, "size": size, "practice": 600, "heldout": 100, "recipe": "tiny_cpu",
            "overrides": ["train.max_seconds=900"], "base": rate(base), "candidate": rate(cand),
            "references": {"centre_click_hits": 0, "centre_click_rate": 0.0, "random_shape_rate": 1.0},
            "train": {"steps": 1250, "stop_reason": "max_seconds (900 s)", "train_s": 900.4}, "wall_s": 1500}


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scripts.demos.plot_image_size", *args], cwd=REPO, text=True,
                          capture_output=True, timeout=120)


def test_plot_and_table(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    for size, base, cand in ((84, 28, 98), (224, 5, 40)):
        (runs / f"offcentre_{size}.json").write_text(json.dumps(_summary(size, base, cand)))
    out = tmp_path / "plot.png"
    proc = _run(str(runs), "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    with Image.open(out) as img:
        assert img.format == "PNG" and img.size[0] > 300
    rows = [ln for ln in proc.stdout.splitlines() if ln.startswith("| 84x84") or ln.startswith("| 224x224")]
    assert len(rows) == 2
    assert rows[0].startswith("| 84x84 | 3x3 = 9 | 28/100 = 28%") and "98/100 = 98%" in rows[0]
    assert rows[1].startswith("| 224x224 | 8x8 = 64 | 5/100") and "| 900 s |" in rows[1]


@pytest.mark.parametrize("case", ["empty", "missing", "not-json", "not-a-summary", "two-profiles", "same-size"])
def test_bad_inputs_are_one_line_and_exit_1(tmp_path: Path, case: str) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    target = str(runs)
    if case == "missing":
        target = str(tmp_path / "nowhere")
    elif case == "not-json":
        (runs / "a.json").write_text("{not json")
    elif case == "not-a-summary":
        (runs / "a.json").write_text(json.dumps({"size": 84}))
    elif case == "two-profiles":
        (runs / "a.json").write_text(json.dumps(_summary(84, 28, 98)))
        (runs / "b.json").write_text(json.dumps(_summary(112, 20, 90, profile="demo")))
    elif case == "same-size":
        (runs / "a.json").write_text(json.dumps(_summary(84, 28, 98)))
        (runs / "b.json").write_text(json.dumps(_summary(84, 30, 97)))
    proc = _run(target, "--output", str(tmp_path / "plot.png"))
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("plot_image_size: ") and "Traceback" not in proc.stderr
    assert not (tmp_path / "plot.png").exists()
