"""The registry of model families: one folder each in this folder, registered below.

    from conway.policies.families import get_family
    family = get_family("uitars")             # ValueError listing the known names otherwise
    adapter = family.adapter()                # the prompt language, parser and grammar
    text = render_target(rec, family).text    # a recorded step as this family's answer
    rule = get_resize_rule("uitars")          # a resize rule by name: shared (geometry) or a family's own

Adding a family: a folder here (its `__init__.py` declaring `FAMILY = Family(...)`, `conway.policies.family`,
with its resize rule when no shared one fits; for a new answer format also its `adapter.py`, `parse.py`, `turn.py`
and `prompts/`), and its name in `REGISTERED` below. Config validation (`policy.kind`), the policy factory, `export --style`,
training rows (`data.policy_kind`) and recipes (`model.family`) read this registry and nothing else.
"""

from __future__ import annotations

from importlib import import_module
from typing import Iterable

from conway.geometry import SHARED_RESIZE_RULES, ResizeRule
from conway.policies.family import Architecture, Family

__all__ = ["ARCHITECTURES", "FAMILIES", "MOCK", "POLICY_KINDS", "REGISTERED", "RESIZE_RULES", "get_family",
           "get_resize_rule", "one_of"]

REGISTERED = ("generic", "opencua", "uitars", "qwen3vl", "qwen25vl", "gta1", "holo", "evocua", "guiowl", "jedi", "holo2",
              "kimi", "maiui", "uivenus", "holo3")
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


def _by_name(rules: Iterable[ResizeRule]) -> dict[str, ResizeRule]:
    """Rules by name; ValueError when two different rules share a name (a journal's name must say one rule) or a
    name is not as `get_resize_rule` looks it up."""
    named: dict[str, ResizeRule] = {}
    for rule in rules:
        if not rule.name or rule.name != rule.name.strip().lower():
            raise ValueError(f"a resize rule's name must be lower case, without spaces around: {rule}")
        known = named.setdefault(rule.name, rule)
        if known != rule:
            raise ValueError(f"two resize rules are called {rule.name!r}: {known} and {rule}")
    return named


RESIZE_RULES: dict[str, ResizeRule] = _by_name((*SHARED_RESIZE_RULES, *(f.resize for f in FAMILIES.values())))
"""Every resize rule `policy.resize` can name: the shared ones (`conway.geometry`) and each family's own."""


def get_resize_rule(name: str) -> ResizeRule:
    """The resize rule called `name` (case and surrounding spaces ignored); ValueError listing the names otherwise."""
    try:
        return RESIZE_RULES[name.strip().lower()]
    except KeyError:
        raise ValueError(f"unknown resize rule {name!r}; known: {', '.join(sorted(RESIZE_RULES))}") from None


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
