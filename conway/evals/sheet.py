"""Contact sheets of missed click cases: each image with its target box (green) and the click (magenta)."""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence


@dataclass
class Tile:
    """One missed case on a contact sheet."""

    load: Callable[[], Any]
    """Returns the case's image (a Pillow image, or bytes of one)."""
    box: Sequence[float]
    """Target box (x0, y0, x1, y1) in the image's pixels."""
    predicted: Sequence[float] | None
    """The proposed click in the image's pixels (None: no click)."""
    caption: str
    detail: str = ""


def contact_sheet(tiles: list[Tile], thumb_w: int = 360, cols_max: int = 4) -> bytes | None:
    """A PNG grid of tiles (None when there are none); every image is scaled to `thumb_w` wide."""
    from PIL import Image, ImageDraw

    if not tiles:
        return None
    thumbs = []
    for t in tiles:
        img = t.load()
        if isinstance(img, (bytes, bytearray)):
            img = Image.open(io.BytesIO(img))
        with img:
            scale = thumb_w / img.size[0]
            thumbs.append((img.convert("RGB").resize((thumb_w, max(1, round(img.size[1] * scale)))), scale))
    thumb_h = max(th.size[1] for th, _ in thumbs)
    caption_h = 30
    cols = min(cols_max, len(tiles))
    rows = math.ceil(len(tiles) / cols)
    sheet = Image.new("RGB", (cols * (thumb_w + 8) + 8, rows * (thumb_h + caption_h + 8) + 8), (255, 255, 255))
    draw = ImageDraw.Draw(sheet)
    for k, (t, (thumb, scale)) in enumerate(zip(tiles, thumbs)):
        ox = 8 + (k % cols) * (thumb_w + 8)
        oy = 8 + (k // cols) * (thumb_h + caption_h + 8)
        sheet.paste(thumb, (ox, oy))
        x0, y0, x1, y1 = t.box
        draw.rectangle([ox + x0 * scale - 2, oy + y0 * scale - 2, ox + x1 * scale + 2, oy + y1 * scale + 2],
                       outline=(0, 200, 0), width=2)
        if t.predicted:
            px, py = t.predicted
            qx = ox + min(max(px * scale, 0), thumb.size[0] - 1)
            qy = oy + min(max(py * scale, 0), thumb.size[1] - 1)
            draw.line([qx - 8, qy, qx + 8, qy], fill=(255, 0, 255), width=2)
            draw.line([qx, qy - 8, qx, qy + 8], fill=(255, 0, 255), width=2)
            draw.ellipse([qx - 5, qy - 5, qx + 5, qy + 5], outline=(255, 0, 255), width=2)
        draw.text((ox, oy + thumb.size[1] + 4), t.caption, fill=(0, 0, 0))
        if t.detail:
            draw.text((ox, oy + thumb.size[1] + 16), t.detail, fill=(90, 90, 90))
    buf = io.BytesIO()
    sheet.save(buf, format="PNG")
    return buf.getvalue()
