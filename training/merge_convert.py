""".venv/bin/python -m training.merge_convert --adapter OUT/adapter [--out OUT] [--outtype f16]

Merge a LoRA adapter into its base model, save the merged Hugging Face model
(OUT/merged/, with the base's tokenizer and preprocessor files), convert it to
GGUF + mmproj for llama.cpp (OUT/gguf/model.gguf, OUT/gguf/mmproj.gguf) with
the same converter path as scripts/build/build_tiny_vlm.py (convert_hf_to_gguf.py of
the llama-cpp-python 0.3.36 sdist and its bundled gguf-py), and write
OUT/manifest.json LAST, so a candidate folder without a manifest is known to
be incomplete. `training/train_lora.py` calls `finish_candidate` itself; this
command redoes the merge/convert for an adapter saved earlier.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from conway.errors import UserError

REPO = Path(__file__).resolve().parent.parent
# Files a merged model needs besides its weights (copied from the base when present).
SIDE_FILES = ("tokenizer.model", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
              "added_tokens.json", "vocab.json", "merges.txt", "preprocessor_config.json",
              "processor_config.json", "chat_template.json", "chat_template.jinja", "generation_config.json")


def _builder() -> Any:
    """scripts/build/build_tiny_vlm.py as a module: its converter is the one candidates use."""
    import importlib.util

    path = REPO / "scripts" / "build" / "build_tiny_vlm.py"
    spec = importlib.util.spec_from_file_location("conway_build_tiny_vlm", path)
    if spec is None or spec.loader is None:
        raise UserError(f"cannot load the converter wrapper {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("conway_build_tiny_vlm", module)
    spec.loader.exec_module(module)
    return module


def merge(model: Any, base: Path, out: Path) -> Path:
    """Merge LoRA weights (and modules_to_save copies) into the base; save to OUT/merged/."""
    merged_dir = out / "merged"
    if merged_dir.exists():
        shutil.rmtree(merged_dir)
    merged = model.merge_and_unload()
    merged.save_pretrained(str(merged_dir), safe_serialization=True)
    for name in SIDE_FILES:
        src = base / name
        if src.is_file() and not (merged_dir / name).exists():
            shutil.copy2(src, merged_dir / name)
    return merged_dir


def convert(merged_dir: Path, out: Path, *, outtype: str = "f16", llama_cpp: str | None = None,
            model_name: str = "candidate", verbose: bool = False) -> dict[str, str]:
    """GGUF model + mmproj from a merged folder, through the tiny-model builder's converter call."""
    b = _builder()
    settings = b.Settings()
    settings.gguf.outtype = outtype
    settings.gguf.model_name = model_name
    root = b.ensure_llama_cpp(Path(llama_cpp) if llama_cpp else None)
    gguf_dir = out / "gguf"
    gguf_dir.mkdir(parents=True, exist_ok=True)
    model_file, mmproj_file = gguf_dir / "model.gguf", gguf_dir / "mmproj.gguf"
    try:
        b.convert(root, merged_dir, model_file, settings, mmproj=False, python=sys.executable, verbose=verbose)
        b.convert(root, merged_dir, mmproj_file, settings, mmproj=True, python=sys.executable, verbose=verbose)
        if (merged_dir / "tokenizer.model").is_file() and hasattr(b, "disable_space_prefix"):
            # a sentencepiece vocabulary: the converter leaves add_space_prefix unset and llama.cpp would put
            # a space after every special token, unlike transformers (the builder patches its base the same way)
            b.disable_space_prefix(root, model_file, python=sys.executable)
    except SystemExit as exc:
        raise UserError(f"GGUF conversion failed: {exc}") from None
    return {"model": "gguf/model.gguf", "mmproj": "gguf/mmproj.gguf"}


