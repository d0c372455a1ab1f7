"""Export golden files: a recorded real journal → exact JSONL, and each --style rendering.

The journal in tests/data/export/home/ was recorded by a real loop run
(tests/data/export/record_journal.py: generic policy over HTTP, archived
synthetic screenshots, two review labels). Regenerate the goldens only on
purpose, after reading the diff:

    for s in "" generic opencua uitars qwen3vl; do conway --home COPY export ${s:+--style $s} --output ...; done
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from conway.cli.main import main
from conway.geometry import model_to_captured

DATA = Path(__file__).resolve().parents[1] / "data" / "export"
GOLDEN = DATA / "golden"
STYLES = ("generic", "opencua", "uitars", "qwen3vl")


@pytest.fixture
def recorded_home(tmp_path) -> Path:
    home = tmp_path / "recorded"
    shutil.copytree(DATA / "home", home)
    return home


def _export(home: Path, out: Path, *args: str) -> int:
    return main(["--home", str(home), "export", "--output", str(out), *args])


def test_jsonl_matches_golden_exactly(recorded_home, tmp_path):
    out = tmp_path / "traj.jsonl"
    assert _export(recorded_home, out) == 0
    assert out.read_bytes() == (GOLDEN / "traj.jsonl").read_bytes()
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["step"] for r in recs] == [1, 2, 3, 4, 5, 6, 7]
    assert all(r["format"] == "conway-traj/1" for r in recs)
    assert recs[0]["geometry"] == {"captured_size": [640, 400], "sent_size": [644, 392], "convention": "absolute",
                                   "resize_rule": "qwen2.5-vl", "policy": "generic"}
    assert recs[0]["labels"]["verdict"] == "correct" and recs[0]["labels"]["source"] == "review"
    assert recs[1]["labels"] == {"success": "unknown"}  # no independent source: unknown
    assert recs[6]["finish"]["declared_by"] == "model" and recs[6]["labels"] == {"success": "unknown"}
    assert all("png" not in json.dumps(r["observation"]).lower().replace(".png", "") for r in recs)
    # provenance: the decision event wrote the revision and the prompt the step was decided from
    assert all(isinstance(r["harness_revision"], str) and len(r["harness_revision"]) >= 40 for r in recs)
    assert all(len(r["prompt"]["sha256"]) == 64 for r in recs)
    assert recs[0]["prompt"]["parts"][:2] == ["constitution.md", "action space"]
    assert "latest result" in recs[1]["prompt"]["parts"]
    assert len({r["prompt"]["sha256"] for r in recs}) == len(recs)  # each step saw a different prompt


@pytest.mark.parametrize("style", STYLES)
def test_style_rendering_matches_golden(recorded_home, tmp_path, style):
    out = tmp_path / f"traj.{style}.jsonl"
    assert _export(recorded_home, out, "--style", style) == 0
    assert out.read_bytes() == (GOLDEN / f"traj.{style}.jsonl").read_bytes()


def _parser(style):
    if style == "generic":
        from conway.policies.families.generic import parse as m
    elif style == "opencua":
        from conway.policies.families.opencua import parse as m
    elif style == "qwen3vl":
        from conway.policies.families.qwen3vl import parse as m
    else:
        from conway.policies.families.uitars import parse as m
    return m.parse


@pytest.mark.parametrize("style", STYLES)
def test_coordinates_in_each_style_map_back_to_the_same_screen_point(style):
    """Parse each rendered target with that family's own parser: the captured point comes back."""
    parse = _parser(style)
    checked = 0
    for line in (GOLDEN / f"traj.{style}.jsonl").read_text().splitlines():
        rec = json.loads(line)
        t = rec["target"]
        ref = (rec["labels"].get("corrected_action")
               or next(a for a in rec["decision"]["actions"] if "type" in a))
        parsed = parse(t["text"], convention=t["convention"], sent_size=tuple(t["sent_size"]),
                       captured_size=tuple(rec["geometry"]["captured_size"]))
        assert parsed.ok, (style, rec["step"], t["text"], parsed.actions)
        got = parsed.actions[0]
        if ref.get("x") is None:
            continue
        # integer model pixels: at most half a sent pixel of error, mapped to captured pixels
        cw, ch = rec["geometry"]["captured_size"]
        sw, sh = t["sent_size"]
        assert abs(got.x - ref["x"]) <= 0.5 * cw / sw + 1e-6, (style, rec["step"])
        assert abs(got.y - ref["y"]) <= 0.5 * ch / sh + 1e-6, (style, rec["step"])
        checked += 1
    assert checked >= 4  # click, corrected right-click, double-click, scroll point


