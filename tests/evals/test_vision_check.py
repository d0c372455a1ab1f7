"""vision-check: generated images, honest scoring, exit codes, the llama.cpp downscale trap.

Model answers come from a FAKE OpenAI-compatible server (tests/fixtures/
vision_fixture_server.py) through the real generic policy, so each image goes
through the adapter's own resize rule and coordinate convention.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from fixtures.vision_fixture_server import VisionFixtureServer, find_colour_centre
from PIL import Image

from conway.actions import ActionProblem, Click, TypeText
from conway.cli.main import main
from conway.config import load_config
from conway.evals.vision_check import draw_sheet, miss_pattern, percentile, score, vision_check, wilson
from conway.observe.vision_cases import PALETTE, Shape, generate_case
from conway.protocols import (
    Decision,
    Policy,
)
from conway.store.home import resolve_home

SIZE = "640x400"


def _run(server: VisionFixtureServer | None, tmp_path: Path, *extra: str, samples: int = 6, seed: int = 1,
         name: str = "vision.json", endpoint: str | None = None) -> tuple[int, dict]:
    out = tmp_path / name
    args = ["vision-check", "--samples", str(samples), "--seed", str(seed), "--size", SIZE, "--output", str(out),
            "--quiet", "--endpoint", endpoint or (server.base_url if server else ""), "policy=generic",
            "policy.structured_output=none", *extra]
    code = main(args)
    data = json.loads(out.read_text()) if out.exists() else {}
    return code, data


# --- generation ----------------------------------------------------------------


def test_same_seed_same_images_and_cases_are_independent():
    a = [generate_case(7, i, (800, 600)).sha256 for i in range(4)]
    b = [generate_case(7, i, (800, 600)).sha256 for i in range(4)]
    c = [generate_case(8, i, (800, 600)).sha256 for i in range(4)]
    assert a == b
    assert a != c and len(set(a)) == 4
    assert generate_case(7, 3, (800, 600)).sha256 == a[3]  # case 3 does not depend on the cases before it


def test_generated_case_is_what_it_says():
    for i in range(20):
        case = generate_case(3, i, (1280, 800))
        x0, y0, x1, y1 = case.target.box
        assert 0 <= x0 < x1 < 1280 and 0 <= y0 < y1 < 800
        assert case.instruction == f"Click the {case.target.colour} {case.target.shape}."
        assert all(d.colour != case.target.colour for d in case.distractors)
        assert len(case.distractors) >= 1
        with Image.open(__import__("io").BytesIO(case.png)) as img:
            assert img.size == (1280, 800)
            cx, cy = case.target.centre
            assert img.convert("RGB").getpixel((round(cx), round(cy))) == PALETTE[case.target.colour]
            found = find_colour_centre(img, PALETTE[case.target.colour], tol=0)
        assert found is not None and case.target.contains(*found)


def test_size_below_minimum_refused(tmp_path):
    code = main(["vision-check", "--mock", "--size", "32x32", "--output", str(tmp_path / "o.json")])
    assert code == 1


# --- scoring -----------------------------------------------------------------------


def _decision(*actions) -> Decision:
    return Decision(raw_text="raw", actions=list(actions), model_id="m")


def test_score_box_is_inclusive_and_distance_is_to_the_centre():
    case = generate_case(0, 0, (640, 400))
    x0, y0, x1, y1 = case.target.box
    for x, y in ((x0, y0), (x1, y1), (x0, y1), (x1, y0)):
        assert score(case, _decision(Click(x=x, y=y)))["hit"] is True
    miss = score(case, _decision(Click(x=x1 + 0.5, y=y1)))
    assert miss["hit"] is False and miss["error"] is None
    cx, cy = case.target.centre
    assert miss["distance_px"] == pytest.approx(((x1 + 0.5 - cx) ** 2 + (y1 - cy) ** 2) ** 0.5, abs=0.01)


def test_score_errors_are_not_misses():
    case = generate_case(0, 0, (640, 400))
    assert "unusable output" in score(case, _decision(ActionProblem(message="bad json")))["error"]
    assert "not a click" in score(case, _decision(TypeText(text="hi")))["error"]
    assert score(case, _decision())["error"] == "the model proposed no action"


def test_wilson_and_percentile():
    lo, hi = wilson(10, 10)
    assert lo == pytest.approx(0.7225, abs=1e-3) and hi == 1.0
    lo, hi = wilson(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=1e-3)
    lo, hi = wilson(5, 10)
    assert lo == pytest.approx(0.2366, abs=1e-3) and hi == pytest.approx(0.7634, abs=1e-3)
    assert percentile([3, 1, 2, 4], 50) == 2 and percentile([3, 1, 2, 4], 95) == 4 and percentile([], 50) is None


def _rec(pred, centre, hit=False):
    return {"predicted": pred, "hit": hit, "target": {"centre": centre, "box": [centre[0] - 10, centre[1] - 10,
                                                                                  centre[0] + 10, centre[1] + 10]}}


def test_miss_patterns_shifted_scaled_clustered():
    centres = [(100, 80), (500, 300), (300, 120), (600, 50), (50, 350), (420, 220)]
    shifted = [_rec([x + 60, y - 45], [x, y]) for x, y in centres]
    assert miss_pattern(shifted)["verdict"].startswith("shifted")
    assert miss_pattern(shifted)["mean_offset_px"] == [60.0, -45.0]
    scaled = [_rec([x * 0.6, y * 0.6], [x, y]) for x, y in centres]
    assert miss_pattern(scaled)["verdict"].startswith("scaled")
    assert miss_pattern(scaled)["scale_fit"] == [0.6, 0.6]
    clustered = [_rec([320 + i, 200 - i], [x, y]) for i, (x, y) in enumerate(centres)]
    assert miss_pattern(clustered)["verdict"].startswith("clustered")
    assert miss_pattern([_rec([x, y], [x, y], hit=True) for x, y in centres])["verdict"] == "no misses"


# --- through the real generic policy, against the fake server ------------------------------


def test_exact_centre_all_hit_exit_0(tmp_path, capsys):
    with VisionFixtureServer(mode="centre", token_limit=100_000) as server:
        code, data = _run(server, tmp_path)
    assert code == 0
    s = data["summary"]
    assert s["hits"] == 6 and s["misses"] == 0 and s["errors"] == 0 and s["hit_rate"] == 1.0
    assert s["hit_rate_ci95"][1] == 1.0 and s["hit_rate_ci95"][0] < 1.0
    assert s["latency_s"]["p50"] is not None and s["latency_s"]["p95"] >= s["latency_s"]["p50"]
    assert data["model_id"] == "fake-vision-1" and data["exit_code"] == 0 and data["seed"] == 1
    assert data["parameters"]["size"] == [640, 400] and data["parameters"]["size_source"] == "--size"
    for i, case in enumerate(data["cases"]):
        assert case["index"] == i and case["hit"] is True and case["error"] is None
        assert case["image"]["sha256"] == generate_case(1, i, (640, 400)).sha256
        assert case["model_id"] == "fake-vision-1" and case["latency_s"] > 0
        assert set(case["target"]) == {"colour", "shape", "box", "centre"}
        assert case["raw_output"].startswith('{"thought"')
        assert case["decision_meta"]["sent_size"] and case["decision_meta"]["convention"] == "absolute"
    assert "6/6 hit" in capsys.readouterr().out


def test_answers_outside_exit_2_with_misses(tmp_path):
    with VisionFixtureServer(mode="outside", token_limit=100_000) as server:
        code, data = _run(server, tmp_path)
    assert code == 2
    assert data["summary"]["hits"] == 0 and data["summary"]["misses"] == 6 and data["summary"]["errors"] == 0
    assert all(c["predicted"] and not c["hit"] and c["distance_px"] > 0 for c in data["cases"])


def test_garbage_is_no_valid_decision_exit_3_counted_by_cause(tmp_path):
    with VisionFixtureServer(mode="garbage") as server:
        code, data = _run(server, tmp_path, samples=3)
    assert code == 3 and data["status"] == "no valid decision"
    assert data["summary"]["errors"] == 3 and data["summary"]["misses"] == 0 and data["summary"]["hits"] == 0
    assert data["summary"]["model_errors"] == {"unparseable": 3} and data["summary"]["valid_decisions"] == 0
    assert data["summary"]["no_valid_decision"] == "no valid decision in 3 case(s): 3 × unparseable"
    assert all(c["error"] and c["raw_output"].startswith("I am not sure") for c in data["cases"])


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_endpoint_is_a_setup_error_exit_1(tmp_path, capsys):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    code, data = _run(None, tmp_path, endpoint=url)
    assert code == 1 and data == {}
    err = capsys.readouterr().err
    assert "127.0.0.1" in err and "reach" in err


def test_llama_cpp_downscale_trap_exposed_then_fixed(tmp_path):
    """A server that shrinks images to 256 image tokens and answers in its own resized pixels.

    Sending the full 1280x800 capture (resize=none) lets the server shrink it
    behind our back: every click lands at ~0.45x of the target, the check
    fails and names the pattern. Pre-resizing on our side within the limit
    (the Qwen rule capped at 256 tokens) fixes every click.
    """
    with VisionFixtureServer(mode="downscale", token_limit=256) as server:
        trap_code, trap = _run(server, tmp_path, "policy.resize=none", "policy.image_max_tokens=256",
                               samples=8, name="trap.json")
        trap_requests = list(server.requests)
        server.requests.clear()
        fixed_code, fixed = _run(server, tmp_path, "policy.resize=qwen2.5-vl", "policy.image_max_tokens=256",
                                 samples=8, name="fixed.json")
        fixed_requests = list(server.requests)
    # the trap: the server saw a smaller image than was sent, and the clicks miss, scaled
    assert all(r["received_size"] == (640, 400) and r["model_size"] != r["received_size"] for r in trap_requests)
    assert trap_code == 2 and trap["summary"]["hits"] <= 2
    pattern = trap["summary"]["pattern"]
    assert pattern["verdict"].startswith("scaled")
    kx, ky = pattern["scale_fit"]
    w, h = trap_requests[0]["model_size"]
    assert kx == pytest.approx(w / 640, abs=0.03) and ky == pytest.approx(h / 400, abs=0.03)
    # the fix: the image arrives within the limit, the server leaves it alone, every click hits
    assert all(r["model_size"] == r["received_size"] for r in fixed_requests)
    assert fixed_code == 0 and fixed["summary"]["hits"] == 8
    assert fixed["cases"][0]["decision_meta"]["image_tokens"] <= 256
    # same images both times: the difference is the pipeline, not the data
    assert [c["image"]["sha256"] for c in trap["cases"]] == [c["image"]["sha256"] for c in fixed["cases"]]


def test_parallel_sends_k_at_once_and_scores_the_same(tmp_path):
    with VisionFixtureServer(mode="centre", token_limit=100_000, delay_s=0.3) as server:
        code1, serial = _run(server, tmp_path, samples=6, name="serial.json")
        assert server.max_in_flight == 1
        code3, par = _run(server, tmp_path, "--parallel", "3", samples=6, name="par.json")
        assert server.max_in_flight == 3
    assert code1 == code3 == 0
    assert [c["image"]["sha256"] for c in serial["cases"]] == [c["image"]["sha256"] for c in par["cases"]]
    assert [c["predicted"] for c in serial["cases"]] == [c["predicted"] for c in par["cases"]]
    assert par["parameters"]["parallel"] == 3
    assert par["summary"]["wall_s"] < serial["summary"]["wall_s"]


def test_sheet_of_misses(tmp_path):
    sheet = tmp_path / "misses.png"
    with VisionFixtureServer(mode="outside", token_limit=100_000) as server:
        code, data = _run(server, tmp_path, "--sheet", str(sheet), samples=5)
    assert code == 2 and data["sheet"] == str(sheet)
    with Image.open(sheet) as img:
        assert img.size[0] == 4 * (360 + 8) + 8  # 4 columns of 360 px thumbnails
        assert img.size[1] == 2 * (225 + 30 + 8) + 8  # 2 rows for 5 misses
    assert draw_sheet([{**c, "hit": True} for c in data["cases"]], 1, (640, 400)) is None


def test_no_sheet_when_all_hit(tmp_path, capsys):
    sheet = tmp_path / "none.png"
    with VisionFixtureServer(mode="centre", token_limit=100_000) as server:
        code, data = _run(server, tmp_path, "--sheet", str(sheet), samples=2)
    assert code == 0 and not sheet.exists() and data["sheet"] is None
    assert "no misses" in capsys.readouterr().out


def test_relative1000_convention_through_the_adapter(tmp_path):
    with VisionFixtureServer(mode="centre", token_limit=100_000, convention="relative1000") as server:
        code, data = _run(server, tmp_path, "policy.convention=relative1000", samples=4)
        wrong_code, wrong = _run(server, tmp_path, "policy.convention=absolute", samples=4, name="wrong.json")
    assert code == 0
    assert wrong_code == 2  # 0-1000 answers read as pixels: scaled (or out of the image: errors)


# --- the mock policy through the CLI (offline, scripted exact answers) ----------------------------------


def test_cli_mock_script_all_hit_and_report_renders(tmp_path, capsys):
    script = tmp_path / "clicks.yaml"
    steps = []
    for i in range(3):
        cx, cy = generate_case(5, i, (640, 400)).target.centre
        steps.append({"action": {"type": "click", "x": cx, "y": cy}})
    script.write_text(json.dumps(steps))
    out = tmp_path / "mock.json"
    code = main(["vision-check", "--mock-script", str(script), "--samples", "3", "--seed", "5", "--size", SIZE,
                 "--output", str(out), "--quiet"])
    assert code == 0
    data = json.loads(out.read_text())
    assert data["model_id"] == "conway-mock" and data["summary"]["hits"] == 3
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    text = capsys.readouterr().out
    assert "hits 3/3" in text and "Wilson" in text and "conway vision-check --mock-script" in text


def test_cli_mock_default_waits_are_errors(tmp_path):
    out = tmp_path / "w.json"
    assert main(["vision-check", "--mock", "--samples", "2", "--size", SIZE, "--output", str(out), "--quiet"]) == 2
    data = json.loads(out.read_text())
    assert data["summary"]["errors"] == 2 and "not a click" in data["cases"][0]["error"]


def test_default_size_without_display(tmp_path, monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    home = resolve_home(None)
    cfg = load_config(None, ["policy=mock"])

    class Centre(Policy):
        model_id = "oracle"

        def decide(self, ctx):
            cx, cy = find_colour_centre(Image.open(__import__("io").BytesIO(ctx.observation.png)),
                                        PALETTE[next(p.text for p in ctx.parts if p.name == "goals.md").split()[2]])
            return Decision(raw_text="{}", actions=[Click(x=cx, y=cy)], model_id="oracle")

    out = tmp_path / "d.json"
    code = vision_check(home, cfg, output=str(out), samples=1, seed=0, progress=False, policy=Centre(),
                        say=lambda s: None)
    data = json.loads(out.read_text())
    import sys
    if sys.platform.startswith("linux"):
        assert data["parameters"]["size"] == [1920, 1080]
        assert "no display" in data["parameters"]["size_source"]
    assert code == 0 and data["model_id"] == "oracle"


# --- bad input: clear message, exit 1 ------------------------------------------------------------------


@pytest.mark.parametrize("args,msg", [
    (["--samples", "0"], "--samples must be at least 1"),
    (["--samples", "-3"], "--samples must be at least 1"),
    (["--parallel", "0"], "--parallel must be at least 1"),
    (["--size", "big"], "--size must look like WIDTHxHEIGHT"),
])
def test_cli_bad_arguments(tmp_path, capsys, args, msg):
    code = main(["vision-check", "--mock", "--output", str(tmp_path / "o.json"), *args])
    assert code == 1
    assert msg in capsys.readouterr().err
    assert not (tmp_path / "o.json").exists()


def test_cli_output_exists_refused(tmp_path, capsys):
    out = tmp_path / "o.json"
    out.write_text("keep me")
    assert main(["vision-check", "--mock", "--samples", "1", "--output", str(out)]) == 1
    assert "already exists" in capsys.readouterr().err and out.read_text() == "keep me"


def test_cli_output_in_home_refused(tmp_path, conway_home, capsys):
    assert main(["init"]) == 0
    capsys.readouterr()
    assert main(["vision-check", "--mock", "--samples", "1", "--output", str(conway_home / "v.json")]) == 1
    assert "inside the Conway home" in capsys.readouterr().err


def test_cli_sheet_exists_refused(tmp_path, capsys):
    sheet = tmp_path / "s.png"
    sheet.write_bytes(b"x")
    assert main(["vision-check", "--mock", "--samples", "1", "--output", str(tmp_path / "o.json"),
                 "--sheet", str(sheet)]) == 1
    assert "contact sheet" in capsys.readouterr().err


def test_shape_contains_inclusive():
    s = Shape("red", "square", (10, 20, 30, 40))
    assert s.contains(10, 20) and s.contains(30, 40) and not s.contains(30.01, 40) and s.centre == (20, 30)


# --- the real tiny VLM through llama.cpp (structure and honest scoring, not hit rates) -----------------

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests" / "fixtures" / "tiny-vlm"


def _llama_backend_skip(backend: str) -> str | None:
    import importlib.util
    if not (TINY / "tiny-vlm.gguf").exists() or not (TINY / "tiny-vlm-mmproj.gguf").exists():
        return "tiny VLM fixtures are missing (scripts/build/build_tiny_vlm.py --out tests/fixtures/tiny-vlm)"
    if backend == "inprocess":
        return None if importlib.util.find_spec("llama_cpp") else "llama-cpp-python is not installed ('.[llama]')"
    from conway.config import RuntimeConfig
    from conway.errors import UserError
    from conway.runtime.server import find_program
    try:
        find_program(RuntimeConfig())
    except UserError as exc:
        return f"no model server program: {exc}"
    return None


@pytest.mark.llama
@pytest.mark.slow
@pytest.mark.parametrize("backend", ["inprocess", "server"])
def test_vision_check_on_the_real_tiny_vlm(tmp_path, backend):
    reason = _llama_backend_skip(backend)
    if reason:
        pytest.skip(reason)
    out = tmp_path / "tiny.json"
    sheet = tmp_path / "tiny.png"
    code = main(["vision-check", "--samples", "4", "--seed", "3", "--size", "320x200", "--output", str(out),
                 "--sheet", str(sheet), "--quiet", "--parallel", "2", "policy=generic",
                 f"policy.backend={'llama_cpp' if backend == 'inprocess' else 'http'}",
                 f"policy.model_path={TINY / 'tiny-vlm.gguf'}", f"policy.mmproj_path={TINY / 'tiny-vlm-mmproj.gguf'}",
                 "policy.max_tokens=48", "policy.seed=0", "runtime.n_ctx=4096", "runtime.parallel=2"])
    data = json.loads(out.read_text())
    s = data["summary"]
    assert data["model_id"] == "tiny-vlm" and s["cases"] == 4 and len(data["cases"]) == 4
    # honest scoring: every number in the summary is recomputable from the cases
    hits = errors = 0
    for i, case in enumerate(data["cases"]):
        assert case["image"]["sha256"] == generate_case(3, i, (320, 200)).sha256
        assert case["raw_output"] is not None and case["model_id"] == "tiny-vlm" and case["latency_s"] > 0
        meta = case["decision_meta"]
        assert meta["sent_size"][0] % 28 == 0 and meta["sent_size"][1] % 28 == 0  # the Qwen rule, on our side
        assert meta["captured_size"] == [320, 200]
        if case["error"]:
            errors += 1
            assert case["predicted"] is None and case["hit"] is False
        else:
            x, y = case["predicted"]
            x0, y0, x1, y1 = case["target"]["box"]
            assert case["hit"] == (x0 <= x <= x1 and y0 <= y <= y1)
            cx, cy = case["target"]["centre"]
            assert case["distance_px"] == pytest.approx(((x - cx) ** 2 + (y - cy) ** 2) ** 0.5, abs=0.02)
            hits += case["hit"]
    assert (s["hits"], s["errors"], s["misses"]) == (hits, errors, 4 - hits - errors)
    assert code == (0 if hits == 4 else 3 if s["valid_decisions"] == 0 else 2)
    for case in data["cases"]:  # an answer stopped at max_tokens says so (random weights ramble)
        if case["decision_meta"].get("finish_reason") == "length" and case["error"]:
            assert case["error"] == "output cut off at max_tokens (48)" and case["error_cause"] == "cut off"
    assert sheet.exists() == (hits < 4)


def test_long_suite_streams_cases_beside_the_report(tmp_path, capsys):
    out = tmp_path / "long.json"
    assert main(["vision-check", "--mock", "--samples", "205", "--size", "96x64", "--output", str(out),
                 "--quiet", "--parallel", "4"]) == 2
    data = json.loads(out.read_text())
    side = tmp_path / "long.cases.jsonl"
    assert "cases" not in data and data["cases_file"]["count"] == 205 and side.exists()
    assert sorted(json.loads(line)["index"] for line in side.read_text().splitlines()) == list(range(205))
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line[:1].isdigit()]
    assert rows[0].startswith("0 ") and rows[1].startswith("1 ")  # in case order, whatever order they finished
    out2 = tmp_path / "long2.json"
    (tmp_path / "long2.cases.jsonl").write_text("")
    assert main(["vision-check", "--mock", "--samples", "205", "--output", str(out2), "--quiet"]) == 1
    assert "already exists" in capsys.readouterr().err
