"""The registry of model families: one folder each in this folder, registered below.

    from conway.policies.families import get_family
    family = get_family("uitars")             # ValueError listing the known names otherwise
    adapter = family.adapter()                # the prompt language, parser and grammar
    text = render_target(rec, family).text    # a recorded step as this family's answer

Adding a family: a folder here (its `__init__.py` declaring `FAMILY = Family(...)`, `conway.policies.family`;
for a new answer format also its `adapter.py`, `parse.py`, `turn.py` and `prompts/`), and its name in
`REGISTERED` below. Config validation (`policy.kind`), the policy factory, `export --style`,
training rows (`data.policy_kind`) and recipes (`model.family`) read this registry and nothing else.
"""

from __future__ import annotations

from importlib import import_module
from typing import Iterable

from conway.policies.family import Architecture, Family

__all__ = ["ARCHITECTURES", "FAMILIES", "MOCK", "POLICY_KINDS", "REGISTERED", "get_family", "one_of"]

REGISTERED = ("generic", "opencua", "uitars", "qwen3vl", "qwen25vl", "gta1", "holo")
"""The family folders here, in the order the command line and error messages list them."""

FAMILIES: dict[str, Family] = {f.name: f for f in (import_module(f"{__name__}.{n}").FAMILY for n in REGISTERED)}
"""Every model family by name (its folder's `FAMILY`), in `REGISTERED` order."""

MOCK = "mock"
"""The offline scripted policy: a `policy.kind`, but not a model family (no model, no answer format to train)."""

POLICY_KINDS: tuple[str, ...] = (MOCK, *FAMILIES)
"""Every `policy.kind`."""

_BASE_ARCHITECTURES = (Architecture("qwen2-vl"), Architecture("qwen2.5-vl"))
"""Architectures of base models that no family owns: recipes train them to speak a family's format (generic)."""

ARCHITECTURES: dict[str, Architecture] = {a.name: a for a in _BASE_ARCHITECTURES + tuple(
    f.architecture for f in FAMILIES.values() if f.architecture is not None)}
"""Every architecture a recipe's `model.family` may name."""


def one_of(names: Iterable[str]) -> str:
    """`a, b or c`: names as a sentence lists them."""
    items = list(names)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]


def get_family(name: str) -> Family:
    """The family called `name`; ValueError naming the known ones when there is none."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise ValueError(f"no model family {name!r} (known: {', '.join(FAMILIES)})") from None
