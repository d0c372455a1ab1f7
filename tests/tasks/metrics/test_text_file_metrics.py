"""compare_result_files and compare_python_pure_text on files written here, scored as OSWorld's."""

from __future__ import annotations

import pytest

from conway.tasks.metrics import METRICS
from conway.tasks.metrics.text_files import compare_python_pure_text, compare_result_files


@pytest.fixture
def write(tmp_path):
    def _write(name: str, content: str | bytes) -> str:
        path = tmp_path / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        return str(path)
    return _write


def test_registered():
    for fn in (compare_result_files, compare_python_pure_text):
        assert METRICS[fn.__name__] is fn


def test_compare_result_files(write, tmp_path):
    gold = write("gold.txt", "42.5\n")
    assert compare_result_files(write("same.txt", "42.5"), gold) == 1.0
    assert compare_result_files(write("sentence.txt", "The answer is 42.5 dollars."), gold) == 1.0
    assert compare_result_files(write("close.txt", "42.50001"), gold) == 1.0
    assert compare_result_files(write("far.txt", "42.6"), gold) == 0.0
    assert compare_result_files(write("words.txt", "forty-two"), gold) == 0.0
    text_gold = write("text_gold.txt", "Paris\n")
    assert compare_result_files(write("paris.txt", " Paris "), text_gold) == 1.0
    assert compare_result_files(write("rome.txt", "Rome"), text_gold) == 0.0
    assert compare_result_files(None, gold) == 0.0
    assert compare_result_files(str(tmp_path / "absent.txt"), gold) == 0.0
    assert compare_result_files(write("empty.txt", ""), gold) == 0.0
    assert compare_result_files(write("latin.txt", b"42.5 \xe9"), gold) == 0.0


def test_compare_python_pure_text(write, tmp_path):
    gold = write("gold.py", "import os\n\ndef f():\n    return 1\n")
    same = write("same.py", "#!/usr/bin/env python3\n# -*- coding: utf-8 -*-\nimport os\n\n\ndef f():\n\treturn 1   \n")
    assert compare_python_pure_text(same, gold) == 1.0
    assert compare_python_pure_text(write("changed.py", "import os\ndef f():\n    return 2\n"), gold) == 0.0
    assert compare_python_pure_text(write("fenced.py", "```python\nimport os\ndef f():\n    return 1\n```\n"),
                                    gold) == 0.0
    late = write("late.py", "import os\n# coding: utf-8\ndef f():\n    return 1\n")  # only the first lines
    assert compare_python_pure_text(late, gold) == 0.0
    assert compare_python_pure_text(None, gold) == 0.0
    assert compare_python_pure_text(str(tmp_path / "absent.py"), gold) == 0.0
    assert compare_python_pure_text(write("empty.py", ""), write("empty_gold.py", "\n\n")) == 1.0
    assert compare_python_pure_text(write("latin.py", b"x = '\xe9'\n"), gold) == 0.0
