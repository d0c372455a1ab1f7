"""prompt_record: the digest keeps its documented definition while parts' encodings are reused."""

from __future__ import annotations

import hashlib
import json
import random

from conway.protocols import ContextPart
from conway.store import provenance
from conway.store.provenance import prompt_record


def _defined(parts: list[ContextPart]) -> str:
    """The definition: SHA-256 of the whole [[name, text], ...] list, compact JSON, UTF-8."""
    blob = json.dumps([[p.name, p.text] for p in parts], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def test_digest_matches_the_definition_for_any_parts():
    rng = random.Random(26)
    alphabet = "ab \"\\\n\t\x00\x1f→é\u2028{}[],:"
    names = ["constitution", "memory", "recent_steps", 'odd"name']
    for _ in range(400):
        parts = [ContextPart(rng.choice(names), "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))))
                 for _ in range(rng.randint(0, 7))]
        assert prompt_record(parts) == {"prompt_sha256": _defined(parts), "prompt_parts": [p.name for p in parts]}


def test_a_changed_part_changes_the_digest_after_its_encoding_was_kept():
    stable = ContextPart("constitution", "be careful")
    first = prompt_record([stable, ContextPart("latest_result", "one")])["prompt_sha256"]
    again = prompt_record([stable, ContextPart("latest_result", "one")])["prompt_sha256"]
    other = prompt_record([stable, ContextPart("latest_result", "two")])["prompt_sha256"]
    swapped = prompt_record([ContextPart("latest_result", "one"), stable])["prompt_sha256"]
    assert first == again and len({first, other, swapped}) == 3


def test_the_kept_encodings_stay_bounded():
    for n in range(provenance._ELEMENTS_MAX * 3):
        prompt_record([ContextPart("latest_result", str(n))])
    assert len(provenance._ELEMENTS) <= provenance._ELEMENTS_MAX
