"""The two workbooks `compare_table` reads, opened at most once per way of reading them, and how it reads a cell.

Sheets are named as OSWorld's tasks name them (an int, `RI<n>`, `RN<name>`,
`EI<n>`, `EN<name>`); values are read as the file stores them, styles as
OSWorld's checker reads them.
"""

from __future__ import annotations

import datetime as dt
import operator
from pathlib import Path
from typing import Any

from conway.tasks.metrics.errors import MetricError
from conway.tasks.metrics.inputs import existing_file, library, opened

COMPARE = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
           "gt": operator.gt, "ge": operator.ge}
"""The comparison methods of a `{method, ref}` rule (besides `approx:<tolerance>`)."""
STYLE_PROPS = {"merge", "bgcolor", "fgcolor", "font_color", "font_bold", "font_italic", "font_underline",
               "font_name", "font_size", "number_format"}
"""The cell styles `cell_style` reads."""


def text_lines(path: Path, what: str) -> list[str]:
    """A text file's lines (UTF-8, a BOM dropped, else Latin-1), or a MetricError naming it."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise MetricError(f"the {what} cannot be read: {path}: {exc.strerror}") from None
    try:
        return data.decode("utf-8-sig").splitlines()
    except UnicodeDecodeError:  # LibreOffice may export in the locale's 8-bit code page
        return data.decode("latin-1").splitlines()


class Books:
    """The result and expected workbooks, each opened at most once per way of reading it."""

    def __init__(self, result: Path, expected: Path | None) -> None:
        self.paths = {"result": result, "expected": expected}
        self._cache: dict[tuple[str, str], Any] = {}

    def _load(self, side: str, how: str) -> Any:
        key = (side, how)
        if key not in self._cache:
            path = self.paths[side]
            if path is None:
                raise MetricError("compare_table: the rule names the expected workbook but the task gives none")
            if how == "frames":
                pd = library("pandas")
                self._cache[key] = opened(lambda p: pd.ExcelFile(p, engine="openpyxl"), path, side, "workbook")
            else:
                openpyxl = library("openpyxl")
                self._cache[key] = opened(lambda p: openpyxl.load_workbook(p, data_only=(how == "values")),
                                          path, side, "workbook")
        return self._cache[key]

    def names(self, side: str) -> list[str]:
        if (side, "frames") in self._cache and (side, "styles") not in self._cache:  # no second parse for names
            return list(self._cache[(side, "frames")].sheet_names)
        return list(self._load(side, "styles").sheetnames)

    def sheet(self, idx: Any) -> tuple[str, str | None]:
        """A task's sheet index → (side, sheet name); the name is None when a position is out of range."""
        if isinstance(idx, int) and not isinstance(idx, bool):
            side, pos = "result", idx
        elif isinstance(idx, str) and idx[:2] in ("RI", "RN", "EI", "EN"):
            side = "result" if idx[0] == "R" else "expected"
            if idx[1] == "N":
                return side, idx[2:]
            try:
                pos = int(idx[2:])
            except ValueError:
                raise MetricError(f"compare_table: bad sheet index {idx!r}") from None
        else:
            raise MetricError(f"compare_table: bad sheet index {idx!r} (an int, RI<n>, RN<name>, EI<n> or EN<name>)")
        names = self.names(side)
        return side, names[pos] if 0 <= pos < len(names) else None

    def worksheet(self, idx: Any, how: str = "styles") -> Any:
        """The openpyxl sheet (`how`: "styles" keeps formulas, "values" reads their stored results), or None."""
        side, name = self.sheet(idx)
        book = self._load(side, how)
        return book[name] if name in book.sheetnames else None

    def frame(self, idx: Any) -> Any:
        side, name = self.sheet(idx)
        frames = self._load(side, "frames")
        if name not in frames.sheet_names:
            return None
        pd = library("pandas")
        return opened(lambda _: pd.read_excel(frames, sheet_name=name), self.paths[side], side, f"sheet {name!r}")

    def printed(self, idx: Any) -> list[str] | None:
        side, name = self.sheet(idx)
        if name is None:
            return None
        book = self.paths[side]
        csv = book.with_name(f"{book.stem}-{name}.csv")
        lines = text_lines(existing_file(csv, f"{side} sheet's CSV export"), side)
        lines = [s.strip() for s in lines]
        while lines and not lines[-1]:
            lines.pop()
        return lines


def stored_value(cell: Any) -> Any:
    """A cell's value as the file stores it: numbers and dates as floats (an xlsx keeps dates as serial numbers)."""
    value = cell.value
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        from openpyxl.utils.datetime import to_excel
        return float(to_excel(value))
    return value


def cell_value(ws: Any, coordinate: str) -> Any:
    """The stored value of one cell of a sheet read with `how="values"`; None for a missing sheet or an empty cell."""
    return None if ws is None else stored_value(ws[coordinate])


def cell_style(prop: str, cell: Any) -> Any:
    """One style property of a cell, read as OSWorld's checker reads it (font properties only of non-empty cells)."""
    if prop == "merge":
        return type(cell).__name__ == "MergedCell"
    if prop in ("bgcolor", "fgcolor"):  # the solid fill's colour is its foreground colour in an xlsx
        return getattr(cell.fill.fgColor, "rgb", None)
    if cell.value is None:
        return None
    if prop == "number_format":
        return cell.number_format if cell.data_type == "n" else None
    font = cell.font
    return {"font_color": lambda: getattr(font.color, "rgb", None) if font.color is not None else None,
            "font_bold": lambda: font.bold, "font_italic": lambda: font.italic,
            "font_underline": lambda: font.underline, "font_name": lambda: font.name,
            "font_size": lambda: font.size}[prop]()


def matches(value: Any, rule: dict[str, Any]) -> bool:
    """`value` against a task's `{method, ref}`: a comparison (`eq`, `lt` ...) or `approx:<tolerance>`."""
    method, ref = rule["method"], rule["ref"]
    if method.startswith("approx:"):
        try:
            return abs(float(value) - float(ref)) <= float(method.split(":", 1)[1])
        except (TypeError, ValueError):
            return False
    try:
        return bool(COMPARE[method](value, ref))
    except TypeError:  # e.g. None < 5: the cell does not hold what the rule compares
        return False
