"""What every file metric checks first: a real file, an installed library, and options it knows."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conway.tasks.metrics.errors import MetricError, UnsupportedOption
from conway.tasks.metrics.inputs import existing_file, library, refuse


def test_existing_file_accepts_a_regular_file_and_names_every_other_case(tmp_path):
    f = tmp_path / "a.xlsx"
    f.write_bytes(b"x")
    assert existing_file(str(f), "result") == f
    for bad, message in [(tmp_path / "absent.xlsx", "the result file does not exist"),
                         (tmp_path, "the result is not a regular file"),
                         ([f, f], "the result is 2 files"),
                         (42, "the result is not a file path: int")]:
        with pytest.raises(MetricError, match=message):
            existing_file(bad, "result")


def test_a_missing_library_names_the_extra_that_brings_it():
    with pytest.raises(MetricError, match=r"not installed .*pip install -e '\.\[tasks\]'"):
        library("conway_no_such_library")


def test_refuse_names_every_problem_and_passes_none():
    refuse("compare_table", [])
    with pytest.raises(UnsupportedOption, match="compare_table: not supported here: a, b"):
        refuse("compare_table", ["a", "b"])


def test_the_metric_modules_import_without_the_document_libraries():
    # a suite can be listed (unsupported_options) on a machine without the tasks extra
    code = ("import sys\n"
            "from conway.tasks.metrics import documents, tables\n"
            "assert tables.unsupported_options('compare_table', {'rules': [{'type': 'sheet_name'}]}) == []\n"
            "assert documents.unsupported_options('compare_pptx_files', {}) == []\n"
            "heavy = {'openpyxl', 'pandas', 'docx', 'pptx'} & set(sys.modules)\n"
            "assert not heavy, heavy\n")
    repo = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60, cwd=repo, env=env)
