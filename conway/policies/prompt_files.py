"""A family's prompt files: the text its models were trained or evaluated with, kept exactly as their sources wrote it.

Each family keeps them in the `prompts/` folder of its own package (`conway/policies/families/<name>/prompts/`),
beside a `SOURCES.md` naming the repository, file, commit and licence of every file and its sha256 (a test holds
the files to those sums). Text Conway wrote itself (a request line, an action-space list) is a file there too: its
row says it is Conway's own, and a folder of Conway's text alone (generic's) needs no `SOURCES.md`. Conway fills placeholders only where the source did. A module of the family reads them
through `PromptFolder.of(__file__)`, so the folder moves with the family.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

__all__ = ["PromptFolder"]


@dataclass(frozen=True)
class PromptFolder:
    """The `prompts/` folder of one family's package."""

    path: Path

    @classmethod
    def of(cls, module_file: str) -> PromptFolder:
        """The prompt folder beside `module_file` (a module's `__file__` in the family's package)."""
        return cls(Path(module_file).parent / "prompts")

    def text(self, name: str) -> str:
        """The stored text of the file `name`, exactly."""
        return _read(self.path / name)


@cache
def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")
