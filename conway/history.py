"""The model's own past turns: its answers as it wrote them and the screenshots it was sent with them.

A family trained on a conversation (UI-TARS, OpenCUA, Qwen2.5-VL, Qwen3-VL) is shown its earlier answers and the
images it answered, in its own layout (`policies/conversation.py`). `TurnHistory` holds them for one run, in
memory: the decision context carries it (`DecisionContext.history`), the policy proposes the turn it just
answered (`propose`), and the context builder commits it once its actions were handed on (`commit`), so an
answer a stop or a pause discarded, or one that held no valid action, is never replayed.

Two windows: the answers (`max_turns`; None: every earlier step, as the families' reference agents replay them)
and, among their newest, those still sent with their screenshot (`max_images`, the current screenshot not
counted). By default both are constant, as the reference agents keep them: once full, each new turn lets the
oldest one go (the window moves by one). With `slide` (the opt-in deviation `half_slide`) they are only appended
to until full and then slid by half at once (like the recent-steps window, `prompt/parts.py`), so between slides
a prompt is the previous one plus a turn at its end and a prompt cache keeps the prefix. Only the screenshots in
the window are kept in memory.

An answer enters the history once, by `replayed` (`propose`, and `restore` from the journal's raw answer): its
hidden reasoning removed and its chat-template special tokens neutralised (`<|im_end|>` → `&lt;|im_end|>`,
`conway/text/control_tokens.py` `escape_tokens`), so an answer that copied them from a hostile screen cannot forge the
conversation's structure in any later request; the rest (OpenCUA's `## Action:`, Qwen's `<tool_call>`) stays
as written. The bytes replayed are those of `Turn.answer`, the same after a restart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from conway.text.control_tokens import escape_tokens

__all__ = ["ArchivedImage", "PastImage", "Turn", "TurnHistory", "replayed", "strip_reasoning"]


@dataclass(frozen=True)
class PastImage:
    """A screenshot exactly as it was sent: the encoded bytes after the family's resize."""

    data: bytes
    mime: str
    sent_size: tuple[int, int]
    tokens: int | None
    """Image tokens it costs (None: the server decides)."""


@dataclass(frozen=True)
class ArchivedImage:
    """A past screenshot known only by its archived copy (`screenshots/`, journaled with its observation), after a
    restart: the policy reads it back and resizes it to the size it was sent at (`sent_size`); a lossless PNG
    archive (the default) gives back the bytes that were sent."""

    path: str
    sent_size: tuple[int, int]
    captured_size: tuple[int, int]
    tokens: int | None = None


@dataclass
class Turn:
    number: int
    """1-based count of the turns of this history (OpenCUA's `# Step N:`, Qwen3-VL's `Step N:`)."""
    answer: str
    """The model's answer as it wrote it, hidden reasoning removed and special tokens neutralised (`replayed`); in its
    own coordinate space."""
    image: PastImage | ArchivedImage | None = None
    """The screenshot it answered (None: not kept, or not archived when the turn was read back from the journal)."""


