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
- a stored string (`t="str"`, `t="e"`, an inline `<t>`) is stripped of
  surrounding blanks, as OSWorld's XML-to-dict step strips them (shared
  strings are not);
- any failure to reach the cell (no such sheet or cell, a corrupt archive)
  reads None; a failure OSWorld's reader does not catch itself (`CellCrash`: an
  empty `<v>`, an unreadable shared-string table) is None too, as
  `check_cell` catches it.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"


class CellCrash(Exception):
    """Where OSWorld's reader raises instead of answering None."""


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


def _text(element: Any) -> str | None:
    """An element's text as OSWorld's reader gets it through xmltodict: stripped, None when nothing is left."""
    text = (element.text or "").strip()
    return text or None


def _inline(cell: Any) -> Any:
    inline = cell.find(f"{MAIN}is")
    if inline is None or (len(inline) == 0 and not (inline.text or "").strip()):
        raise CellCrash("an empty inline string")  # OSWorld indexes the None its parser gives for <is/>
    t = inline.find(f"{MAIN}t")
    if t is None:  # rich runs: OSWorld's lookup of the one <t> fails (a KeyError it catches)
        return None
    if t.get(XML_SPACE) is not None:
        preserved = PreservedText({"@http://www.w3.org/XML/1998/namespace:space": t.get(XML_SPACE)})
        if _text(t) is not None:
            preserved["#text"] = _text(t)
        return preserved
    return _text(t)


def _typed(cell: Any, shared: list[str]) -> Any:
    """The cell's value by its type; None where OSWorld's reader catches the failure (no `<v>`, not a number),
    `CellCrash` where it does not (an empty `<v>` of a number or shared string, a shared string it has not read)."""
    kind = cell.get("t", "n")
    if kind == "inlineStr":
        return _inline(cell)
    if kind not in ("n", "s", "str", "e"):
        return None  # "b", "d" and anything else: OSWorld's reader has no branch for them
    v = cell.find(f"{MAIN}v")
    if v is None:
        return None
    text = _text(v)
    if kind in ("str", "e"):
        return text
    if text is None:
        raise CellCrash("an empty stored value")
    try:
        return float(text) if kind == "n" else shared[int(text)]
    except ValueError:
        return None
    except IndexError:
        raise CellCrash("a shared string that was not read") from None


def _cell(path: Path, sheet_name: str, coordinate: str) -> tuple[Any, list[str]]:
    """The cell's element (None when the sheet has no such cell) and the shared strings; any failure to reach
    it (no such sheet, a corrupt archive) reads None, as OSWorld's reader catches it."""
    try:
        with zipfile.ZipFile(path) as archive:
            shared = _shared_strings(archive)
            sheet = _fromstring(archive.read(_sheet_file(archive, sheet_name)))
            return next((c for row in sheet.iter(f"{MAIN}row") for c in row.findall(f"{MAIN}c")
                         if c.get("r") == coordinate), None), shared
    except Exception:  # OSWorld's reader answers None for every failure up to here
        return None, []


def read_cell_value(path: Path, sheet_name: str | None, coordinate: str) -> Any:
    """The value OSWorld's `read_cell_value` gives for `coordinate` (as the task spells it) of the named sheet,
    None where it raises: `check_cell` catches that."""
    try:
        return strict_cell_value(path, sheet_name, coordinate)
    except CellCrash:
        return None


def strict_cell_value(path: Path, sheet_name: str | None, coordinate: str) -> Any:
    """As `read_cell_value`, but raising CellCrash where OSWorld's reader raises: `sheet_fuzzy` does not catch
    that, so its whole metric fails there (scored 0)."""
    if sheet_name is None:
        return None
    cell, shared = _cell(path, sheet_name, coordinate)
    return None if cell is None else _typed(cell, shared)