def test_corrected_label_is_what_the_target_teaches():
    rec = [json.loads(line) for line in (GOLDEN / "traj.uitars.jsonl").read_text().splitlines()][2]
    assert rec["target"]["source"] == "label"
    x, y = 20, 363  # the corrected (20, 370) in the 644x392 image sent
    assert f"({x},{y})" in rec["target"]["text"]
    cx, cy = model_to_captured(x, y, "absolute", (644, 392), (640, 400))
    assert abs(cx - 20) < 1 and abs(cy - 370) < 1


def test_dry_runs_and_uncertain_steps_are_excluded_by_default(tmp_path):
    from conway.experience.steps import steps_from_events
    events = [
        {"session": "s", "step": 1, "kind": "observation", "ts": "t", "payload": {"captured_size": [10, 10]}},
        {"session": "s", "step": 1, "kind": "decision", "ts": "t", "payload": {"actions": [], "dry_run": True}},
        {"session": "s", "step": 2, "kind": "observation", "ts": "t", "payload": {"captured_size": [10, 10]}},
        {"session": "s", "step": 2, "kind": "uncertain", "ts": "t", "payload": {"action": {"type": "key"}}},
        {"session": "s", "step": 3, "kind": "observation", "ts": "t", "payload": {"captured_size": [10, 10]}},
    ]
    assert [r["step"] for r in steps_from_events(events)] == [3]
    assert [r["step"] for r in steps_from_events(events, include_dry_runs=True)] == [1, 3]
    assert [r["step"] for r in steps_from_events(events, include_uncertain=True)] == [2, 3]


def test_hf_format_has_images_as_an_image_feature(recorded_home, tmp_path):
    datasets = pytest.importorskip("datasets")
    out = tmp_path / "ds"
    assert _export(recorded_home, out, "--format", "hf", "--style", "opencua") == 0
    ds = datasets.load_from_disk(str(out))
    assert isinstance(ds.features["image"], datasets.Image)
    assert len(ds) == 7 and set(ds["style"]) == {"opencua"}
    ds = ds.cast_column("image", datasets.Image(decode=False))
    first = ds[0]
    shot = (recorded_home / "screenshots" / "step-001.png").read_bytes()
    assert first["image"]["bytes"] == shot and first["image_sha256"] == hashlib.sha256(shot).hexdigest()
    assert "pyautogui.click(x=322, y=196)" in first["target"]
    assert json.loads(first["record"])["step"] == 1


def test_hf_export_keeps_numbers_as_numbers_and_prints_no_progress_bars(recorded_home, tmp_path, capsys):
    datasets = pytest.importorskip("datasets")
    capsys.readouterr()
    shown = datasets.is_progress_bar_enabled()
    out = tmp_path / "ds"
    assert _export(recorded_home, out, "--format", "hf") == 0
    said = capsys.readouterr()
    assert "Saving the dataset" not in said.err + said.out and "%|" not in said.err, said.err
    assert datasets.is_progress_bar_enabled() == shown  # the setting is the caller's again
    ds = datasets.load_from_disk(str(out))
    row = ds[0]
    for column in ("step", "sent_width", "sent_height", "captured_width", "captured_height"):
        assert isinstance(row[column], int) and not isinstance(row[column], bool), column
    assert isinstance(row["hindsight"], bool)


def test_rotated_away_screenshots_keep_their_steps_marked_and_counted(recorded_home, tmp_path, capsys):
    (recorded_home / "screenshots" / "step-004.png").unlink()
    (recorded_home / "screenshots" / "step-005.png").unlink()
    out = tmp_path / "t.jsonl"
    assert _export(recorded_home, out) == 0
    assert "2 step(s) kept without their screenshot" in capsys.readouterr().out
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["step"] for r in recs] == [1, 2, 3, 4, 5, 6, 7]
    gone = [r for r in recs if r["observation"].get("image_missing")]
    assert [r["step"] for r in gone] == [4, 5]
    assert all(r["observation"]["image"] is None for r in gone)
    assert all("image_missing" not in r["observation"] for r in recs if r["step"] not in (4, 5))
    out2 = tmp_path / "skipped.jsonl"
    assert _export(recorded_home, out2, "--skip-missing") == 0  # asked for: left out, and said
    assert "left out 2 step(s) whose screenshot is missing" in capsys.readouterr().out
    assert len(out2.read_text().splitlines()) == 5


