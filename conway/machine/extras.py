"""The optional extras pyproject.toml declares and the modules each brings: what doctor lists and what a task
needs (`conway.tasks.runnable`), read from one place below both."""

from __future__ import annotations

EXTRAS: dict[str, list[str]] = {
    "gui": ["mss", "pyautogui"],
    "llama": ["llama_cpp"],
    "train": ["torch", "transformers", "peft", "datasets"],
    "tasks": ["openpyxl", "docx", "pptx", "pandas"],
    "mcp": ["mcp", "jsonschema"],
    "ray": ["ray"],
    "atspi": ["gi"],
}
"""The optional extras and the modules each brings (pyproject.toml's extras)."""
