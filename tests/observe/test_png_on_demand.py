"""A screen observation's PNG is encoded only when something sends or keeps a PNG (issue 26): the context
build and the JPEG default's image preparation used to encode it every cycle (20-30 ms at 1280x800)."""

from __future__ import annotations

from conway.config import load_config
from conway.loop.control import SimulatedClock
from conway.policies.mock import MockPolicy, MockScript
from conway.store.home import init_home, resolve_home


def test_context_and_image_preparation_never_encode_a_screen_png_they_do_not_send(monkeypatch):
    """The JPEG default sends a JPEG: the screen observation's PNG (20-30 ms at 1280x800) stays unencoded."""
    from PIL import Image

    import conway.imaging
    from conway.observe.screen import ScreenObservation
    from conway.policies.families import get_resize_rule
    from conway.policies.images import prepare_image
    from conway.prompt.decision import ContextBuilder
    from conway.prompt.memory import Memory
    from conway.tools.registry import Toolbox

    encoded = []
    real = conway.imaging.encode_png
    monkeypatch.setattr(conway.imaging, "encode_png", lambda *a, **k: encoded.append(1) or real(*a, **k))
    obs = ScreenObservation(image=Image.new("RGB", (320, 200), (200, 10, 10)), captured_size=(320, 200),
                            source="screen", content_hash="h", change_key="k")
    home = resolve_home(None)
    init_home(home)
    cfg = load_config(home.config, [])
    builder = ContextBuilder(home, cfg, Toolbox([]), MockPolicy(MockScript(steps=[])),
                             Memory(home.memory, home.memory_previous), SimulatedClock().monotonic)
    ctx = builder.build("Write the report.", obs, 1)
    sent = prepare_image(ctx.observation, "qwen2.5-vl", get_resize_rule("qwen2.5-vl"), "jpeg")
    assert sent.data is not None and sent.data[:2] == b"\xff\xd8"  # a JPEG went out
    assert encoded == []
    assert obs.png is not None and encoded == [1]  # asked for, it is encoded