def test_hf_leaves_steps_without_an_image_out_of_the_image_data_only(recorded_home, tmp_path, capsys):
    datasets = pytest.importorskip("datasets")
    (recorded_home / "screenshots" / "step-004.png").unlink()
    out = tmp_path / "ds"
    assert _export(recorded_home, out, "--format", "hf") == 0
    assert "left out of the hf image data" in capsys.readouterr().out
    ds = datasets.load_from_disk(str(out))
    assert sorted(ds["step"]) == [1, 2, 3, 5, 6, 7]
    out = tmp_path / "t.jsonl"
    assert _export(recorded_home, out) == 0 and len(out.read_text().splitlines()) == 7


def test_exports_redact_known_secret_values(recorded_home, tmp_path, monkeypatch, capsys):
    """A key that reached the journal (say, echoed by a shell command) never reaches an export."""
    journal = next((recorded_home / "journal").glob("*.jsonl"))
    secret = "value-of-the-key-0123456789"
    lines = journal.read_text().splitlines()
    lines = [line.replace("Type the name.", f"Type the name. key={secret}") for line in lines]
    journal.write_text("\n".join(lines) + "\n")
    monkeypatch.setenv("THE_API_KEY_VAR", secret)
    (recorded_home / "config.yaml").write_text("policy:\n  api_key_env: THE_API_KEY_VAR\n")
    out = tmp_path / "t.jsonl"
    assert _export(recorded_home, out) == 0
    assert "redacted" in capsys.readouterr().out
    text = out.read_text()
    assert secret not in text and "<redacted>" in text


def test_exports_redact_key_shapes_with_no_credential_variable_set(recorded_home, tmp_path, monkeypatch):
    """A key that reached the journal is caught by its shape alone: nothing in the environment names it."""
    import os

    from conway.redact import looks_like_secret_env
    for name in [n for n in os.environ if looks_like_secret_env(n)]:
        monkeypatch.delenv(name)
    journal = next((recorded_home / "journal").glob("*.jsonl"))
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2
    journal.write_text(journal.read_text().replace("Type the name.", f"Type the name. {key}"))
    out = tmp_path / "t.jsonl"
    assert _export(recorded_home, out) == 0
    text = out.read_text()
    assert key not in text and "sk-proj-" not in text and "Type the name. <redacted>" in text


def test_export_to_standard_output_is_the_same_records(recorded_home):
    from conftest import run_cli
    r = run_cli("--home", str(recorded_home), "export", "--output", "/dev/stdout")
    assert r.returncode == 0, r.stderr
    assert r.stdout == (GOLDEN / "traj.jsonl").read_text() and "wrote 7 step record(s)" in r.stderr
    r = run_cli("--home", str(recorded_home), "export", "--format", "hf", "--output", "/dev/stdout")
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "writes a folder" in r.stderr


def test_a_verified_task_session_labels_its_steps_and_review_still_wins():
    from conway.experience.labels import Label, LabelIndex
    from conway.experience.steps import attach_labels, steps_from_events
    events = [
        {"session": "s", "step": 1, "kind": "observation", "ts": "t", "payload": {"captured_size": [10, 10]}},
        {"session": "s", "step": 2, "kind": "observation", "ts": "t", "payload": {"captured_size": [10, 10]}},
        {"session": "s", "step": 2, "kind": "finish", "ts": "t", "payload": {"status": "DONE"}},
        {"session": "s", "step": 2, "kind": "session", "ts": "t",
         "payload": {"event": "acceptance", "verified": False, "report": "r.json"}},
        {"session": "u", "step": 1, "kind": "observation", "ts": "t", "payload": {"captured_size": [10, 10]}},
    ]
    recs = steps_from_events(events)
    index = LabelIndex({("s", 1): Label(session="s", step=1, source="review", verdict="correct")}, [])
    attach_labels(recs, index)
    by = {(r["session"], r["step"]): r["labels"] for r in recs}
    assert by[("s", 1)]["source"] == "review"
    assert by[("s", 2)] == {"success": "failure", "source": "task-check", "scope": "session", "report": "r.json"}
    assert by[("u", 1)] == {"success": "unknown"}  # the model's DONE is never a label