def finish_candidate(model: Any, base: Path, out: Path, recipe: Any, summary: dict[str, Any],
                     say: Any = print) -> dict[str, Any]:
    """Merge, convert (when the recipe says so) and write the manifest last."""
    from conway.evals.candidates import write_manifest

    t0 = time.time()
    merged_dir = merge(model, base, out)
    say(f"merged model: {merged_dir} ({time.time() - t0:.1f} s)")
    gguf: dict[str, str] = {}
    if recipe.convert.gguf:
        t1 = time.time()
        gguf = convert(merged_dir, out, outtype=recipe.convert.outtype, llama_cpp=recipe.convert.llama_cpp,
                       model_name=out.name)
        say(f"gguf: {out / gguf['model']} + {out / gguf['mmproj']} ({time.time() - t1:.1f} s)")
    base_gguf = {k: str(Path(v).expanduser().resolve()) for k, v in
                 (("model", recipe.convert.base_gguf), ("mmproj", recipe.convert.base_mmproj)) if v}
    manifest = {
        "name": out.name,
        "base_model": {"path": str(base.resolve()), "family": recipe.model.family, "gguf": base_gguf},
        "data": {"path": str(Path(recipe.data.path).expanduser().resolve()), "sha256": summary.get("data_sha256"),
                 "train_examples": summary.get("train_examples"), "eval_examples": summary.get("eval_examples")},
        "recipe": {"name": recipe.name, "sha256": recipe.digest(), "config": recipe.model_dump(mode="json")},
        "metrics": {k: summary.get(k) for k in ("steps", "stop_reason", "train_s", "first_loss", "final_loss",
                                                "final_eval_loss", "held_out_hit_rate", "held_out_scored")},
        "files": {"adapter": "adapter", "merged": "merged", "learning_curve": "train/learning_curve.png"},
        "gguf": gguf,
        "policy": {"kind": recipe.data.policy_kind,
                   **({"resize": recipe.data.resize} if recipe.data.resize != "auto" else {}),
                   **({"convention": recipe.data.convention} if recipe.data.convention != "auto" else {})},
        "eval": {"size": list(recipe.eval.size) if recipe.eval.size else None, "profile": recipe.eval.profile},
    }
    if not gguf:
        manifest["gguf"] = {}
    if summary.get("rollouts"):  # trained on rollouts: which, their rewards, and the policy that rolled them out
        manifest["rollouts"] = summary["rollouts"]
    write_manifest(out, manifest)
    say(f"candidate complete: {out / 'manifest.json'}")
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="merge_convert", description=__doc__.splitlines()[2])
    parser.add_argument("--adapter", required=True, help="an adapter folder saved by train_lora (has recipe.yaml)")
    parser.add_argument("--out", help="candidate folder (default: the adapter's parent)")
    parser.add_argument("--outtype", default=None, help="GGUF weight type (default: the recipe's)")
    args = parser.parse_args(argv)
    try:
        import yaml
        from peft import PeftModel

        from training.model_load import check_base_model, load_model
        from training.recipe import validate

        adapter = Path(args.adapter).expanduser()
        if not (adapter / "recipe.yaml").is_file():
            raise UserError(f"{adapter} has no recipe.yaml (not an adapter saved by train_lora)")
        recipe = validate(yaml.safe_load((adapter / "recipe.yaml").read_text(encoding="utf-8")), str(adapter))
        if args.outtype:
            recipe.convert.outtype = args.outtype
        base = check_base_model(recipe.model.path)
        model = PeftModel.from_pretrained(load_model(recipe, base), str(adapter))
        state = json.loads((adapter / "training_state.json").read_text(encoding="utf-8"))
        summary_path = adapter.parent / "train" / "summary.json"
        summary = json.loads(summary_path.read_text(encoding="utf-8")) if summary_path.is_file() else state
        finish_candidate(model, base, Path(args.out).expanduser() if args.out else adapter.parent, recipe, summary)
    except UserError as exc:
        sys.stderr.write(f"merge_convert: error: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
