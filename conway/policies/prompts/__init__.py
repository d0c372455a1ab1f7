"""Prompts the model families were trained or evaluated with, kept exactly as their sources wrote them.

One folder per family, each with a `SOURCES.md` naming the repository, file, commit and licence of every file
and its sha256 (a test holds the files to those sums). Conway fills placeholders only where the source did.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

__all__ = ["FOLDER", "prompt_text"]

FOLDER = Path(__file__).parent


@cache
def prompt_text(name: str) -> str:
    """The stored text of `name` (`<family>/<file>`), exactly."""
    return (FOLDER / name).read_text(encoding="utf-8")
