"""uitars: UI-TARS(-1.5), `Thought: …` / `Action: click(start_box='(x,y)')` answers."""

from __future__ import annotations

from typing import Any

from conway.geometry import Convention, ResizeRule
from conway.policies.families.uitars.turn import uitars_turn
from conway.policies.family import Architecture, Conversation, Family


def _adapter(prompt: str = "uitars-1.5") -> Any:
    from conway.policies.families.uitars.adapter import UITarsAdapter
    return UITarsAdapter(prompt)


FAMILY = Family(
    name="uitars",
    adapter=_adapter,
    convention=Convention.ABSOLUTE,  # UI-TARS-1.5; UI-TARS 1.0 answers 0-1000 (policy.convention=relative1000)
    # UI-TARS-1.5: 28 px as Qwen2.5-VL, but at least 100 tokens (78400 px)
    resize=ResizeRule(factor=28, min_pixels=78400, max_pixels=12845056, name="uitars", server_resizes=True),
    render=uitars_turn,
    architecture=Architecture("uitars"),  # Qwen2.5-VL's, in transformers
    # uitars-1.5-7b: absolute pixels of the smart-resized image; uitars (1.0): 0-1000, its call-user prompt, the
    # uitars-1.0 resize (OSWorld mm_agents/uitars_agent.py: max_tokens 1000, temperature 0, as 1.5's)
    presets=("uitars-1.5-7b", "uitars"),
    prompts=("uitars-1.5", "uitars-1.0"),
    # OSWorld scripts/python/run_multienv_uitars15_v1.py, runtime_conf of infer_mode qwen25vl_normal (ljxpython/
    # OSWorldUse b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6): max_tokens 1000, temperature 0.0,
    # max_pixels 16384*28*28 (also mm_agents/uitars15_v1.py MAX_PIXELS)
    # and its request (mm_agents/uitars15_v1.py predict): frequency_penalty=1, top_p 0.9 (runtime_conf), PNG images,
    # the thoughts asked in the runner's "language": "Chinese". UI-TARS 1.0 (scripts/python/run_multienv_uitars.py
    # into mm_agents/uitars_agent.py): temperature 1.0, top_p 0.9, max_tokens 1500, frequency_penalty=1
    max_tokens=1000,
    temperature=0.0,
    top_p=0.9,
    frequency_penalty=1,  # an int, as predict writes it
    thought_language="Chinese",
    # UI-TARS 1.0's preset (configs/policy/uitars.yaml) answers 0-1000 of its agent's own resize
    by_prompt={"uitars-1.0": {"temperature": 1.0, "max_tokens": 1500, "resize": "uitars-1.0",
                              "convention": "relative1000"}},
    image_max_tokens=16384,
    # mm_agents/uitars15_v1.py UITARSAgent.predict: system "You are a helpful assistant.", the prompt in the first
    # user turn, every past answer as an assistant turn (box tokens added), the last history_n - 1 of them after
    # their screenshot, then the current screenshot; history_n 5 (run_multienv_uitars15_v1.py)
    conversation=Conversation(
        history_images=5,
        replayed="every earlier answer as written (UI-TARS-1.5: box tokens added; 1.0: raw); the newest 4 after "
                 "their screenshot",
        source="OSWorld mm_agents/uitars15_v1.py (ljxpython/OSWorldUse b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6)"),
)
