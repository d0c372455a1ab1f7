"""Each file metric with a real file that passes and one that fails."""

from __future__ import annotations

import json

import pytest

from conway.tasks.metrics.files import check_json_settings, check_list, compare_text_file


def test_compare_text_file(tmp_path):
    gold = tmp_path / "gold.txt"
    gold.write_text("Hello\tWorld\n")
    same, other = tmp_path / "a.txt", tmp_path / "b.txt"
    same.write_text("Hello\tWorld\n")
    other.write_text("hello   world")
    assert compare_text_file(str(same), str(gold)) == 1.0
    assert compare_text_file(str(other), str(gold)) == 0.0
    assert compare_text_file(str(other), str(gold), ignore_blanks=True) == 0.0
    assert compare_text_file(str(other), str(gold), ignore_blanks=True, ignore_case=True) == 1.0
    assert compare_text_file(None, str(gold)) == 0.0
    with pytest.raises(FileNotFoundError):
        compare_text_file(str(tmp_path / "gone.txt"), str(gold))


def test_check_list_regular_expressions_per_line(tmp_path):
    out = tmp_path / "apt.out"
    out.write_text("openjdk-17-jre/stable 17.0 amd64\nvim/stable 9.0\n")
    assert check_list(str(out), {"expect": [r"openjdk-\d+-(jre|jdk)"]}) == 1.0
    assert check_list(str(out), {"expect": [r"openjdk-\d+-(jre|jdk)", r"^emacs"]}) == 0.0
    assert check_list(str(out), {"expect": [r"vim"], "unexpect": [r"^openjdk"]}) == 0.0
    assert check_list(None, {"expect": []}) == 0.0


def test_check_json_settings(tmp_path):
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"editor.wordWrapColumn": 50, "files.autoSave": "off"}))
    assert check_json_settings(str(settings), {"expected": {"editor.wordWrapColumn": 50}}) == 1.0
    assert check_json_settings(str(settings), {"expected": {"editor.wordWrapColumn": 80}}) == 0.0
    assert check_json_settings(str(settings), {"expected": {"editor.fontSize": 14}}) == 0.0
    settings.write_text("{ not json")
    assert check_json_settings(str(settings), {"expected": {"editor.wordWrapColumn": 50}}) == 0.0
    assert check_json_settings(None, {"expected": {}}) == 0.0


def test_diff_text_file_is_a_line_ratio(tmp_path):
    from conway.tasks.metrics.files import diff_text_file
    gold, out = tmp_path / "gold.txt", tmp_path / "out.txt"
    gold.write_text("a\nb\nc\nd\n")
    out.write_text("a\nb\nc\nd\n")
    assert diff_text_file(str(out), str(gold)) == 1.0
    out.write_text("a\nb\nx\ny\n")
    assert diff_text_file(str(out), str(gold)) == 0.5
    assert diff_text_file(None, str(gold)) == 0.0


def test_file_contains(tmp_path):
    from conway.tasks.metrics.files import file_contains
    out = tmp_path / "out.txt"
    out.write_text("speed: 93.1 Mbps\nping: 12 ms\n")
    assert file_contains(str(out), {"expected": ["Mbps", "ping"]}) == 1.0
    assert file_contains(str(out), {"expected": ["Mbps", "jitter"]}) == 0.0
    assert file_contains(str(tmp_path / "gone.txt"), {"expected": ["x"]}) == 0.0


def test_check_json_keybindings_with_and_without_a_comment_line(tmp_path):
    from conway.tasks.metrics.files import check_json_keybindings
    binding = {"key": "ctrl+j", "command": "workbench.action.togglePanel"}
    path = tmp_path / "keybindings.json"
    path.write_text("// Place your key bindings in this file\n" + json.dumps([binding]))
    assert check_json_keybindings(str(path), {"expected": binding}) == 1.0
    path.write_text(json.dumps([{"key": "ctrl+k", "command": "workbench.action.togglePanel"}]))
    assert check_json_keybindings(str(path), {"expected": binding}) == 0.0
    path.write_text(json.dumps({"key": "ctrl+j"}))
    assert check_json_keybindings(str(path), {"expected": binding}) == 0.0
    assert check_json_keybindings(None, {"expected": binding}) == 0.0


NOT_UTF8 = b"Hello \xff\xfe World\n"  # bytes no UTF-8 reader accepts; read with replacement they become U+FFFD


def test_text_metrics_on_a_file_that_is_not_utf8_score_0_as_osworld(tmp_path):
    """OSWorld opens the files in a UTF-8 locale, strictly: compare_text_file, diff_text_file and check_list crash
    (scored 0, as OSWorld's runner counts a crash), file_contains and the JSON ones catch it and score 0. Read
    with replacement, the same broken file compared equal to itself and scored 1."""
    from conway.tasks.metrics.files import check_json_keybindings, diff_text_file, file_contains
    bad = tmp_path / "bad.txt"
    bad.write_bytes(NOT_UTF8)
    good = tmp_path / "good.txt"
    good.write_text("Hello World\n")
    for metric in (compare_text_file, diff_text_file):
        assert metric(str(bad), str(bad)) == 0.0
        assert metric(str(good), str(bad)) == 0.0
        assert metric(str(good), str(good)) == 1.0
    assert check_list(str(bad), {"expect": ["Hello"]}) == 0.0
    assert file_contains(str(bad), {"expected": ["Hello"]}) == 0.0
    bad.write_bytes(b'{"editor.fontSize": 14, "x": "\xff"}')
    assert check_json_settings(str(bad), {"expected": {"editor.fontSize": 14}}) == 0.0
    bad.write_bytes(b'[{"key": "ctrl+j", "x": "\xff"}]')
    assert check_json_keybindings(str(bad), {"expected": {"key": "ctrl+j"}}) == 0.0


def test_check_list_splits_lines_at_newlines_only(tmp_path):
    """OSWorld's check_list iterates the open file: a form feed, vertical tab or U+2028 is inside a line, not
    the end of one (str.splitlines ends lines there too). Carriage returns end lines in both (text mode)."""
    out = tmp_path / "out.txt"
    out.write_bytes("alpha\x0cbeta\nvim\x0bemacs\u2028nano\n".encode())
    assert check_list(str(out), {"expect": [r"^beta"]}) == 0.0
    assert check_list(str(out), {"expect": [r"alpha\x0cbeta$"]}) == 1.0
    assert check_list(str(out), {"expect": [r"^emacs"]}) == 0.0
    assert check_list(str(out), {"expect": [r"^vim.*nano$"]}) == 1.0
    out.write_bytes(b"one\r\ntwo\rthree")
    assert check_list(str(out), {"expect": [r"^two$", r"^three$"]}) == 1.0
