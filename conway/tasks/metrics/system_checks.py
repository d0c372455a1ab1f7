"""OSWorld's small checks of the system's state and of plain files (its basic_os.py, general.py, vscode.py),
written afresh: the time zone, the dock's favourites, a folder's files, the clipboard's text, an SQL answer,
timestamps counted, two zip archives, a Python test suite, three fuzzy answers in a document.

Where OSWorld's function raises (a missing file, a malformed value), its runner counts 0, and so does each
check here (`errors.zero_where_osworld_raises`).
"""

from __future__ import annotations

import ast
import contextlib
import io
import re
import sqlite3
import subprocess
import sys
import zipfile
from collections.abc import Callable
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

from conway.tasks.metrics.errors import zero_where_osworld_raises

TEST_TIMEOUT_S = 120.0


@zero_where_osworld_raises
def is_utc_0(timedatectl_output: str) -> float:
    """`timedatectl`'s fourth line (its time zone) ends with `+0000)`."""
    return float(timedatectl_output.split("\n")[3].endswith("+0000)"))


def _same_names(found: list[Any], expected: list[Any]) -> float:
    return float(len(found) == len(expected) and set(found) == set(expected))


@zero_where_osworld_raises
def check_gnome_favorite_apps(apps_str: str, rule: dict[str, Any]) -> float:
    """The dock's favourites (gsettings' list, read as a Python literal where OSWorld evaluates it) are the
    expected ones, as many and the same."""
    return _same_names(list(ast.literal_eval(apps_str.strip())), rule["expected"])


@zero_where_osworld_raises
def check_moved_jpgs(directory_list: dict[str, Any], rule: dict[str, Any]) -> float:
    """The folder's entries (`list_directory`'s tree) are the expected names."""
    return _same_names([node["name"] for node in directory_list["children"]], rule["expected"])


@zero_where_osworld_raises
def is_in_vm_clickboard(config: dict[str, Any], terminal_output: str) -> float:
    """The expected text (each of a list) appears in the clipboard's text."""
    wanted = config["expected"]
    return float(all(w in terminal_output for w in wanted) if isinstance(wanted, list) else wanted in terminal_output)


@zero_where_osworld_raises
def run_sqlite3(result: str, rules: dict[str, Any]) -> float:
    """The first column of the first row `rules["sql"]` answers on the result database (None as 0)."""
    with contextlib.closing(sqlite3.connect(f"file:{result}?mode=ro", uri=True)) as db:
        return float(db.execute(rules["sql"]).fetchone()[0] or 0)


TIME = re.compile(r"([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)")


@zero_where_osworld_raises
def check_line_number(file_path: Any, line_number: dict[str, Any]) -> float:
    """As many lines holding a time (hh:mm:ss) as expected."""
    if file_path is None or not Path(file_path).is_file():
        return 0.0
    with open(file_path, encoding="utf-8") as f:
        count = sum(1 for line in f if TIME.search(line))
    return float(count == int(line_number["expected"]))


def _pdf_text(content: bytes) -> str:
    from conway.tasks.metrics.inputs import library
    fitz = library("pymupdf")
    with fitz.open(stream=io.BytesIO(content), filetype="pdf") as doc:
        return "".join(page.get_text() for page in doc)


@zero_where_osworld_raises
def compare_zip_files(actual: Any, expected: Any, **options: Any) -> float:
    """The same member names, and each member the same bytes (a PDF: its text at least 95% alike)."""
    if not actual:
        return 0.0
    with zipfile.ZipFile(actual) as mine, zipfile.ZipFile(expected) as theirs:
        names = set(mine.namelist())
        if names != set(theirs.namelist()):
            return 0.0
        for name in names:
            a, b = mine.read(name), theirs.read(name)
            if name.lower().endswith(".pdf"):
                if SequenceMatcher(None, _pdf_text(a), _pdf_text(b)).ratio() < 0.95:
                    return 0.0
            elif a != b:
                return 0.0
    return 1.0


RUN_TEST = """
import importlib.util, os, sys
path, name = sys.argv[1], sys.argv[2]
os.chdir(os.path.dirname(path)); sys.path.insert(0, os.path.dirname(path))
spec = importlib.util.spec_from_file_location("conway_task_test", path)
module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
result = getattr(module, name)()
print("CONWAY-RESULT", "1" if result is True or (not isinstance(result, bool) and result) else "0")
"""


@zero_where_osworld_raises
def check_python_file_by_test_suite(actual_files: Any, test_file: Any, **options: Any) -> float:
    """The task's test file is loaded (it imports the result's Python files beside it) and its `test` function
    (`test_function_name`) called: 1 when it answers true. OSWorld runs it in its own process; here a child
    Python process does, bounded in time, so a hanging or crashing test scores 0 without touching Conway."""
    if not test_file or not Path(test_file).is_file():
        return 0.0
    done = subprocess.run([sys.executable, "-I", "-c", RUN_TEST, str(Path(test_file).resolve()),
                           str(options.get("test_function_name", "test"))], capture_output=True, text=True,
                          timeout=TEST_TIMEOUT_S, stdin=subprocess.DEVNULL)
    return float("CONWAY-RESULT 1" in done.stdout.splitlines())


@zero_where_osworld_raises
def fuzzy_place_math(result_file_path: Any, rules: dict[str, Any]) -> float:
    """A document of exactly three words, each scored by its best fuzzy ratio against the answers, averaged."""
    if result_file_path is None:
        return 0.0
    from rapidfuzz import fuzz

    from conway.tasks.metrics.inputs import library
    doc = library("docx").Document(result_file_path)
    words = [w for p in doc.paragraphs for w in p.text.split()]
    if len(words) != 3:
        return 0.0
    return sum(max([fuzz.ratio(w, a) / 100 for a in rules["expected"]], default=0) for w in words) / 3


METRICS: dict[str, Callable[..., float]] = {f.__name__: f for f in (
    is_utc_0, check_gnome_favorite_apps, check_moved_jpgs, is_in_vm_clickboard, run_sqlite3, check_line_number,
    compare_zip_files, check_python_file_by_test_suite, fuzzy_place_math)}
