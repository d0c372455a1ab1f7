"""grounding-check --dataset: ScreenSpot-style folders (JSON and datasets layouts), scoring, reports, export.

Model answers come from a FAKE OpenAI-compatible server that knows the answer
key (tests/fixtures/grounding_fixture_server.py), through the real generic
policy, so every screenshot goes through the adapter's resize rule and
coordinate convention.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.grounding_fixture_server import GroundingFixtureServer
from helpers.grounding_data import BROKEN_ROWS, write_dataset

from conway.cli.main import main
from conway.errors import UserError
from conway.evals.grounding.cases import size_bucket
from conway.evals.grounding.dataset import load_dataset_dir, sample_cases
from conway.evals.report_render import render_report


def _key(expected):
    return {k: ((x0 + x1) / 2, (y0 + y1) / 2, w, h) for k, (x0, y0, x1, y1, w, h) in expected.items()}


def _run(tmp_path: Path, server, dataset: Path, *extra: str, name: str = "g.json") -> tuple[int, dict]:
    out = tmp_path / name
    code = main(["grounding-check", "--dataset", str(dataset), "--output", str(out), "--quiet",
                 "--endpoint", server.base_url, "policy=generic", "policy.structured_output=none", *extra])
    return code, (json.loads(out.read_text()) if out.exists() else {})


@pytest.fixture
def dataset(tmp_path: Path):
    root = tmp_path / "screenspot"
    return root, write_dataset(root)


# --- reading the folder ------------------------------------------------------------------


def test_formats_are_detected_per_file_and_said(dataset):
    root, expected = dataset
    loaded = load_dataset_dir(str(root))
    files = {f.file: f for f in loaded.files}
    v2 = files["screenspot_desktop_v2.json"]
    assert v2.bbox_format == "xywh" and v2.rows == v2.used == 7
    assert "read as [x1, y1, x2, y2], 5 of 7 box(es) would be empty or run off their image" in v2.why
    pro = files[str(Path("pro/annotations/editor_macos.json"))]
    assert pro.bbox_format == "xyxy" and pro.used == 3
    assert "ScreenSpot-Pro style keys" in pro.why or "would be empty or run off" in pro.why
    assert len(loaded.cases) == 10 and not loaded.skipped
    for case in loaded.cases:
        x0, y0, x1, y1, w, h = expected[case.instruction]
        assert case.box == (x0, y0, x1, y1) and case.size == (w, h)
    by_text = {c.instruction: c for c in loaded.cases}
    assert by_text["save the document"].type == "icon" and by_text["save the document"].source == "windows"
    assert by_text["run the tests"].type == "text" and by_text["run the tests"].source == "macos"
    assert by_text["run the tests"].split == "editor_macos"


def test_forced_format_overrides_detection(dataset):
    root, _ = dataset
    loaded = load_dataset_dir(str(root), bbox_format="xyxy")
    v2 = next(f for f in loaded.files if f.file == "screenspot_desktop_v2.json")
    assert v2.why.startswith("--bbox-format xyxy")
    # the v2 boxes read as corners are mostly empty: reported and skipped, not fatal
    assert v2.used < 7 and any("read as xyxy is empty" in s["reason"] for s in loaded.skipped)


def test_malformed_rows_are_reported_and_skipped(dataset):
    root, expected = dataset
    rows = [r for r, _ in BROKEN_ROWS] + [{"img_filename": "desk_a.png", "bbox": [10, 8, 60, 22],
                                           "instruction": "the one good row", "data_type": "text"}]
    (root / "screenspot_broken.json").write_text(json.dumps(rows))
    (root / "notes.json").write_text("{not json")
    loaded = load_dataset_dir(str(root))
    reasons = [s for s in loaded.skipped if s["file"] == "screenspot_broken.json"]
    assert len(reasons) == len(BROKEN_ROWS)
    for (row, want), got in zip(BROKEN_ROWS, sorted(reasons, key=lambda s: s["row"])):
        assert want in got["reason"], (row, got)
    assert any(s["file"] == "notes.json" and s["reason"].startswith("file skipped: not JSON") for s in loaded.skipped)
    assert "the one good row" in {c.instruction for c in loaded.cases}
    assert len(loaded.cases) == 11


def test_missing_empty_and_unusable_folders_are_one_clear_error(tmp_path: Path, capsys):
    for args, want in (([str(tmp_path / "nope")], "does not exist (grounding-check never downloads"),
                       ([str(tmp_path)], "no annotation files in")):
        code = main(["grounding-check", "--mock", "--dataset", *args, "--output", str(tmp_path / "o.json")])
        err = capsys.readouterr().err
        assert code == 1 and want in err and "Traceback" not in err
        assert err.count("\n") == 1
    (tmp_path / "bad.json").write_text(json.dumps([{"instruction": "x"}]))
    with pytest.raises(UserError, match=r"no usable grounding case .*1 skipped: bad.json row 0: no bbox"):
        load_dataset_dir(str(tmp_path))
    assert not (tmp_path / "o.json").exists()


def test_one_source_only(tmp_path: Path, capsys):
    code = main(["grounding-check", "--mock", "--output", str(tmp_path / "o.json")])
    assert code == 1 and "give exactly one source of cases" in capsys.readouterr().err
    code = main(["grounding-check", "--mock", "--dataset", str(tmp_path), "--desktop", "--output",
                 str(tmp_path / "o.json")])
    assert code == 1 and "(got --dataset, --desktop)" in capsys.readouterr().err


def test_seeded_sample_is_stable_and_capped(dataset):
    root, _ = dataset
    a = [c.case_id for c in sample_cases(load_dataset_dir(str(root)).cases, 4, seed=3)]
    b = [c.case_id for c in sample_cases(load_dataset_dir(str(root)).cases, 4, seed=3)]
    c = [c.case_id for c in sample_cases(load_dataset_dir(str(root)).cases, 4, seed=4)]
    assert a == b and len(a) == 4 and a != c


def test_size_buckets():
    assert size_bucket(0.0099) == "<1%" and size_bucket(0.01) == "1-5%" and size_bucket(0.0499) == "1-5%"
    assert size_bucket(0.05) == ">5%" and size_bucket(0.9) == ">5%"


# --- scoring through the real generic policy --------------------------------------------


def test_box_centre_scores_everything_exit_0(dataset, tmp_path: Path, capsys):
    root, expected = dataset
    with GroundingFixtureServer(_key(expected), token_limit=100_000) as server:
        code, data = _run(tmp_path, server, root)
    out = capsys.readouterr().out
    assert code == 0, out
    s = data["summary"]
    assert s["cases"] == 10 and s["hits"] == 10 and s["hit_rate"] == 1.0 and s["errors"] == 0
    assert s["hit_rate_ci95"][1] == 1.0 and 0.6 < s["hit_rate_ci95"][0] < 0.8
    assert data["kind"] == "grounding-check" and data["model_id"] == "fake-vision-1" and data["exit_code"] == 0
    assert sum(g["n"] for g in s["by_size"].values()) == 10
    assert set(s["by_type"]) == {"icon", "text"} and s["by_type"]["icon"]["n"] == 4
    assert set(s["by_source"]) == {"windows", "macos"}
    assert s["distance_px"]["median"] < 0.5 and s["latency_s"]["p50"] is not None
    for case in data["cases"]:
        x0, y0, x1, y1, w, h = expected[case["instruction"]]
        assert case["hit"] and case["image"]["size"] == [w, h] and len(case["image"]["sha256"]) == 64
        assert case["decision_meta"]["sent_size"] != [w, h] or w % 28 == 0  # the image really was resized
    assert data["parameters"]["files"][0]["bbox_format"] in ("xywh", "xyxy")
    assert "grounding-check: 10/10 hit (100.0%" in out and "bbox xywh" in out


def test_a_20px_offset_scores_the_expected_fraction(dataset, tmp_path: Path):
    root, expected = dataset
    # a click 20 px right of the centre stays inside exactly the boxes at least 40 px wide
    want = sum(1 for x0, _, x1, _, w, _ in expected.values() if (x1 - x0) / 2 >= 20 and (x0 + x1) / 2 + 20 < w)
    outside = sum(1 for x0, _, x1, _, w, _ in expected.values() if (x0 + x1) / 2 + 20 >= w)
    with GroundingFixtureServer(_key(expected), offset=(20.0, 0.0), token_limit=100_000) as server:
        code, data = _run(tmp_path, server, root, "--sheet", str(tmp_path / "misses.png"))
    s = data["summary"]
    assert code == 2
    assert want == 6 and outside == 1
    assert s["hits"] == want and s["hit_rate"] == pytest.approx(want / 10)
    assert s["errors"] == outside and s["invalid_output"] == {"unparseable": 1}
    assert s["misses"] == 10 - want - outside
    for case in data["cases"]:
        if case["predicted"]:
            assert case["distance_px"] == pytest.approx(20.0, abs=0.05)
    assert s["pattern"]["mean_offset_px"] == [20.0, 0.0]
    assert (tmp_path / "misses.png").stat().st_size > 1000 and data["sheet"] == str(tmp_path / "misses.png")
    text = render_report(tmp_path / "g.json")
    assert "grounding-check report" in text and "target size" in text and "95% Wilson" in text
    assert "hits 6/10 = 60.0%" in text and "bbox xywh" in text


def test_unknown_instructions_are_invalid_outputs_and_parallel_overlaps(dataset, tmp_path: Path):
    root, expected = dataset
    key = _key(expected)
    key.pop("help menu")
    with GroundingFixtureServer(key, token_limit=100_000, delay_s=0.2) as server:
        code, data = _run(tmp_path, server, root, "--parallel", "3")
        assert server.max_in_flight >= 2
    assert code == 2 and data["summary"]["errors"] == 1 and data["summary"]["hits"] == 9
    assert data["summary"]["invalid_output"] == {"unparseable": 1}


def test_an_answer_cut_off_at_max_tokens_is_counted_as_cut_off():
    from conway.actions import ActionProblem
    from conway.evals.clicks import first_click
    from conway.evals.grounding.cases import summarize
    from conway.protocols import Decision, cut_off_message
    cut = Decision(raw_text='{"type": "cli', actions=[ActionProblem(message=cut_off_message(64), raw="")],
                   model_id="m", meta={"error_cause": "cut off"})
    _, _, error = first_click(cut)
    summary = summarize([{"error": error, "hit": False}], wall_s=1.0)
    assert summary["invalid_output"] == {"cut_off": 1}


def test_export_from_a_grounding_report_labels_hits_and_misses(dataset, tmp_path: Path):
    root, expected = dataset
    with GroundingFixtureServer(_key(expected), offset=(20.0, 0.0), token_limit=100_000) as server:
        _run(tmp_path, server, root)
    out = tmp_path / "traj.jsonl"
    assert main(["export", "--from-report", str(tmp_path / "g.json"), "--output", str(out), "--style", "generic"]) == 0
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(recs) == 10
    for r in recs:
        x0, y0, x1, y1, w, h = expected[r["instruction"]]
        assert r["task"]["kind"] == "grounding-check" and r["task"]["target_box"] == [x0, y0, x1, y1]
        assert Path(r["observation"]["screenshot"]).is_file()
        if r["labels"]["verdict"] == "wrong":
            assert r["labels"]["corrected_action"] == {"type": "click", "x": (x0 + x1) / 2, "y": (y0 + y1) / 2,
                                                       "button": "left"}
            assert r["target"]["source"] == "label"
        else:
            assert r["labels"]["success"] == "success" and r["target"]["source"] == "recorded"
    assert sum(r["labels"]["verdict"] == "correct" for r in recs) == 6


# --- the Hugging Face datasets layout --------------------------------------------------------


def test_hf_saved_dataset_with_normalised_boxes(tmp_path: Path):
    datasets = pytest.importorskip("datasets")
    if not hasattr(datasets, "load_from_disk"):  # the repo's datasets/ data folder, not the library
        pytest.skip("the datasets library is not installed (train extra)")
    import io

    from PIL import Image

    root = tmp_path / "hf"
    boxes = [(40, 30, 160, 70), (300, 200, 340, 260)]
    img = Image.new("RGB", (400, 300), (230, 230, 230))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    rows = {"image": [{"bytes": buf.getvalue(), "path": None}] * 3,
            "bbox": [[x0 / 400, y0 / 300, x1 / 400, y1 / 300] for x0, y0, x1, y1 in boxes] + [[0.1, 0.2, 0.3]],
            "instruction": ["press ok", "pick the icon", "broken row"],
            "data_type": ["text", "icon", "text"], "data_source": ["android", "android", "android"],
            "file_name": ["a.png", "a.png", "a.png"]}
    features = datasets.Features({"image": datasets.Image(), "bbox": datasets.Sequence(datasets.Value("float64")),
                                  "instruction": datasets.Value("string"), "data_type": datasets.Value("string"),
                                  "data_source": datasets.Value("string"), "file_name": datasets.Value("string")})
    datasets.Dataset.from_dict(rows, features=features).save_to_disk(str(root / "screenspot_mobile"))
    loaded = load_dataset_dir(str(root))
    assert [f.layout for f in loaded.files] == ["hf-datasets"] and loaded.files[0].normalised
    assert loaded.files[0].bbox_format == "xyxy"  # as [x, y, w, h] the second box runs off the image
    assert len(loaded.cases) == 2 and loaded.skipped[0]["reason"].startswith("bbox must be 4 numbers")
    got = {c.instruction: c for c in loaded.cases}
    assert got["press ok"].box == pytest.approx((40, 30, 160, 70))
    assert got["pick the icon"].size == (400, 300) and got["pick the icon"].type == "icon"
    assert got["press ok"].load_image() == buf.getvalue()


def test_a_worker_pool_scores_the_dataset_as_the_serial_run(dataset, tmp_path: Path):
    root, expected = dataset
    with GroundingFixtureServer(_key(expected), token_limit=100_000) as server:
        code1, serial = _run(tmp_path, server, root, name="serial.json")
        code2, pooled = _run(tmp_path, server, root, "--workers", "2", name="pool.json")
    assert code1 == code2 == 0
    assert pooled["pool"]["workers"] == 2
    assert [(c["index"], c["predicted"], c["hit"]) for c in pooled["cases"]] == \
           [(c["index"], c["predicted"], c["hit"]) for c in serial["cases"]]
