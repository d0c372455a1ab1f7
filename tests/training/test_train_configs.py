"""Every recipe in configs/train/ composes and validates against the code, without building a model."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

from conway.errors import UserError  # noqa: E402
from conway.policies.families import ARCHITECTURES, FAMILIES  # noqa: E402
from training.recipe import RECIPES_DIR, Recipe, compose, load_recipe, recipe_names, validate  # noqa: E402

RECIPES = recipe_names()


def test_the_expected_recipes_ship():
    assert {"tiny_cpu", "grpo_tiny_cpu", "qwen2.5-vl-3b", "qwen2.5-vl-7b", "uitars-1.5-7b"} <= set(RECIPES)


@pytest.mark.parametrize("name", RECIPES)
def test_recipe_composes_and_validates(name):
    data = compose(name, ["model.path=/nowhere/model"])
    recipe = validate(data, name)
    assert isinstance(recipe, Recipe) and recipe.name == name
    assert recipe.data.policy_kind in FAMILIES
    assert recipe.model.path == "/nowhere/model"


@pytest.mark.parametrize("name", RECIPES)
def test_recipe_opens_with_its_command_and_comments_every_knob(name):
    lines = (RECIPES_DIR / f"{name}.yaml").read_text(encoding="utf-8").splitlines()
    head = "\n".join(lines[:6])
    assert f"training.train_lora --recipe {name}" in head or f"training.grpo --recipe {name}" in head
    for line in lines:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.endswith(":"):  # a section header
            continue
        assert "#" in line or stripped.startswith(("name:", "description:")), f"{name}: uncommented knob: {line}"


@pytest.mark.parametrize("name", RECIPES)
def test_every_key_in_the_file_is_known_to_the_code(name):
    """The file's own keys (not the model's defaults) are all fields of Recipe: nothing silently ignored."""
    import yaml
    data = yaml.safe_load((RECIPES_DIR / f"{name}.yaml").read_text(encoding="utf-8"))

    def walk(model_cls, d, where):
        for k, v in d.items():
            assert k in model_cls.model_fields, f"{name}: {where}{k} is not a recipe field"
            sub = model_cls.model_fields[k].annotation
            if isinstance(v, dict) and isinstance(sub, type) and hasattr(sub, "model_fields"):
                walk(sub, v, f"{where}{k}.")

    walk(Recipe, data, "")


def test_unknown_key_is_refused_with_its_name():
    with pytest.raises(UserError) as err:
        load_recipe("tiny_cpu", ["model.path=/m", "train.learning_rate=1e-3"])
    assert "train.learning_rate" in str(err.value) and "unknown key" in str(err.value)


def test_missing_model_path_is_refused():
    with pytest.raises(UserError) as err:
        load_recipe("tiny_cpu")
    assert "model" in str(err.value)


def test_contradictions_fail_at_load_time():
    with pytest.raises(UserError) as err:
        load_recipe("tiny_cpu", ["model.path=/m", "convert.merge=false"])
    assert "convert.gguf needs convert.merge" in str(err.value)
    with pytest.raises(UserError) as err:
        load_recipe("qwen2.5-vl-7b", ["model.path=/m", "model.family=opencua"])
    assert "trust_remote_code" in str(err.value)
    with pytest.raises(UserError):
        load_recipe("tiny_cpu", ["model.path=/m", "train.eval_generate=0"])  # early stop needs generation


@pytest.mark.parametrize("bad", ["rl.top_entropy_quantile=0", "rl.top_entropy_quantile=1.5",
                                 "rl.negative_scale=-0.1", "rl.negative_scale=2"])
def test_out_of_range_rl_shares_are_refused_with_their_name(bad):
    """A quantile of 0 would train no token and one over 1 means nothing; a negative scale would reward the
    unrewarded answers and one over 1 weigh them above GRPO's zero sum: refused when the recipe loads."""
    with pytest.raises(UserError) as err:
        load_recipe("grpo_tiny_cpu", ["model.path=/m", bad])
    assert bad.split("=")[0].split(".")[1] in str(err.value) and "unknown key" not in str(err.value)
    key = bad.split("=")[0]
    assert getattr(load_recipe("grpo_tiny_cpu", ["model.path=/m", f"{key}=0.5"]).rl, key.split(".")[1]) == 0.5


def test_unknown_recipe_lists_the_known_ones():
    with pytest.raises(UserError) as err:
        load_recipe("gpt-9")
    assert "tiny_cpu" in str(err.value)


def test_model_family_and_policy_kind_take_the_registrys_names():
    for arch in ARCHITECTURES:
        overrides = ["model.path=/m", f"model.family={arch}"]
        if ARCHITECTURES[arch].remote_code:
            overrides.append("model.trust_remote_code=true")
        if not ARCHITECTURES[arch].gguf:
            overrides.append("convert.gguf=false")
        assert load_recipe("tiny_cpu", overrides).model.family == arch
    for kind in FAMILIES:
        assert load_recipe("tiny_cpu", ["model.path=/m", f"data.policy_kind={kind}"]).data.policy_kind == kind
    with pytest.raises(UserError) as err:
        load_recipe("tiny_cpu", ["model.path=/m", "model.family=gpt9"])
    assert all(f"'{a}'" in str(err.value) for a in ARCHITECTURES)
    with pytest.raises(UserError) as err:
        load_recipe("tiny_cpu", ["model.path=/m", "data.policy_kind=mock"])  # a policy kind, not a family
    assert "data.policy_kind" in str(err.value) and all(f"'{k}'" in str(err.value) for k in FAMILIES)


@pytest.mark.parametrize("arch", list(ARCHITECTURES))
def test_the_architecture_sets_the_default_lora_targets(arch):
    extra = (["model.trust_remote_code=true"] if ARCHITECTURES[arch].remote_code else []) + \
        (["convert.gguf=false"] if not ARCHITECTURES[arch].gguf else [])
    unset = load_recipe("tiny_cpu", ["model.path=/m", f"model.family={arch}", "lora.target_modules=null", *extra])
    assert unset.lora.target_modules == ARCHITECTURES[arch].lora_targets
    kept = load_recipe("tiny_cpu", ["model.path=/m", f"model.family={arch}", *extra])
    assert kept.lora.target_modules == r".*language_model.*\.(v_proj|o_proj|gate_proj|up_proj|down_proj)"  # the file's


def test_the_architecture_decides_what_a_recipe_must_say():
    remote = [a for a in ARCHITECTURES.values() if a.remote_code]
    unconvertible = [a for a in ARCHITECTURES.values() if not a.gguf]
    assert [a.name for a in remote] == [a.name for a in unconvertible] == ["opencua"]
    with pytest.raises(UserError) as err:
        load_recipe("tiny_cpu", ["model.path=/m", "model.family=opencua", "model.trust_remote_code=true"])
    assert "convert.gguf=false" in str(err.value)
    ok = load_recipe("tiny_cpu", ["model.path=/m", "model.family=opencua", "model.trust_remote_code=true",
                                  "convert.gguf=false"])
    assert ok.model.family == "opencua"
