"""Where a record came from: the harness revision and the prompt a decision was made from.

Trajectory records promise both (docs/learning.md#export, `conway-traj/1`): the loop writes
them into every decision event, so an exported step says which Conway built
its prompt and which prompt, without storing the prompt twice.
"""

from __future__ import annotations

import functools
import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

from conway import __version__

__all__ = ["git_facts", "harness_revision", "prompt_record"]


@functools.lru_cache(maxsize=1)
def git_facts() -> dict[str, Any]:
    """Revision of the checkout Conway runs from, when it is one (None otherwise)."""
    root = Path(__file__).resolve().parents[2]
    facts: dict[str, Any] = {"git_revision": None, "git_dirty": None}
    if not (root / ".git").exists():
        return facts
    try:
        rev = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=10)
        if rev.returncode == 0:
            facts["git_revision"] = rev.stdout.strip()
            dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=10)
            if dirty.returncode == 0:
                facts["git_dirty"] = bool(dirty.stdout.strip())
    except (OSError, subprocess.TimeoutExpired):
        pass
    return facts


def harness_revision() -> str:
    """`<git revision>[-dirty]` in a checkout, else `conway-<version>` (an installed wheel)."""
    facts = git_facts()
    if facts["git_revision"]:
        return facts["git_revision"] + ("-dirty" if facts["git_dirty"] else "")
    return f"conway-{__version__}"


def prompt_record(parts: list[Any]) -> dict[str, Any]:
    """`prompt_sha256` (of the parts' names and texts, in order) and `prompt_parts` (their names).

    The digest is the SHA-256 of `json.dumps([[name, text], ...], ensure_ascii=False, separators=(",", ":"))`
    in UTF-8, fed part by part: most parts (constitution, goals, memory, action space) are the same text
    every cycle, so each part's encoded element is kept and only the changed ones are serialised again.
    """
    digest = hashlib.sha256(b"[")
    for n, p in enumerate(parts):
        if n:
            digest.update(b",")
        digest.update(_element(p.name, p.text))
    digest.update(b"]")
    return {"prompt_sha256": digest.hexdigest(), "prompt_parts": [p.name for p in parts]}


_ELEMENTS: dict[tuple[str, str], bytes] = {}
_ELEMENTS_MAX = 64  # a few cycles' parts; the changing ones (latest result, recent steps) soon fall out


def _element(name: str, text: str) -> bytes:
    key = (name, text)
    chunk = _ELEMENTS.get(key)
    if chunk is None:
        if len(_ELEMENTS) >= _ELEMENTS_MAX:
            _ELEMENTS.clear()
        chunk = _ELEMENTS[key] = json.dumps([name, text], ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return chunk
