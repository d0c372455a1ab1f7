"""holo: Holo1.5 (3B/7B/72B, on Qwen2.5-VL) localization: `{"action": "click_absolute", "x": …, "y": …}`."""

from __future__ import annotations

from typing import Any

from conway.geometry import Convention, ResizeRule
from conway.policies.families.holo.turn import holo_turn
from conway.policies.family import Family


def _adapter() -> Any:
    from conway.policies.families.holo.adapter import HoloAdapter
    return HoloAdapter()


FAMILY = Family(
    name="holo",
    adapter=_adapter,
    convention=Convention.ABSOLUTE,  # pixels of the image as resized by the cookbook's smart_resize
    # hcompai/hai-cookbook utils/image.py smart_resize defaults: factor 28, 56*56 .. 14*14*4*1280 px (1280 tokens)
    resize=ResizeRule(factor=28, min_pixels=3136, max_pixels=1003520, name="holo1.5", resample="bicubic"),
    render=holo_turn,
    presets=("holo1.5",),
    reference="hcompai/hai-cookbook holo1_5/openai_client/invoke_localization.ipynb (2ba89619bdcfe729d31649d976bdaa7b9551e216)",
    # hcompai/hai-cookbook holo1_5/openai_client/invoke_localization.ipynb (2ba89619bdcfe729d31649d976bdaa7b9551e216):
    # temperature=0 and no max_tokens (sent none); the answer is one short JSON object, 128 tokens are the reply's
    # budget when Conway fits the context
    max_tokens=128,
    sends_max_tokens=False,
    temperature=0,  # an int, as the notebook sends it
    image_max_tokens=1280,  # 14*14*4*1280 px: the cookbook's max_pixels
    image_encoding="jpeg90",  # the notebook sends its resized screenshot as JPEG, quality 90
)
