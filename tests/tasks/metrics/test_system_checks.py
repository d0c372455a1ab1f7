"""The OS and plain-file checks on generated values and files, each scored as OSWorld's function scores it (its
runner counting a raise as 0): equal, changed, missing, empty, malformed."""

from __future__ import annotations

import sqlite3
import zipfile

from helpers.extras import need_extra

from conway.tasks.metrics import METRICS

TIMEDATECTL = """               Local time: Thu 2024-01-25 12:56:06 {zone}
           Universal time: Thu 2024-01-25 12:56:06 UTC
                 RTC time: Thu 2024-01-25 12:56:05
                Time zone: {name} ({zone}, {offset})
"""


def test_time_zone_favourites_folders_and_clipboard():
    utc = METRICS["is_utc_0"]
    assert utc(TIMEDATECTL.format(zone="WET", name="Atlantic/Faroe", offset="+0000")) == 1.0
    assert utc(TIMEDATECTL.format(zone="CET", name="Europe/Paris", offset="+0100")) == 0.0
    assert utc("") == 0.0 and utc(None) == 0.0  # OSWorld raises on a short or missing output
    fav = METRICS["check_gnome_favorite_apps"]
    assert fav("['a.desktop', 'b.desktop']\n", {"expected": ["b.desktop", "a.desktop"]}) == 1.0
    assert fav("['a.desktop']", {"expected": ["b.desktop"]}) == 0.0
    assert fav("['a.desktop', 'a.desktop']", {"expected": ["a.desktop"]}) == 0.0  # as many, not only the same
    assert fav("not a list", {"expected": []}) == 0.0
    moved = METRICS["check_moved_jpgs"]
    tree = {"children": [{"type": "file", "name": "a.jpg"}, {"type": "file", "name": "b.jpg"}]}
    assert moved(tree, {"expected": ["b.jpg", "a.jpg"]}) == 1.0
    assert moved(tree, {"expected": ["a.jpg"]}) == 0.0 and moved(None, {"expected": []}) == 0.0
    clip = METRICS["is_in_vm_clickboard"]
    assert clip({"expected": "hello"}, "say hello\n") == 1.0 and clip({"expected": ["a", "z"]}, "abc") == 0.0
    assert clip({"expected": "x"}, None) == 0.0


def test_sqlite_timestamps_and_archives(tmp_path):
    db = tmp_path / "d.db"
    with sqlite3.connect(db) as c:
        c.execute("create table t (n int)")
        c.execute("insert into t values (3)")
    assert METRICS["run_sqlite3"](str(db), {"sql": "select n from t"}) == 3.0
    assert METRICS["run_sqlite3"](str(db), {"sql": "select null"}) == 0.0
    assert METRICS["run_sqlite3"](str(db), {"sql": "select nope from t"}) == 0.0  # OSWorld raises
    log = tmp_path / "log.txt"
    log.write_text("12:00:01 a\nno time\n23:59:60 b\n")
    assert METRICS["check_line_number"](str(log), {"expected": "2"}) == 1.0
    assert METRICS["check_line_number"](str(log), {"expected": 3}) == 0.0
    assert METRICS["check_line_number"](str(tmp_path / "none"), {"expected": 0}) == 0.0
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe12:00:00")
    assert METRICS["check_line_number"](str(tmp_path / "bad.txt"), {"expected": 1}) == 0.0  # OSWorld: 0 on except

    def archive(name, members):
        with zipfile.ZipFile(tmp_path / name, "w") as z:
            for k, v in members.items():
                z.writestr(k, v)
        return str(tmp_path / name)

    gold = archive("gold.zip", {"a.txt": "A", "b/c.txt": "C"})
    same = METRICS["compare_zip_files"]
    assert same(archive("same.zip", {"b/c.txt": "C", "a.txt": "A"}), gold) == 1.0
    assert same(archive("changed.zip", {"a.txt": "A", "b/c.txt": "X"}), gold) == 0.0
    assert same(archive("fewer.zip", {"a.txt": "A"}), gold) == 0.0
    (tmp_path / "bad.zip").write_text("no zip")
    assert same(str(tmp_path / "bad.zip"), gold) == 0.0 and same(None, gold) == 0.0


def test_a_python_test_suite_runs_in_a_child_process(tmp_path):
    (tmp_path / "solution.py").write_text("def add(a, b):\n    return a + b\n")
    (tmp_path / "test_ok.py").write_text("from solution import add\ndef test():\n    return add(2, 2) == 4\n")
    (tmp_path / "test_bad.py").write_text("from solution import add\ndef test():\n    return add(2, 2) == 5\n")
    (tmp_path / "test_broken.py").write_text("def test(:\n")
    (tmp_path / "test_raises.py").write_text("def test():\n    raise SystemExit(0)\n")
    check = METRICS["check_python_file_by_test_suite"]
    assert check([], str(tmp_path / "test_ok.py")) == 1.0
    assert check([], str(tmp_path / "test_bad.py")) == 0.0
    assert check([], str(tmp_path / "test_broken.py")) == 0.0
    assert check([], str(tmp_path / "test_raises.py")) == 0.0
    assert check([], str(tmp_path / "none.py")) == 0.0 and check([], None) == 0.0
    (tmp_path / "named.py").write_text("def check_it():\n    return True\n")
    assert check([], str(tmp_path / "named.py"), test_function_name="check_it") == 1.0


def test_three_fuzzy_answers_in_a_document(tmp_path):
    docx = need_extra("tasks", "docx")
    def doc(name, text):
        d = docx.Document()
        d.add_paragraph(text)
        d.save(tmp_path / name)
        return str(tmp_path / name)
    place = METRICS["fuzzy_place_math"]
    assert place(doc("three.docx", "12 15 20"), {"expected": ["12", "15", "20"]}) == 1.0
    assert 0 < place(doc("near.docx", "12 15 21"), {"expected": ["12", "15", "20"]}) < 1
    assert place(doc("two.docx", "12 15"), {"expected": ["12"]}) == 0.0
    assert place(None, {"expected": []}) == 0.0
    (tmp_path / "bad.docx").write_text("x")
    assert place(str(tmp_path / "bad.docx"), {"expected": ["1"]}) == 0.0
