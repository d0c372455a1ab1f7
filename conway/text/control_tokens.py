"""Chat-template control tokens written as text, and the escaping that keeps them text.

A server that parses special tokens in message content reads ``<|im_end|>`` typed on a screen as the real
end of a turn. Escaping ``<`` as ``&lt;`` before one keeps it readable and inert. A leaf, so the history
(`conway.history`) and the prompt's fence (`conway.prompt.fence`) share one definition.
"""

from __future__ import annotations

import re

__all__ = ["CONTROL_TAGS", "TOKENS_PATTERN", "escape_tokens"]

CONTROL_TAGS = ("start_of_turn", "end_of_turn", "s", "bos", "eos")
"""Chat-control tokens spelled as tags in common templates (Gemma's turns, Llama 2's and Mistral's BOS and
EOS): only their exact spelling is one token, so only that is escaped (``<s class=…>`` is left alone)."""

TOKENS_PATTERN = r"[|\uff5c]|/?(?:" + "|".join(CONTROL_TAGS) + r")>"
"""What follows a ``<`` that starts a control token: ``|`` (``<|im_start|>``, Llama 3's ``<|eot_id|>``), DeepSeek's
fullwidth ``｜``, or one of `CONTROL_TAGS` closed at once."""

_TOKEN = re.compile(r"<(?=" + TOKENS_PATTERN + ")")


def escape_tokens(text: str) -> str:
    """`text` with only chat-template control tokens neutralised (``&lt;|``): for the model's own answers, replayed
    as its turns (`conway/history.py`), whose trained form holds headings (OpenCUA's ``## Action:``) and fences
    (Qwen's ``<tool_call>``) that must stay."""
    return _TOKEN.sub("&lt;", text)
