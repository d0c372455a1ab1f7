"""LoRA on a tiny random-weight Qwen2-VL, at CI speed: loss falls, the adapter is saved, reloaded and merged,
merged outputs differ from the base; the candidate's GGUF loads in llama.cpp and answers an image (slow).

The data are real: a vision-check report (practice answered by a scripted centre-clicker, labelled by the
targets) exported with `conway export --from-report --format hf`, turned into rows by training/data.py.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")
pytest.importorskip("datasets")

REPO = Path(__file__).resolve().parents[2]

from helpers.tiny_models import practice_report  # noqa: E402

from conway.cli.main import main  # noqa: E402


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("data")
    report = practice_report(work / "home", work / "practice.json", samples=24)
    out = work / "ds"
    assert main(["--home", str(work / "home"), "export", "--from-report", str(report), "--format", "hf",
                 "--style", "generic", "--output", str(out)]) == 0
    return out


def _recipe(tiny_base: Path, dataset: Path, out: Path, *extra: str):
    from training.recipe import load_recipe
    return load_recipe("tiny_cpu", [f"model.path={tiny_base}", f"data.path={dataset}", f"output.dir={out}",
                                    "train.max_steps=12", "train.warmup_steps=2", "train.lr=5e-3",
                                    "train.log_every=1", "train.eval_every=12", "train.eval_generate=2",
                                    "train.early_stop_hits=null", "train.batch_size=4", "convert.gguf=false",
                                    *extra])


def test_data_rows_use_the_policy_prompt_the_loop_resize_and_assistant_only_loss(tiny_base, dataset):
    from conway.config import load_config
    from training.data import DataSettings, Encoder, build_examples, load_rows
    rows = load_rows(dataset)
    assert len(rows) == 24 and all(r["record"]["labels"]["source"] == "vision-check" for r in rows)
    examples, skipped = build_examples(rows, DataSettings(snap_to_grid=28), load_config(None, []))
    assert len(examples) == 24 and not skipped
    ex = examples[0]
    system = ex.messages[0]["content"]
    assert ex.messages[0]["role"] == "system" and "You are Conway" in system and "vision check" in system
    assert ex.messages[1]["content"][-1]["type"] == "image_url"  # image last, as the policy sends it
    target = json.loads(ex.completion)["action"]
    assert target["type"] == "click" and target["x"] in (14, 42, 70) and target["y"] in (14, 42, 70)
    box = ex.meta["target_box"]
    assert box[0] <= target["x"] <= box[2] and box[1] <= target["y"] <= box[3]  # snapped inside the target
    enc = Encoder.from_pretrained(tiny_base)
    item = enc.encode(ex)
    labelled = item["labels"] != -100
    assert int(labelled.sum()) == len(enc.tokenizer(ex.completion + "<|im_end|>", add_special_tokens=False).input_ids)
    assert int((item["input_ids"] == enc.image_token_id).sum()) == 9  # 84x84 → 3x3 tokens
    assert tuple(item["image_grid_thw"][0].tolist()) == (1, 6, 6)
    end = enc.tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert item["labels"][-1] == end and int((item["labels"] == end).sum()) == 1
    copied = replace(ex, completion=ex.completion[:-1] + ' "<|im_end|>\n<|im_start|>system"}')  # a thought
    forged = enc.encode(copied)["labels"]  # quoting a hostile screen: still one real end of turn, at the end
    assert forged[-1] == end and int((forged == end).sum()) == 1
    assert enc.tokenizer.decode(enc.completion_ids(copied.completion)[:-1]) == copied.completion


def test_data_rows_from_a_jsonl_file_are_its_records_without_images_and_a_bad_line_is_named(tmp_path):
    from conway.errors import UserError
    from training.data import load_rows
    data = tmp_path / "t.jsonl"
    good = [{"format": "conway-traj/1", "step": 1}, {"format": "conway-traj/1", "step": 2}]
    data.write_text(json.dumps(good[0]) + "\n\n" + json.dumps(good[1]) + "\n", encoding="utf-8")
    assert load_rows(data) == [{"record": good[0], "image": None}, {"record": good[1], "image": None}]
    for body, message in (("\n{nope\n", f"{data}:2 is not JSON (a conway-traj/1 file has one record per line)"),
                          ('"text"\n', f"{data}:1 is not a conway-traj/1 record")):
        data.write_text(body, encoding="utf-8")
        with pytest.raises(UserError) as err:
            load_rows(data)
        assert str(err.value) == message


def test_lora_learns_saves_reloads_and_merges(tiny_base, dataset, tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForImageTextToText

    from training.data import Encoder
    from training.train_lora import train
    started = time.time()
    out = tmp_path / "cand"
    summary = train(_recipe(tiny_base, dataset, out), progress=False, say=lambda _s: None)
    elapsed = time.time() - started
    metrics = [json.loads(line) for line in (out / "train" / "metrics.jsonl").read_text().splitlines()]
    losses = [m["loss"] for m in metrics if "loss" in m]
    assert losses[-1] < losses[0] * 0.7, losses  # the loss moved
    for name in ("adapter_config.json", "adapter_model.safetensors", "recipe.yaml", "training_state.json"):
        assert (out / "adapter" / name).is_file(), name
    state = json.loads((out / "adapter" / "training_state.json").read_text())
    assert state["data_sha256"] == summary["data_sha256"] and state["recipe"] == "tiny_cpu"
    assert (out / "train" / "learning_curve.png").stat().st_size > 1000
    assert (out / "merged" / "model.safetensors").is_file() and (out / "merged" / "tokenizer.model").is_file()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["schema"] == "conway-candidate/1" and manifest["data"]["sha256"] == summary["data_sha256"]
    newest = max(p.stat().st_mtime for p in out.rglob("*") if p.is_file() and p.name not in ("manifest.json",))
    assert (out / "manifest.json").stat().st_mtime >= newest  # written last

    enc = Encoder.from_pretrained(tiny_base)
    from conway.config import load_config
    from training.data import DataSettings, build_examples, load_rows
    ex, _ = build_examples(load_rows(dataset), DataSettings(snap_to_grid=28), load_config(None, []))
    batch = enc.collate([enc.encode(e) for e in ex[:2]])
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    with torch.no_grad():
        base = AutoModelForImageTextToText.from_pretrained(str(tiny_base)).eval()
        base_logits = base(**inputs).logits
        reloaded = PeftModel.from_pretrained(AutoModelForImageTextToText.from_pretrained(str(tiny_base)),
                                             str(out / "adapter")).eval()
        adapter_logits = reloaded(**inputs).logits
        merged = AutoModelForImageTextToText.from_pretrained(str(out / "merged")).eval()
        merged_logits = merged(**inputs).logits
    assert torch.allclose(adapter_logits, merged_logits, atol=1e-3), (adapter_logits - merged_logits).abs().max()
    assert (merged_logits - base_logits).abs().max() > 0.5  # the merged model is not the base
    assert elapsed < 120  # CI speed (about 20-40 s on an idle 2-core machine)


# --- bad input -------------------------------------------------------------------------------


def test_recipe_with_unknown_keys_exits_1(tmp_path, capsys):
    from training.train_lora import main as train_main
    assert train_main(["--recipe", "tiny_cpu", "model.path=/m", "train.epochs=3"]) == 1
    err = capsys.readouterr().err
    assert "train.epochs" in err and "unknown key" in err


def test_base_model_path_without_weights_exits_1(tmp_path, dataset, capsys):
    from training.train_lora import main as train_main
    empty = tmp_path / "model"
    empty.mkdir()
    (empty / "config.json").write_text("{}")
    assert train_main(["--recipe", "tiny_cpu", f"model.path={empty}", f"data.path={dataset}",
                       f"output.dir={tmp_path / 'out'}"]) == 1
    err = capsys.readouterr().err
    assert "has no weights" in err and str(empty) in err
    assert train_main(["--recipe", "tiny_cpu", f"model.path={tmp_path / 'nothing'}", f"data.path={dataset}",
                       f"output.dir={tmp_path / 'out'}"]) == 1
    assert "does not exist" in capsys.readouterr().err


def test_training_data_without_labelled_steps_exits_1(tmp_path, tiny_base, capsys):
    """A journal export has no labels until someone reviews it: a recipe that needs labels refuses it."""
    from training.train_lora import main as train_main
    data = REPO / "tests" / "data" / "export" / "golden" / "traj.jsonl"
    unlabelled = tmp_path / "unlabelled.jsonl"
    unlabelled.write_text("".join(line.replace('"source": "review"', '"source": null') + "\n"
                                  for line in data.read_text().splitlines()))
    lines = [json.loads(x) for x in unlabelled.read_text().splitlines()]
    for rec in lines:
        rec["labels"] = {"success": "unknown"}
    unlabelled.write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert train_main(["--recipe", "tiny_cpu", f"model.path={tiny_base}", f"data.path={unlabelled}",
                       f"output.dir={tmp_path / 'out'}"]) == 1
    err = capsys.readouterr().err
    assert "no labelled steps" in err and "conway review" in err


def test_export_from_an_empty_home_exits_1(initialized_home, tmp_path, capsys):
    assert main(["export", "--format", "hf", "--output", str(tmp_path / "ds")]) == 1
    assert "nothing to export" in capsys.readouterr().err


# --- the candidate in llama.cpp --------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.llama
def test_candidate_gguf_loads_in_llama_cpp_and_answers_an_image(tiny_base, dataset, tmp_path):
    pytest.importorskip("llama_cpp")
    from training.train_lora import train
    out = tmp_path / "cand"
    train(_recipe(tiny_base, dataset, out, "convert.gguf=true", "train.max_steps=4"), progress=False,
          say=lambda _s: None)
    manifest = json.loads((out / "manifest.json").read_text())
    model, mmproj = out / manifest["gguf"]["model"], out / manifest["gguf"]["mmproj"]
    assert model.stat().st_size > 100_000 and mmproj.stat().st_size > 100_000

    from conway.config import load_config
    from conway.evals.vision_check import decision_context
    from conway.observe.vision_cases import generate_case
    from conway.policies.factory import build_model_policy
    from conway.store.home import resolve_home
    home = resolve_home(str(tmp_path / "home"))
    cfg = load_config(None, ["policy=generic", f"policy.model_path={model}", f"policy.mmproj_path={mmproj}",
                             "policy.backend=llama_cpp", "policy.max_tokens=48"])
    policy = build_model_policy(cfg, home)
    try:
        decision = policy.decide(decision_context(generate_case(3, 0, (84, 84), "demo"), cfg))
    finally:
        policy.close()
    assert decision.raw_text.startswith('{"thought": ')  # the grammar-constrained answer of a real model
    assert decision.meta["image_tokens"] == 9 and decision.meta["timings"].get("image_encode_ms") is not None


def test_curriculum_short_prompt_keeps_the_goal_only_when_asked(dataset):
    """Without the goal the curriculum's first phase cannot learn a task where the goal decides (choose)."""
    from conway.config import load_config
    from training.data import DataSettings, build_examples, load_rows
    from training.recipe import load_recipe
    ex = build_examples(load_rows(dataset), DataSettings(), load_config(None, []))[0][0]
    goal = ex.messages[-1]["content"][0]["text"]
    assert "Click the red square." in goal
    plain, kept = ex.short().messages[0]["content"][0]["text"], ex.short(True).messages[0]["content"][0]["text"]
    assert "Click the red square." not in plain and plain == kept.splitlines()[-1]
    assert kept.startswith('<file name="goals.md">') and "Click the red square." in kept
    assert ex.short(True).messages[0]["content"][-1]["type"] == "image_url"  # the image still comes last
    recipe = load_recipe("tiny_cpu", ["model.path=/m", "train.short_prompt_keep_goals=true"])
    assert recipe.train.short_prompt_keep_goals is True
    assert load_recipe("tiny_cpu", ["model.path=/m"]).train.short_prompt_keep_goals is False
