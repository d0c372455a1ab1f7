"""One table of actions and tools: every action class names its group, every group but control names the module
whose `ROW` is its one row in the toolbox's table, and the config's tool names are the table's."""

from __future__ import annotations

from typing import ClassVar, Literal, get_args

import pytest

from conway.actions import ACTION_GROUPS, ACTION_TYPES, TOOL_NAMES, TOOLS_ON_BY_DEFAULT, Action, _Action, types_of
from conway.config import ToolsConfig, load_config
from conway.tools.registry import build_toolbox, tool_rows


def test_an_action_class_without_a_group_is_refused_at_definition():
    with pytest.raises(TypeError, match="must declare group"):
        class Forgetful(_Action):
            type: Literal["forgetful"] = "forgetful"


def test_an_action_class_with_an_unknown_group_is_refused():
    with pytest.raises(TypeError, match="got 'gadget'"):
        class Odd(_Action):
            type: Literal["odd"] = "odd"
            group: ClassVar[str] = "gadget"


def test_action_types_are_the_union_and_each_class_declares_its_own_group():
    union = get_args(get_args(Action)[0])
    assert list(ACTION_TYPES.values()) == list(union)
    for cls in union:
        assert "group" in vars(cls), f"{cls.__name__} inherits its group"
        assert cls.group in ACTION_GROUPS


def test_every_group_but_control_has_exactly_one_row_and_each_row_runs_its_group():
    rows = [row.group for row in tool_rows()]
    assert sorted(rows) == sorted(f for f in ACTION_GROUPS if f != "control")
    assert all(types_of(f) for f in ACTION_GROUPS), "a group without actions"


def test_each_row_comes_from_the_module_its_group_names_in_the_toolbox_order():
    import importlib
    groups = [row.group for row in tool_rows()]
    assert groups == [group for group, runner in ACTION_GROUPS.items() if runner is not None]
    known = ["skill", "mcp", "file", "shell", "browser", "gui"]
    assert [g for g in groups if g in known] == known  # the prompt's tool texts and the findings keep this order
    for row in tool_rows():
        runner = ACTION_GROUPS[row.group]
        assert runner is not None and importlib.import_module(f"conway.tools.{runner.module}").ROW is row
    assert ACTION_GROUPS["control"] is None  # the loop runs wait and finish itself


def test_tool_modules_import_no_desktop_or_sdk():
    import subprocess
    import sys
    probe = ("import sys, conway.tools.registry; "
             "print(sorted(m for m in ('pyautogui', 'mcp', 'Xlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_config_tool_names_are_the_tables():
    literal = get_args(ToolsConfig.model_fields["enabled"].annotation)[0]
    named = [row.enabled_as for row in tool_rows() if row.enabled_as is not None]
    assert list(get_args(literal)) == named == list(TOOL_NAMES)  # in the table's order
    assert ToolsConfig().enabled == list(TOOLS_ON_BY_DEFAULT) == [  # those the table turns on, in its order
        n for n in named if next(t for t in ACTION_GROUPS.values() if t and t.module == n).on_by_default]


def test_a_new_tool_is_off_until_its_entry_or_an_owner_turns_it_on():
    # every tool in the table was on in every run by default, a new one too (config.py's default)
    from conway.actions import GroupTool

    assert GroupTool("newtool").on_by_default is False
    assert set(TOOLS_ON_BY_DEFAULT) == {"files", "shell", "browser", "gui"}  # the shipped defaults, unchanged


def test_the_built_tools_run_the_types_of_their_rows_group(tmp_path):
    cfg = load_config(None)
    box = build_toolbox(cfg.tools, tmp_path, gui=False)
    by_name = {t.name: t for t in box.tools}
    assert set(by_name) == set(TOOLS_ON_BY_DEFAULT)  # no MCP servers, no home: no MCP or skills
    for row in tool_rows():
        if row.enabled_as is not None:
            assert by_name[row.enabled_as].action_types == types_of(row.group)


def test_a_tool_left_out_of_tools_enabled_is_not_built(tmp_path):
    cfg = load_config(None)
    box = build_toolbox(cfg.tools.model_copy(update={"enabled": ["files"]}), tmp_path, gui=False)
    assert [t.name for t in box.tools] == ["files"]
    assert "shell" not in box.available_types() and "wait" in box.available_types()


def test_lengthy_and_cancellable_are_distinct_properties():
    assert {n for n, c in ACTION_TYPES.items() if c.lengthy} == {"shell", "mcp"}  # pending copy in state.json
    from conway.tools.files import FileTools
    from conway.tools.shell import ShellTool
    assert ShellTool.cancellable and not FileTools.cancellable  # a stop cuts it short: the tool's property
