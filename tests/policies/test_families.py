"""The family registry: every registered family is whole and consistent, and every place that names
families (config, command line, export, presets) takes its names from the registry."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import yaml

from conway.config import load_config
from conway.errors import UserError
from conway.geometry import Convention, captured_to_model
from conway.policies import families
from conway.policies.families import FAMILIES, MOCK, POLICY_KINDS, REGISTERED, get_family, get_resize_rule
from conway.policies.target_turns import render_target

REPO = Path(__file__).resolve().parents[2]
PRESETS = REPO / "configs" / "policy"
CAPTURED = (1280, 800)
TARGET = (901.0, 247.0)  # off-centre, so a wrong convention cannot land on it by symmetry


def test_every_family_folder_is_registered_under_its_own_name():
    folders = {p.name for p in Path(families.__file__).parent.iterdir() if (p / "__init__.py").exists()}
    assert folders == set(REGISTERED)  # a folder left out of REGISTERED would be silently ignored
    assert list(FAMILIES) == list(REGISTERED)  # each folder's record is named as its folder


def _step(family_name: str, convention: str) -> dict:
    """A recorded click as `family_name` saw it: the family's resize rule applied to the capture."""
    sent = get_family(family_name).resize.target_size(CAPTURED)
    return {"session": "s", "step": 1,
            "geometry": {"captured_size": list(CAPTURED), "sent_size": list(sent), "convention": convention,
                         "policy": family_name},
            "decision": {"thought": "the button", "actions": [{"type": "click", "x": TARGET[0], "y": TARGET[1]}]}}


@pytest.mark.parametrize("name", list(FAMILIES))
def test_the_adapter_builds_and_records_the_family_name(name):
    family = FAMILIES[name]
    adapter = family.adapter()
    assert adapter.name == family.name == name  # the journal records it as the deciding family
    assert callable(adapter.parse) and callable(adapter.structured) and adapter.request_text()
    assert get_resize_rule(family.resize.name) is family.resize  # policy.resize finds the family's rule by name


@pytest.mark.parametrize("name", list(FAMILIES))
@pytest.mark.parametrize("convention", ["default", "relative1000"])
def test_the_parser_reads_back_the_click_its_renderer_wrote(name, convention):
    family = FAMILIES[name]
    conv = family.convention.value if convention == "default" else convention
    rec = _step(name, conv)
    target = render_target(rec, family)
    assert target.convention == conv and target.source == "recorded"
    parsed = family.adapter().parse(target.text, convention=Convention(conv),
                                    sent_size=target.sent_size, captured_size=CAPTURED)
    assert parsed.ok, parsed
    (act,) = parsed.actions
    assert act.type == "click"
    # the text holds whole model units: read back within one unit of the model's grid, in captured pixels
    unit_x = CAPTURED[0] / (1000 if conv == "relative1000" else target.sent_size[0])
    unit_y = CAPTURED[1] / (1000 if conv == "relative1000" else target.sent_size[1])
    assert abs(act.x - TARGET[0]) <= unit_x and abs(act.y - TARGET[1]) <= unit_y
    model_x, _ = captured_to_model(TARGET[0], TARGET[1], conv, target.sent_size, CAPTURED)
    shown = round(model_x, 4) if Convention(conv).rule.fractional else round(model_x)  # Kimi's 0..1: decimals
    assert str(shown) in target.text  # the rendered number is in this convention


def test_a_step_from_another_family_is_rendered_in_the_family_defaults():
    rec = _step("generic", "relative1000")
    for family in FAMILIES.values():
        target = render_target(rec, family)
        if family.follows_prompted_geometry:
            assert target.convention == "relative1000"
        else:
            assert target.convention == family.convention.value
            assert target.sent_size == family.resize.target_size(CAPTURED)


def test_unknown_family_names_the_known_ones():
    with pytest.raises(ValueError) as err:
        get_family("gpt9")
    assert all(name in str(err.value) for name in FAMILIES)


def test_mock_is_a_policy_kind_but_no_model_family():
    assert POLICY_KINDS == (MOCK, *FAMILIES) and MOCK not in FAMILIES
    assert load_config(None, ["policy.kind=mock"]).policy.kind == "mock"


@pytest.mark.parametrize("kind", POLICY_KINDS)
def test_config_takes_every_registered_kind(kind):
    assert load_config(None, [f"policy.kind={kind}"]).policy.kind == kind


