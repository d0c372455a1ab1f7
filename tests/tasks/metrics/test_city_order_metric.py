"""compare_conference_city_in_order on workbooks written here with openpyxl, scored as OSWorld's."""

from __future__ import annotations

from pathlib import Path

from helpers.extras import need_extra

openpyxl = need_extra("tasks", "openpyxl")

from conway.tasks.metrics import METRICS  # noqa: E402
from conway.tasks.metrics.city_order import compare_conference_city_in_order as in_order  # noqa: E402

CITIES = ["Vienna", "New Orleans", "Kigali"] + [f"City {n}" for n in range(18)]
EXPECTED = ["vienna", ["New Orleans", "NOLA"], "Kigali"] + [f"City {n}" for n in range(18)]


def sheet(path: Path, cities: list) -> str:
    book = openpyxl.Workbook()
    book.active["C1"] = "City"
    for n, city in enumerate(cities, start=2):
        book.active[f"C{n}"] = city
    book.save(path)
    return str(path)


def test_registered():
    assert METRICS["compare_conference_city_in_order"] is in_order


def test_cities_in_order(tmp_path):
    assert in_order(sheet(tmp_path / "ok.xlsx", CITIES), {"expected": EXPECTED}) == 1.0
    decorated = ["Wien/Vienna, Austria", "New Orleans (USA)", "Kigali!"] + CITIES[3:]
    assert in_order(sheet(tmp_path / "decorated.xlsx", decorated), {"expected": EXPECTED}) == 1.0
    accented = ["Vi\u00e9nna"] + CITIES[1:]  # the accent is dropped before comparing
    assert in_order(sheet(tmp_path / "accented.xlsx", accented), {"expected": EXPECTED}) == 1.0
    swapped = [CITIES[1], CITIES[0]] + CITIES[2:]
    assert in_order(sheet(tmp_path / "swapped.xlsx", swapped), {"expected": EXPECTED}) == 0.0
    missing = CITIES[:20]  # C22 empty
    assert in_order(sheet(tmp_path / "missing.xlsx", missing), {"expected": EXPECTED}) == 0.0
    assert in_order(sheet(tmp_path / "short.xlsx", CITIES), {"expected": EXPECTED[:20]}) == 0.0
    assert in_order(sheet(tmp_path / "typed.xlsx", CITIES), {"expected": [1] + EXPECTED[1:]}) == 0.0


def test_missing_empty_malformed(tmp_path):
    junk = tmp_path / "junk.xlsx"
    junk.write_bytes(b"not a zip")
    empty = tmp_path / "empty.xlsx"
    empty.write_bytes(b"")
    for path in (None, str(tmp_path / "absent.xlsx"), str(junk), str(empty)):
        assert in_order(path, {"expected": EXPECTED}) == 0.0
    assert in_order(sheet(tmp_path / "blank.xlsx", []), {"expected": EXPECTED}) == 0.0
