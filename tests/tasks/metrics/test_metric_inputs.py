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


def test_tasks_list_refuses_what_the_metric_refuses_at_run_time():
    """An option a metric refuses when it runs is named by `unsupported_options` too (so `tasks list` calls the
    task not runnable), for the metrics with their own `OPTIONS`, a metric with no **options (its call would
    raise) and compare_archive's file types; comments (`_note`) are never a problem."""
    from conway.tasks.metrics import OPTIONS, unsupported_options
    assert set(OPTIONS) >= {"compare_images", "compare_pdfs", "compare_references", "check_tabstops",
                            "evaluate_colored_words_in_tables", "compare_docx_files_and_ignore_new_lines"}
    for func, accepted in OPTIONS.items():
        assert unsupported_options(func, {"bogus": 1, "_note": "x"}) == ["bogus"]
        assert unsupported_options(func, dict.fromkeys(accepted, 1)) == []
    assert unsupported_options("compare_epub", {"bogus": 1}) == ["bogus"]  # compare_epub(result, expected)
    assert unsupported_options("compare_videos", {"threshold": 3, "max_frames_to_check": 9}) == []
    assert unsupported_options("compare_videos", {"fps": 3}) == ["fps"]
    assert unsupported_options("compare_archive", {"file_type": "smell"}) == ["file_type='smell'"]
    assert unsupported_options("compare_archive", {"file_type": "video"}) == []
    assert unsupported_options("compare_text_file", {"anything": 1}) == []  # takes **options, as OSWorld's
