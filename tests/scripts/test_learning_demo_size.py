"""scripts/demos/learning_demo.py --size: a usable square side runs the loop at that size; anything else is one clear
line and exit 1 before any work starts (no home, no base model)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from scripts.demos import learning_demo

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("text", ["100", "56", "1148", "abc", "112x112", "-84", ""])
def test_bad_size_is_one_line_and_exit_1(tmp_path: Path, text: str) -> None:
    work = tmp_path / "work"
    proc = subprocess.run([sys.executable, "-m", "scripts.demos.learning_demo", "--size", text, "--work", str(work)],
                          cwd=REPO, text=True, capture_output=True, timeout=120)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert "--size must be a multiple of 28" in lines[0] and repr(text) in lines[0]
    assert not work.exists()  # refused before anything was built


@pytest.mark.parametrize("text,side", [("84", 84), ("112", 112), ("168", 168), ("224", 224), ("1120", 1120)])
def test_usable_sides(text: str, side: int) -> None:
    assert learning_demo.image_side(text) == side


def test_references_follow_the_size() -> None:
    """The centre-click reference is computed on the held-out cases at the chosen size: 0% for offcentre at every
    size, and the same cases as vision-check generates (one shape: a random shape always hits)."""
    for side in (84, 112, 224):
        ref = learning_demo.baselines(1000, 20, "offcentre", side)
        assert ref["centre_click_hits"] == 0 and ref["random_shape_rate"] == 1.0
    big = learning_demo.baselines(1000, 20, "demo", 224)
    assert big["centre_click_hits"] > 0  # demo's large centred-ish targets: the reference is not trivially 0


def test_the_practice_step_says_a_zero_score_is_expected_of_the_base(tmp_path, monkeypatch, capsys) -> None:
    seen: list[list[str]] = []

    def fake_run(cmd, env, log):  # every step of the demo, not run: init and the build pass, practice is exit 3
        seen.append(cmd)
        if "export" in cmd:
            raise SystemExit(9)  # enough: the practice step is done
        print("vision-check: 0/150 hit (0.0%), 150 × cut off" if "vision-check" in cmd else "ok")
        return subprocess.CompletedProcess(cmd, 3 if "vision-check" in cmd else 0, "", "")

    monkeypatch.setattr(learning_demo, "run", fake_run)
    with pytest.raises(SystemExit):
        learning_demo.main(["--work", str(tmp_path / "work"), "--practice", "150"])
    out = capsys.readouterr().out
    after = out.split("150 × cut off", 1)[1]
    assert "expected for an untrained base" in after and "label comes from its target" in after
    assert learning_demo.practice_note(0) is None