def test_config_refuses_an_unknown_kind_in_one_line_listing_the_known_ones():
    with pytest.raises(UserError) as err:
        load_config(None, ["policy.kind=gpt9"])
    (line,) = [ln for ln in str(err.value).splitlines() if "policy.kind" in ln]
    assert "gpt9" in line and all(f"'{kind}'" in line for kind in POLICY_KINDS)


def _choices(parser: argparse.ArgumentParser, command: str, option: str) -> tuple:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    action = next(a for a in sub.choices[command]._actions if option in a.option_strings)
    return tuple(action.choices)


def test_export_style_choices_are_the_registry():
    from conway.cli.main import build_parser
    assert _choices(build_parser(), "export", "--style") == tuple(FAMILIES)


def test_export_refuses_an_unknown_style_naming_the_families(tmp_path):
    from conway.experience.export import export
    with pytest.raises(UserError) as err:
        export(tmp_path / "journal", tmp_path / "out.jsonl", style="gpt9")
    assert all(name in str(err.value) for name in FAMILIES)


def test_every_policy_preset_belongs_to_the_family_it_serves():
    declared = {p: f.name for f in FAMILIES.values() for p in f.presets}
    shipped = {p.stem: yaml.safe_load(p.read_text(encoding="utf-8"))["kind"] for p in PRESETS.glob("*.yaml")}
    assert {name: kind for name, kind in shipped.items() if kind != MOCK} == declared



_POINTER_ACTIONS = {  # (type, button) -> what the parser reads back (a right-button click is a RightClick)
    ("click", "left"): ("click", "left"), ("click", "right"): ("right_click", None),
    ("click", "middle"): ("click", "middle"), ("double_click", None): ("double_click", None),
    ("triple_click", None): ("triple_click", None), ("right_click", None): ("right_click", None),
    ("move", None): ("move", None)}


@pytest.mark.parametrize("kind, button", list(_POINTER_ACTIONS))
@pytest.mark.parametrize("turn, calls", [
    ("opencua_turn", {("click", "left"): "pyautogui.click", ("click", "right"): "pyautogui.rightClick",
                      ("click", "middle"): "pyautogui.middleClick", ("double_click", None): "pyautogui.doubleClick",
                      ("triple_click", None): "pyautogui.tripleClick", ("right_click", None): "pyautogui.rightClick",
                      ("move", None): "pyautogui.moveTo"}),
    ("uitars_turn", {("click", "left"): "click", ("click", "right"): "right_single",
                     ("double_click", None): "left_double", ("right_click", None): "right_single",
                     ("move", None): "hover"}),
])
def test_each_pointer_action_is_written_as_the_familys_call_and_read_back(turn, calls, kind, button):
    from conway.policies.families.opencua import parse as parse_opencua
    from conway.policies.families.opencua.turn import opencua_turn
    from conway.policies.families.uitars import parse as parse_uitars
    from conway.policies.families.uitars.turn import uitars_turn
    render = {"opencua_turn": opencua_turn, "uitars_turn": uitars_turn}[turn]
    parse = parse_opencua.parse if turn == "opencua_turn" else parse_uitars.parse
    action = {"type": kind, **({"button": button} if button else {})}
    if (kind, button) not in calls:  # UI-TARS has no middle click and no triple click
        with pytest.raises(ValueError, match=f"^{kind} has no UI-TARS form$"):
            render(action, {("x", "y"): (30, 40)}, None)
        return
    text = render(action, {("x", "y"): (30, 40)}, None)
    call = calls[(kind, button)]
    assert (f"{call}(x=30, y=40)" if turn == "opencua_turn" else f"{call}(start_box='(30,40)')") in text
    (act,) = parse(text, convention="absolute", sent_size=(100, 100), captured_size=(100, 100)).actions
    assert (act.type, getattr(act, "button", None), act.x, act.y) == (*_POINTER_ACTIONS[(kind, button)], 30, 40)


def test_a_resize_rule_name_says_one_rule() -> None:
    """A journal records a rule by name: two families may share a rule, never give one name to two."""
    from conway.geometry import QWEN25_VL_RULE, ResizeRule

    same = ResizeRule(28, 3136, 12845056, name="qwen2.5-vl")
    assert families._by_name((QWEN25_VL_RULE, same)) == {"qwen2.5-vl": QWEN25_VL_RULE}
    with pytest.raises(ValueError, match="two resize rules are called 'qwen2.5-vl'"):
        families._by_name((QWEN25_VL_RULE, ResizeRule(28, 3136, 1003520, name="qwen2.5-vl")))
    with pytest.raises(ValueError, match="lower case"):
        families._by_name((ResizeRule(28, 3136, 1003520, name="Holo"),))
