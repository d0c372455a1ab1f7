"""What every file-comparing metric checks before it compares: a real file, the library that reads it, options it knows.

The document libraries come with the optional `tasks` extra; they are imported on
first use so that listing a suite (which only asks `unsupported_options`) works
without them, and a metric that needs one says which extra brings it.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType
from typing import Any, Collection

from conway.tasks.metrics.errors import MetricError, UnsupportedOption


def existing_file(path: Any, what: str) -> Path:
    """`path` as a Path to a regular file, or a MetricError naming `what` ("result", "expected") and the problem."""
    if isinstance(path, (list, tuple)):
        raise MetricError(f"the {what} is {len(path)} files; this metric compares one")
    if not isinstance(path, (str, os.PathLike)):
        raise MetricError(f"the {what} is not a file path: {type(path).__name__}")
    p = Path(path)
    if not p.exists():
        raise MetricError(f"the {what} file does not exist: {p}")
    if not p.is_file():
        raise MetricError(f"the {what} is not a regular file: {p}")
    return p


def library(module: str) -> ModuleType:
    """Import one of the document libraries, or say which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MetricError(f"{module} is not installed ({exc.name}): pip install -e '.[tasks]'") from None


def opened(loader: Any, path: Path, what: str, kind: str) -> Any:
    """`loader(path)`, with any failure to parse the file turned into one line naming it."""
    try:
        return loader(path)
    except Exception as exc:  # the libraries raise many types (BadZipFile, KeyError, XML errors) for one cause
        raise MetricError(f"the {what} is not a readable {kind}: {path.name}: {type(exc).__name__}: {exc}") from None


def is_note(key: str) -> bool:
    """Task authors leave comments as `_note`-style keys; OSWorld's checkers never read them, neither do we."""
    return key.startswith("_")


def unknown_options(options: dict[str, Any], accepted: Collection[str]) -> list[str]:
    """The option keys a metric does not take (notes aside)."""
    return [k for k in options if k not in accepted and not is_note(k)]


def refuse(func_name: str, problems: list[str]) -> None:
    """Raise UnsupportedOption naming every problem, so a metric never runs on options it would misread."""
    if problems:
        raise UnsupportedOption(f"{func_name}: not supported here: {', '.join(problems)}")
