"""Every way Conway's request may differ from the one a trained family's official agent sends, by name.

A preset at its defaults sends what its authors' agent sends at its runner's defaults (the agent and commit:
`Family.conversation.source`): the messages, the window of past turns kept constant, the sampling parameters, the
image encoding. Whatever Conway adds or changes is a *deviation*, one line each, so that two numbers are
comparable exactly when their deviation lists are equal:

- **opted in** by key (`policy.deviations`, `DEVIATION_KEYS` in `conway/config.py`): off for every evaluation
  (`tasks run`, the checks, sweeps, `start --task`); `conway run` turns on the seed's (`RUN_DEVIATIONS`);
- **set explicitly**: a value unlike the agent's (fewer screenshots, other sampling, another resize or image cap,
  the tool schema in the request's `tools`);
- **known**: what a preset still does otherwise than its agent in every run, and why (`Family.known_differences`:
  Kimi's retry of an unfinished answer, GTA1's red-blue swap), said in the same words by the README's preset table;
- **met at run time**: a server that takes fewer images than the window (`TurnHistory.limit_images`), said once,
  journaled with the decision and listed in the task report.

`deviation_lines(config)` lists them for a configuration (journaled at a session's start, written into every
report); `conway models --conformance` prints them beside what will be sent.
"""

from __future__ import annotations

from typing import Any

from conway.config import ConwayConfig, PolicyConfig
from conway.policies.families import FAMILIES

__all__ = ["DESCRIPTIONS", "deviation_lines", "deviation_keys", "listed"]

DESCRIPTIONS = {
    "constitution": "constitution.md, framed as a file, in the instruction slot",
    "goals": "goals.md (a session's task inside it) framed as a file, instead of the bare task instruction",
    "memory": "memory.md in the instruction slot",
    "latest_result": "the latest result or error, after the current screenshot",
    "host_facts": "the host facts (system, CPUs, memory, disk, programs) in the instruction slot",
    "skills": "the tool listings (MCP tools, Agent Skills) in the instruction slot",
    "action_list": "Conway's list of the calls it carries out, in the instruction slot",
    "accessibility": "the accessibility text, after the current screenshot",
    "half_slide": "the history slides by half when full (prompt-cache friendly) and keeps context.recent_steps "
                  "answers, where the agent keeps a constant window and every earlier answer",
    "recent_answers": "past answers held to context.recent_steps (each step lets the oldest go), where the agent "
                      "replays every earlier one",
    "jpeg": "screenshots as JPEG q85, where the agent sends PNG",
    "english_thoughts": "thoughts asked in English, where the runner asks Chinese",
}
"""What each opt-in deviation adds or changes (the keys of `policy.deviations`)."""


def deviation_keys(pol: PolicyConfig) -> list[str]:
    """The opted-in keys of `pol` that change something for its family (the others are not listed)."""
    family = FAMILIES.get(pol.kind)
    keys = pol.resolved_deviations()
    if family is None or not family.conversation.official:
        return []
    if not family.thought_language:
        keys = [k for k in keys if k != "english_thoughts"]
    if pol.image_encoding is not None:
        keys = [k for k in keys if k != "jpeg"]  # the explicit setting is listed instead
    return keys


def _prompt_line(pol: PolicyConfig, family: Any) -> list[str]:
    """The chosen prompt's own deviation (`Family.by_prompt[prompt]["deviation"]`), one line; [] for none."""
    said = family.by_prompt.get(pol.prompt, {}).get("deviation")
    return [f"prompt {pol.prompt}: {said}"] if said else []


def listed(config: ConwayConfig) -> bool:
    """Whether journals and reports list this configuration's deviations: a trained family's request, a
    grounder's reference, or a prompt that is a named deviation (generic's `bare`)."""
    family = FAMILIES.get(config.policy.kind)
    return family is not None and (family.conversation.official or family.reference is not None
                                   or bool(_prompt_line(config.policy, family)))


def deviation_lines(config: ConwayConfig) -> list[str]:
    """Every deviation of this configuration from its family's official request, one line each (empty: none, or a
    family with no official request: generic, the mock; a grounder's: its known differences only), and a prompt
    chosen as a named deviation (generic's `bare`)."""
    pol = config.policy
    family = FAMILIES.get(pol.kind)
    if family is None:
        return []
    known = [f"known: {said}" for said in family.known_differences]  # every run has them, the README says them too
    if not family.conversation.official:
        return _prompt_line(pol, family) + known  # a grounder's one request (its `reference`), or Conway's own
    lines = [f"{key}: {DESCRIPTIONS[key]}" for key in deviation_keys(pol)]
    return lines + _explicit(pol, family) + known


def _explicit(pol: PolicyConfig, family: Any) -> list[str]:
    """Settings given a value unlike the agent's."""
    out = []
    official = family.by_prompt.get(pol.prompt, {}).get("history_images", family.conversation.history_images)
    if pol.resolved_history_images < official:
        out.append(f"smaller_window: {pol.resolved_history_images} screenshot(s) a request (policy.history_images), "
                   f"where the agent sends {official}")
    for name in ("temperature", "top_p", "frequency_penalty", "max_tokens"):
        value, agent = getattr(pol, name), family.default(name, pol.prompt)
        if value is not None and value != agent:
            said = "none sent" if agent is None else agent
            out.append(f"sampling: {name} {value} (policy.{name}), where the agent's runner sends {said}")
    if pol.image_encoding is not None and pol.image_encoding != family.image_encoding:
        out.append(f"{pol.image_encoding}: screenshots as {pol.image_encoding.upper()} (policy.image_encoding), where "
                   f"the agent sends {family.image_encoding.upper()}")
    resize = getattr(family.default("resize", pol.prompt), "name", family.default("resize", pol.prompt))
    if pol.resize not in ("auto", resize) or pol.image_max_tokens is not None:
        out.append(f"resize: policy.resize={pol.resize}, policy.image_max_tokens={pol.image_max_tokens}, where the "
                   f"agent resizes by its rule ({resize})")
    convention = getattr(family.default("convention", pol.prompt), "value", family.default("convention", pol.prompt))
    if pol.convention not in ("auto", convention):
        out.append(f"convention: answers read as {pol.convention}, where the agent reads {convention}")
    if pol.tool_schema == "request":
        out.append("tool_schema: the tool in the request's tools field, rendered by the server's chat template, "
                   "where the agent writes it into its system text")
    return out
