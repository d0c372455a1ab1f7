"""A cell's value read from the xlsx's own XML, the way OSWorld's `read_cell_value` (metrics/utils.py) reads it.

`check_cell`'s `value` is read this way rather than through openpyxl, because
OSWorld's reader differs from openpyxl's in what tasks can see:

- it opens `xl/worksheets/sheet{sheetId}.xml`, the number taken from the
  sheet's `sheetId` in workbook.xml, not the file the workbook's relations
  name: a workbook whose ids and file numbers differ reads another sheet, or
  nothing;
- a boolean (`t="b"`), an ISO date (`t="d"`) and a cell with no stored value
  read None;
- an inline string reads the text of its one `<t>`; a rich inline string
  (runs) reads None, and a `<t>` keeping its spaces (`xml:space="preserve"`,
  as openpyxl writes " text") reads as an element with an attribute, which
  equals no string ([PreservedText]);
- any other failure (no such sheet or cell, a corrupt archive, an unreadable
  shared-string table) reads None, as `compare_table` catches it there.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"


class PreservedText(dict):
    """A `<t xml:space="preserve">` as OSWorld's reader returns it (its XML turned into a dict): not a string, so
    `eq` against the text fails and `ne` holds."""


def _fromstring(data: bytes) -> Any:
    from openpyxl.xml.functions import fromstring  # openpyxl's parser: defusedxml when it is installed
    return fromstring(data)


def _shared_strings(archive: zipfile.ZipFile) -> list[str]:
    """Each shared string as the joined text of every `<t>` under it; an empty `<t>` makes OSWorld's join fail,
    and then it has no shared strings at all."""
    try:
        root = _fromstring(archive.read("xl/sharedStrings.xml"))
        return ["".join(t.text for t in si.iter(f"{MAIN}t")) for si in root.findall(f"{MAIN}si")]
    except Exception:  # OSWorld's reader swallows every failure here alike
        return []


def _sheet_file(archive: zipfile.ZipFile, sheet_name: str) -> str:
    """The sheet's file as OSWorld names it: by its `sheetId` (KeyError when the name or the file is absent)."""
    workbook = _fromstring(archive.read("xl/workbook.xml"))
    ids = {sh.get("name"): sh.get("sheetId") for sh in workbook.iter(f"{MAIN}sheet")}
    return f"xl/worksheets/sheet{ids[sheet_name]}.xml"


def _typed(cell: Any, shared: list[str]) -> Any:
    kind = cell.get("t", "n")
    v = cell.find(f"{MAIN}v")
    text = None if v is None else (v.text or None)  # an empty <v/> holds nothing
    if kind == "n":
        return float(text)  # no value: TypeError, read as None by the caller
    if kind == "s":
        return shared[int(text)]
    if kind in ("str", "e"):
        return text
    if kind == "inlineStr":
        inline = cell.find(f"{MAIN}is")
        t = None if inline is None else inline.find(f"{MAIN}t")
        if t is None:  # no <is>, or rich runs: OSWorld's lookup of the one <t> fails
            return None
        if t.get(XML_SPACE) is not None:
            return PreservedText({"@xml:space": t.get(XML_SPACE), "#text": t.text})
        return t.text
    return None  # "b", "d" and anything else: OSWorld's reader has no branch for them


def read_cell_value(path: Path, sheet_name: str | None, coordinate: str) -> Any:
    """The value OSWorld's `read_cell_value` gives for `coordinate` (as the task spells it) of the named sheet."""
    if sheet_name is None:
        return None
    try:
        with zipfile.ZipFile(path) as archive:
            shared = _shared_strings(archive)
            sheet = _fromstring(archive.read(_sheet_file(archive, sheet_name)))
            cell = next((c for row in sheet.iter(f"{MAIN}row") for c in row.findall(f"{MAIN}c")
                         if c.get("r") == coordinate), None)
            return None if cell is None else _typed(cell, shared)
    except Exception:  # check_cell reads any failure of OSWorld's reader as None
        return None