@dataclass
class TurnHistory:
    max_images: int
    """Past screenshots sent at most (`policy.history_images` − 1: the current screenshot is the other)."""
    max_turns: int | None
    """Past answers kept at most (None: all; `context.recent_steps` for Conway's own layout or a half slide)."""
    turns: list[Turn] = field(default_factory=list)
    pending: Turn | None = None
    """The turn just answered, until the loop has handed its actions on (`commit`) or not (`discard`)."""
    server_images: int | None = None
    """Images the model server takes in one request, learned from its refusal (None: not known to be limited)."""
    notes: list[str] = field(default_factory=list)
    """What happened to the history that the next decision's record should say (read once by the policy)."""
    slide: bool = False
    """Slide both windows by half at once when full (cache-friendly; the deviation `half_slide`), instead of
    keeping them constant (each new turn lets the oldest go), as the reference agents do."""
    keep_reasoning: bool = False
    """Keep an answer's `<think>` block (UI-Venus's agent replays it in its "previous actions"); by default hidden
    reasoning is removed, as the other agents do."""
    _numbered: int = 0

    @property
    def image_cap(self) -> int:
        cap = self.max_images
        if self.server_images is not None:
            cap = min(cap, self.server_images - 1)
        return max(0, cap)

    def next_number(self) -> int:
        return self._numbered + 1

    def propose(self, answer: str, image: PastImage | None) -> None:
        """The answer just given (as the model wrote it) as the candidate turn, in its replayed form."""
        self.pending = Turn(self.next_number(), replayed(answer, self.keep_reasoning), image)

    def discard(self) -> None:
        self.pending = None

    def commit(self) -> bool:
        """Keep the pending turn; True when a window slid (the prompt's prefix changes this once)."""
        turn, self.pending = self.pending, None
        if turn is None:
            return False
        self._numbered = turn.number
        self.turns.append(turn)
        slid = False
        if self.max_turns is not None and len(self.turns) > self.max_turns:
            keep = self.max_turns
            if self.slide:
                keep = max(1, self.max_turns // 2) if self.max_turns else 0
            del self.turns[:len(self.turns) - keep]
            slid = True
        return self._slide_images() or slid

    def restore(self, turns: list[tuple[str, ArchivedImage | None]]) -> None:
        """Turns read back from the journal after a restart, oldest first: the answers as journaled, the newest
        screenshots by their archived copies (the journal holds no image)."""
        kept = turns if self.max_turns is None else (turns[-self.max_turns:] if self.max_turns else [])
        for answer, archived in kept:
            self._numbered += 1
            self.turns.append(Turn(self._numbered, replayed(answer, self.keep_reasoning), archived))
        self._slide_images_to(self.image_cap)

    def with_images(self) -> list[Turn]:
        return [t for t in self.turns if t.image is not None]

    def _slide_images(self) -> bool:
        kept = self.with_images()
        cap = self.image_cap
        if len(kept) <= cap:
            return False
        keep = (max(1, cap // 2) if cap else 0) if self.slide else cap
        for turn in kept[:len(kept) - keep]:
            turn.image = None  # its bytes go: only the window's screenshots stay in memory
        return True

    def drop_oldest_images(self, n: int) -> int:
        """Let the `n` oldest screenshots go (the prompt did not fit); returns how many went."""
        gone = 0
        for turn in self.with_images()[:n]:
            turn.image = None
            gone += 1
        return gone

    def limit_images(self, images: int, why: str) -> None:
        """The server takes at most `images` images in one request: the history shrinks to fit, said once."""
        self.server_images = max(1, images)
        self._slide_images_to(self.image_cap)
        self.notes.append(f"the model server takes at most {self.server_images} image(s) in one request "
                          f"({why}); the screenshot history is held to {self.image_cap} past image(s) (deviation "
                          "server_image_limit: a smaller window than the agent's)")

    def _slide_images_to(self, cap: int) -> None:
        kept = self.with_images()
        for turn in kept[:max(0, len(kept) - cap)]:
            turn.image = None

    def take_notes(self) -> list[str]:
        out, self.notes = self.notes, []
        return out


def replayed(answer: str, keep_reasoning: bool = False) -> str:
    """An answer as the history keeps and replays it: no hidden reasoning (unless the family's agent replays it), no
    chat-template special tokens."""
    return escape_tokens(answer.strip() if keep_reasoning else strip_reasoning(answer))


def strip_reasoning(text: str) -> str:
    """The answer without hidden reasoning (`<think>…</think>`, or everything up to a lone `</think>`)."""
    out = re.sub(r"<think>.*?</think>", "", text, flags=re.S)
    if "</think>" in out:  # a template that opened the block itself: the model wrote only its end
        out = out.split("</think>")[-1]
    out = re.sub(r"<think>.*\Z", "", out, flags=re.S)  # cut off inside its reasoning
    return out.strip()
