"""guiowl: GUI-Owl 1.5 (Alibaba X-PLUG, on Qwen3-VL), OSWorld's `mm_agents/owl15_agent.py`: `computer_use` tool calls
on a 0..1000 grid."""

from __future__ import annotations

from typing import Any

from conway.geometry import Convention, ResizeRule
from conway.policies.families.guiowl.turn import guiowl_turn
from conway.policies.family import Conversation, Family


def _adapter(engine: str = "dash") -> Any:
    from conway.policies.families.guiowl.adapter import GUIOwlAdapter
    return GUIOwlAdapter()  # both engines send the same messages: only their sampling and image encoding differ


FAMILY = Family(
    name="guiowl",
    adapter=_adapter,
    # owl15_agent.py convert_point_format_qwen3vl: x / 1000 * width (the prompt's tool: "resolution is 1000x1000")
    convention=Convention.RELATIVE1000,
    # Owl15Agent.predict: update_image_size_(max_tokens=2645, patch_size=16): smart_resize factor 32, 1 .. 2645
    # tokens of 32x32 px (mm_agents/utils/qwen_vl_utils.py); 1920x1080 -> 1920x1088
    resize=ResizeRule(factor=32, min_pixels=1024, max_pixels=2708480, name="guiowl", resample="bicubic"),
    render=guiowl_turn,
    presets=("gui-owl-1.5", "gui-owl-1.5-openai"),
    # `policy.prompt` picks the agent's engine, which decides the request's sampling and image encoding (the
    # messages are the same): `dash`, the runner's default (scripts/python/run_multienv_gui_owl15.py --engine dash,
    # Alibaba's DashScope SDK: MultiModalConversation.call with max_tokens=2048, seed=3407, temperature 0.0, top_p
    # 0.9, top_k --top_k (1), presence_penalty 0.0, repetition_penalty 1.0, vl_high_resolution_images True; each
    # screenshot the PNG file the SDK uploads), or `openai` (an OpenAI-compatible server: max_tokens=4096, top_p,
    # extra_body repetition_penalty 1.05 and top_k; each screenshot uploaded by push_oss as JPEG at Pillow's default
    # quality, 75). Both recorded from the unmodified agent (tests/data/goldens_new/gui-owl-1.5*.json).
    prompts=("dash", "openai"),
    max_tokens=2048,
    temperature=0.0,
    sampling=(("top_p", 0.9), ("top_k", 1), ("presence_penalty", 0.0), ("repetition_penalty", 1.0), ("seed", 3407),
              ("vl_high_resolution_images", True)),
    by_prompt={"openai": {"max_tokens": 4096, "image_encoding": "jpeg75",
                          "sampling": (("top_p", 0.9), ("repetition_penalty", 1.05), ("top_k", 1))}},
    image_max_tokens=2645,
    # Owl15Agent.predict at --history_n 5 (use_history 1, keep_full_response 0): slim_messages_new keeps the newest 5
    # screenshots and the newest 4 answers; older answers become `StepN: <Action>` lines after the instruction
    conversation=Conversation(
        history_images=5,
        replayed="the newest 4 answers as written, after their screenshot; older ones as `StepN: <Action line>` "
                 "after the instruction (\"Previous actions:\")",
        source="OSWorld mm_agents/owl15_agent.py (ljxpython/OSWorldUse b5007a93c4da37b08ba1ef7936b5c70bc38b7ed6)"),
)
