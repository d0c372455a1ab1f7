"""check_csv on CSV files written here, scored as OSWorld's `check_csv` (general.py)."""

from __future__ import annotations

from conway.tasks.metrics import METRICS
from conway.tasks.metrics.files import check_csv

ACCOUNTS = "url,user\nimap://outlook.office365.com,anonym-x2024@outlook.com\nimap://mail.example,me@example.org\n"


def test_registered():
    assert METRICS["check_csv"] is check_csv


def test_expect_and_unexpect(tmp_path):
    path = tmp_path / "accounts.csv"
    path.write_text(ACCOUNTS)
    outlook = {"url": "imap://outlook.office365.com", "user": "anonym-x2024@outlook.com"}
    assert check_csv(str(path), {"expect": [outlook]}) == 1.0
    assert check_csv(str(path), {"expect": [outlook, {"user": "me@example.org"}]}) == 1.0
    assert check_csv(str(path), {"expect": [{**outlook, "user": "me@example.org"}]}) == 0.0  # one row must hold all
    assert check_csv(str(path), {"unexpect": [outlook]}) == 0.0
    assert check_csv(str(path), {"unexpect": [{"url": "imap://gone"}]}) == 1.0
    assert check_csv(str(path), {"expect": [{"port": "993"}]}) == 0.0  # no such column
    assert check_csv(str(path), {}) == 1.0


def test_missing_empty_and_malformed(tmp_path):
    empty, latin = tmp_path / "empty.csv", tmp_path / "latin.csv"
    empty.write_text("")
    latin.write_bytes(b"url,user\nx,caf\xe9\n")
    assert check_csv(None, {"unexpect": [{"url": "x"}]}) == 0.0
    assert check_csv(str(tmp_path / "absent.csv"), {"unexpect": [{"url": "x"}]}) == 0.0
    assert check_csv(str(empty), {"unexpect": [{"url": "x"}]}) == 1.0  # no row matches
    assert check_csv(str(empty), {"expect": [{"url": "x"}]}) == 0.0
    assert check_csv(str(latin), {"unexpect": [{"url": "y"}]}) == 0.0
