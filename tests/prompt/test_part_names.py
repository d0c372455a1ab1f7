"""Prompt-part names are spelled once (`PartName`): the builder makes its parts by them, the policy lays
them out and cuts them by the same names, matched exactly."""

from __future__ import annotations

from conway.prompt.budget import SHRINK_ORDER, build_parts
from conway.prompt.fence import DATA_RULE
from conway.prompt.layout import STABLE_PARTS, VARIABLE_ORDER
from conway.prompt.parts import PartName, StepNote

NAMES = {v for k, v in vars(PartName).items() if k.isupper()}


def test_every_part_the_builder_makes_is_a_named_one_the_policy_places():
    parts, dropped = build_parts(constitution="c", goals="g", memory="m" * 50_000, action_space="a", latest="l",
                                 recent=[StepNote(1, "wait()", "ok")], budget_tokens=64 + len(DATA_RULE) // 3,
                                 chars_per_token=3.0,
                                 accessibility="x" * 50_000)
    names = [p.name for p in parts]
    assert dropped == [PartName.ACCESSIBILITY, PartName.MEMORY]  # too big: left out, by name
    assert names == [PartName.CONSTITUTION, PartName.ACTION_SPACE, PartName.DATA_RULE, PartName.GOALS, PartName.RECENT_STEPS,
                     PartName.LEFT_OUT, PartName.LATEST_RESULT]
    assert set(names) <= set(STABLE_PARTS) | set(VARIABLE_ORDER)


def test_the_policy_orders_name_only_known_parts_and_the_wire_names_stay():
    assert set(STABLE_PARTS) | set(VARIABLE_ORDER) | set(SHRINK_ORDER) <= NAMES
    assert PartName.RECENT_STEPS in SHRINK_ORDER  # matched exactly now, no longer by the prefix "recent steps"
    # what the model reads (and recorded journals and exports hold): changing one is a prompt change
    assert (PartName.CONSTITUTION, PartName.GOALS, PartName.MEMORY, PartName.RECENT_STEPS, PartName.LATEST_RESULT) \
        == ("constitution.md", "goals.md", "memory.md", "recent steps (oldest first)", "latest result")
