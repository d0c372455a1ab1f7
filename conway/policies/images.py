"""The pipeline's first stage: the screenshot as the model is sent it, and the past screenshots read again.

The screenshot is resized with the family's rule (`geometry`), never by the server (llama.cpp would shrink
Qwen-VL images to its own image-token limit and absolute coordinates would land in the wrong place).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conway.geometry import ResizeRule, Size, image_tokens, resize_for_model
from conway.history import ArchivedImage, PastImage, Turn, TurnHistory
from conway.protocols import Observation, PolicyError

__all__ = ["SentImage", "ServerTakesNoImages", "prepare_image", "reread_history"]


class ServerTakesNoImages(PolicyError):
    """The model server says it takes no images (llama-server /props `modalities.vision` false): asking would only
    be refused, every cycle."""

    permanent = True
    advice = "start the model server with the model's vision projector (llama-server --mmproj MMPROJ.gguf)"


@dataclass
class SentImage:
    data: bytes | None
    mime: str
    sent_size: Size
    captured_size: Size
    rule: str
    image_tokens: int | None
    encode_s: float

    def data_url(self) -> str | None:
        from conway.policies.backends.http_client import png_data_url
        return png_data_url(self.data, self.mime) if self.data is not None else None

    def past_image(self) -> PastImage:
        """This screenshot as a past turn keeps it, to be sent again exactly."""
        return PastImage(self.data, self.mime, tuple(self.sent_size), self.image_tokens)  # type: ignore[arg-type]


def prepare_image(obs: Observation, rule_name: str, rule: ResizeRule, encoding: str = "jpeg",
                  size: Size | None = None) -> SentImage:
    """Resize the observation with `rule` (or to exactly `size`: a recorded sent size) and encode it.

    JPEG q85 by default: measured 7–19 ms and 136–274 KiB per decision against
    72–720 ms and up to 4 MiB for PNG level 1 (docs/measurements.md).
    """
    from PIL import UnidentifiedImageError

    from conway.imaging import Encoding, observation_image

    started = time.perf_counter()
    captured = tuple(obs.captured_size)
    if obs.image is None and obs.png is None:  # in this order: a screen's PNG is encoded only on demand
        return SentImage(None, "", captured, captured, rule_name, None, 0.0)  # type: ignore[arg-type]
    try:
        img = observation_image(obs)  # a screen observation keeps its decoded pixels
    except (UnidentifiedImageError, OSError) as exc:
        raise PolicyError(f"the observation image cannot be read: {exc}") from None
    try:
        out, sent = resize_for_model(img, rule) if size is None else _resize_exact(img, size, rule.resample)
        if rule.sends_captured(img.size):  # as the agent sends it: the server's processor rounds it to `sent`
            out = img
    except ValueError as exc:
        raise PolicyError(f"cannot resize a {img.size[0]}x{img.size[1]} image for the model: {exc}") from None
    enc = Encoding.parse(encoding)
    tokens = None if rule.passthrough else image_tokens(sent, rule.factor)
    return SentImage(enc.encode(out), enc.mime, sent, tuple(img.size), rule_name, tokens,  # type: ignore[arg-type]
                     time.perf_counter() - started)


def _resize_exact(img: Any, size: Size, resample: str = "lanczos") -> tuple[Any, Size]:
    from PIL import Image as _Image

    w, h = int(size[0]), int(size[1])
    if w <= 0 or h <= 0:
        raise ValueError(f"image size must be positive, got {w}x{h}")
    if img.size == (w, h):
        return img, (w, h)
    return img.resize((w, h), _Image.Resampling[resample.upper()]), (w, h)


def reread_history(history: TurnHistory | None, rule_name: str, rule: ResizeRule, encoding: str) -> None:
    """Past screenshots known by their archived copy (after a restart) read again and resized as they were
    sent; one that cannot be is let go, said once: its answer is replayed without it."""
    for turn in history.turns if history is not None else []:
        if isinstance(turn.image, ArchivedImage):
            turn.image = _archived_image(turn, history, rule_name, rule, encoding)  # type: ignore[arg-type]


def _archived_image(turn: Turn, history: TurnHistory, rule_name: str, rule: ResizeRule,
                    encoding: str) -> PastImage | None:
    archived = turn.image
    assert isinstance(archived, ArchivedImage)
    why = None
    try:
        data = Path(archived.path).read_bytes()
        obs = Observation(png=data, captured_size=archived.captured_size, source="archive", content_hash="",
                          change_key="")
        sent = prepare_image(obs, rule_name, rule, encoding, size=archived.sent_size)
        if tuple(sent.captured_size) != tuple(archived.captured_size):
            why = (f"it is {sent.captured_size[0]}x{sent.captured_size[1]}, the screenshot answered was "
                   f"{archived.captured_size[0]}x{archived.captured_size[1]}")
    except OSError as exc:
        why = exc.strerror or str(exc)
    except PolicyError as exc:
        why = str(exc)
    if why is not None:
        history.notes.append(f"the screenshot of past turn {turn.number} cannot be read again ({archived.path}: "
                             f"{why}); its answer is replayed without it")
        return None
    return PastImage(sent.data, sent.mime, tuple(sent.sent_size), archived.tokens or sent.image_tokens)  # type: ignore[arg-type]
