"""A small OSWorld-format suite written by a test: tasks that want `ok` in ~/out.txt, each with its mock script."""

from __future__ import annotations

import json
from pathlib import Path


def ok_task(task_id: str) -> dict:
    """A task checked by `cat ~/out.txt` against `ok`."""
    return {"id": task_id, "instruction": "Write ok into ~/out.txt.", "config": [], "related_apps": ["os"],
            "evaluator": {"func": "exact_match",
                          "result": {"type": "vm_command_line", "command": "cat ~/out.txt", "shell": True},
                          "expected": {"type": "rule", "rules": {"expected": "ok\n"}}}}


def mock_suite(root: Path, scripts: dict[str, list]) -> tuple[Path, Path]:
    """(suite folder, mock-script folder): one `ok_task` per name, its mock script beside it."""
    suite, mock = root / "suite" / "examples" / "os", root / "mock"
    suite.mkdir(parents=True)
    mock.mkdir()
    for name, steps in scripts.items():
        (suite / f"{name}.json").write_text(json.dumps(ok_task(name)))
        (mock / f"{name}.yaml").write_text(json.dumps(steps))
    return root / "suite", mock
