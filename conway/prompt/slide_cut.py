"""Cutting a prompt part to fit the model's window in slides, so a prompt cache keeps serving it.

A part that must shrink keeps its head and a tail, the middle left out and marked. Cut afresh each
cycle, the cut would move with every line the part grows by, and everything after its head would be
new to the cache every cycle. So a cut is remembered per part and kept while it still fits: the part
grows at its end, the cut text grows by the same line, and the prompt is the previous one plus that
line. When the tail no longer fits, it slides forward by half its room at once (as the recent-steps
window does): one cycle pays for a new tail, the next ones are cached again. A part whose head or
tail start changed (the window slid by itself, memory was refreshed) is cut afresh.
"""

from __future__ import annotations

from dataclasses import dataclass

MARK_ROOM = 96
"""Characters set aside for the marker line (its count grows with the text left out)."""
ANCHOR = 48
"""Characters at the tail's start that must be unchanged for a cut to be kept."""


def marker(left_out: int) -> str:
    return f"\n[… {left_out} chars left out to fit the model's context window …]\n"


@dataclass
class Slide:
    """One part's cut: `text[:head]`, the marker, `text[start:]`."""

    head: int
    start: int
    head_text: str
    anchor: str

    def apply(self, text: str) -> str:
        return text[:self.head] + marker(self.start - self.head) + text[self.start:]

    def holds(self, text: str) -> bool:
        """Still the same text at the head and where the tail starts (it only grew at its end)."""
        return (len(text) >= self.start + len(self.anchor) and text.startswith(self.head_text)
                and text[self.start:self.start + len(self.anchor)] == self.anchor)


def _line_start(text: str, at: int, within: int) -> int:
    """The first line start at or after `at` and before `at + within`, else `at` itself."""
    if at <= 0 or text[at - 1] == "\n":
        return at
    nl = text.find("\n", at, at + within)
    return nl + 1 if nl >= 0 and nl + 1 < len(text) else at


def _make(text: str, keep: int, head: int | None = None) -> Slide:
    """A cut leaving the tail half its room, so it can grow for a while before the next slide."""
    room = keep - MARK_ROOM
    if head is None:
        head = room // 3
        nl = text.rfind("\n", 0, head)
        head = nl + 1 if nl + 1 > head // 2 else head  # end the head at a line end when one is near
    tail_room = room - head
    start = max(head, len(text) - tail_room // 2)
    start = _line_start(text, start, max(1, tail_room // 2))
    return Slide(head, start, text[:head], text[start:start + ANCHOR])


class SlidingCuts:
    """The cuts of one policy's prompts, by part name, kept between cycles."""

    def __init__(self) -> None:
        self._slides: dict[str, Slide] = {}

    def cut(self, name: str, text: str, keep: int) -> str:
        """`text` in at most `keep` characters (its head, a marker, a tail), or "" when too little room."""
        if len(text) <= keep:
            return text
        if keep <= MARK_ROOM + 16:
            return text[:keep] if keep > 80 else ""
        slide = self._slides.get(name)
        if slide is not None and slide.holds(text):
            if len(slide.apply(text)) <= keep:
                return slide.apply(text)  # the same cut as last cycle: only the part's new end is new
            if slide.head + 2 * MARK_ROOM < keep:  # the tail outgrew its room: slide it, keep the head
                slide = _make(text, keep, slide.head)
            else:
                slide = _make(text, keep)
        else:
            slide = _make(text, keep)
        self._slides[name] = slide
        out = slide.apply(text)
        return out if len(out) <= keep else text[:keep]  # never past the room, whatever the text
