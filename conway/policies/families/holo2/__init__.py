"""holo2: Holo2 (4B/8B/30B-A3B, on Qwen3-VL) localization: `{"x": …, "y": …}` on a 0..1000 grid."""

from __future__ import annotations

from typing import Any

from conway.geometry import Convention, ResizeRule
from conway.policies.families.holo2.turn import holo2_turn
from conway.policies.family import Family


def _adapter() -> Any:
    from conway.policies.families.holo2.adapter import Holo2Adapter
    return Holo2Adapter()


FAMILY = Family(
    name="holo2",
    adapter=_adapter,
    convention=Convention.RELATIVE1000,  # ClickCoordinates: x, y "normalized between 0 and 1000"
    # hcompai/hai-cookbook holo2/holo_2_localization_hosted_api.ipynb: smart_resize(factor=16*2,
    # min_pixels=64*32*32, max_pixels=16384*32*32); 1920x1080 -> 1920x1088
    resize=ResizeRule(factor=32, min_pixels=65536, max_pixels=16777216, name="holo2", resample="bicubic"),
    render=holo2_turn,
    presets=("holo2",),
    reference="hcompai/hai-cookbook holo2/holo_2_localization_hosted_api.ipynb (2ba89619bdcfe729d31649d976bdaa7b9551e216)",
    # the same notebook (2ba89619bdcfe729d31649d976bdaa7b9551e216): temperature=0, no max_tokens (the server's
    # default; Holo2 thinks first by default, its reasoning parser takes the thought out): none is sent; 4096 is
    # the reply's budget when Conway fits the context
    max_tokens=4096,
    sends_max_tokens=False,
    temperature=0,  # an int, as the notebook sends it
    image_encoding="jpeg90",  # the notebook sends its screenshot as JPEG, quality 90 (utils/image.py's default)
    image_max_tokens=16384,
)
