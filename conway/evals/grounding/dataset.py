"""ScreenSpot-style grounding data from a local folder (nothing is downloaded).

Two layouts:

* **JSON annotation files** (ScreenSpot, ScreenSpot-v2, ScreenSpot-Pro): every
  ``*.json`` (a list of rows) or ``*.jsonl`` file under the folder. A row has
  ``img_filename``, ``bbox``, ``instruction``, and optionally ``data_type``
  (ScreenSpot; ``ui_type`` in Pro), ``data_source`` / ``platform`` /
  ``application``. Images are looked up relative to the folder, its
  ``images/`` and ``screenspot_imgs/`` subfolders and the annotation file's
  own folder (and its parent's ``images/``).
* **Hugging Face ``datasets`` folders** written by ``save_to_disk`` (a
  ``dataset_info.json`` + ``state.json``, or a ``dataset_dict.json`` with
  splits): the same columns, with the screenshot in an ``image`` column.

``bbox`` is ``[x, y, w, h]`` (ScreenSpot, v2) or ``[x1, y1, x2, y2]``
(ScreenSpot-Pro), in pixels or normalised to 0..1. The format is detected
per file from the boxes themselves (which reading makes a box empty or run
off its image) and reported with the reason; ``--bbox-format`` overrides it.
Rows that cannot be used are reported and skipped, never fatal.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable

from conway.errors import UserError
from conway.evals.grounding.cases import GroundingCase

BBOX_FORMATS = ("auto", "xywh", "xyxy")
IMAGE_KEYS = ("img_filename", "file_name", "image_path", "img_path")
SOURCE_KEYS = ("data_source", "platform", "application", "source")
TYPE_KEYS = ("data_type", "ui_type", "type")
HF_MARKERS = ("dataset_info.json", "state.json", "dataset_dict.json")
SKIPPED_SHOWN = 200
"""Skipped rows listed in the report one by one (the count is always complete)."""


@dataclass
class Row:
    """One annotation row before its box is interpreted."""

    file: str
    row: int
    instruction: str
    bbox: list[float]
    source: str
    type: str
    image_key: str
    size: tuple[int, int]
    load_image: Callable[[], bytes]
    image_ref: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class FileReport:
    file: str
    layout: str
    rows: int = 0
    used: int = 0
    bbox_format: str | None = None
    normalised: bool = False
    why: str = ""

    def record(self) -> dict[str, Any]:
        return {"file": self.file, "layout": self.layout, "rows": self.rows, "used": self.used,
                "bbox_format": self.bbox_format, "normalised": self.normalised, "why": self.why}


@dataclass
class DatasetLoad:
    root: Path
    cases: list[GroundingCase]
    files: list[FileReport]
    skipped: list[dict[str, Any]]
    total_rows: int


class _Skip(Exception):
    pass


def _image_size(path: Path) -> tuple[int, int]:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as img:
            return int(img.size[0]), int(img.size[1])
    except (UnidentifiedImageError, OSError) as exc:
        raise _Skip(f"image {path.name} is not a readable image ({type(exc).__name__})") from None


def _image_size_bytes(data: bytes) -> tuple[int, int]:
    import io

    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as img:
            return int(img.size[0]), int(img.size[1])
    except (UnidentifiedImageError, OSError) as exc:
        raise _Skip(f"the row's image is not a readable image ({type(exc).__name__})") from None


def _first(row: dict[str, Any], keys: Iterable[str]) -> Any:
    for k in keys:
        if row.get(k) not in (None, ""):
            return row[k]
    return None


def _instruction(row: dict[str, Any]) -> str:
    text = row.get("instruction")
    if not isinstance(text, str) or not text.strip():
        raise _Skip("no instruction (a non-empty string)")
    return " ".join(text.split())


def _bbox(row: dict[str, Any]) -> list[float]:
    box = row.get("bbox")
    if box is None:
        raise _Skip("no bbox")
    if not isinstance(box, (list, tuple)) or len(box) != 4:
        raise _Skip(f"bbox must be 4 numbers, got {json.dumps(box, default=str)[:60]}")
    out = []
    for v in box:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), float("-inf")):
            raise _Skip(f"bbox must be 4 numbers, got {json.dumps(box, default=str)[:60]}")
        out.append(float(v))
    if min(out) < 0:
        raise _Skip(f"bbox {out} has a negative coordinate")
    return out


# --- bbox format ------------------------------------------------------------------------


def _as_xyxy(b: list[float], fmt: str, size: tuple[int, int], normalised: bool) -> tuple[float, float, float, float]:
    x0, y0, a, c = b
    x1, y1 = (x0 + a, y0 + c) if fmt == "xywh" else (a, c)
    if normalised:
        w, h = size
        return x0 * w, y0 * h, x1 * w, y1 * h
    return x0, y0, x1, y1


def _box_problem(box: tuple[float, float, float, float], size: tuple[int, int]) -> str | None:
    x0, y0, x1, y1 = box
    w, h = size
    if x1 <= x0 or y1 <= y0:
        return "empty"
    if x1 > w + 1 or y1 > h + 1:
        return "off the image"
    return None


def detect_format(rows: list[Row], forced: str = "auto") -> tuple[str, bool, str]:
    """(xywh | xyxy, normalised?, why) for the rows of one file."""
    normalised = bool(rows) and all(max(r.bbox) <= 1.0 for r in rows) and all(min(r.size) > 2 for r in rows)
    norm_note = "; all coordinates are within 0..1, read as fractions of the image" if normalised else ""
    if forced != "auto":
        return forced, normalised, f"--bbox-format {forced}{norm_note}"
    bad = {fmt: sum(1 for r in rows if _box_problem(_as_xyxy(r.bbox, fmt, r.size, normalised), r.size))
           for fmt in ("xywh", "xyxy")}
    names = {"xywh": "[x, y, w, h]", "xyxy": "[x1, y1, x2, y2]"}
    if bad["xywh"] != bad["xyxy"]:
        fmt = "xywh" if bad["xywh"] < bad["xyxy"] else "xyxy"
        other = "xyxy" if fmt == "xywh" else "xywh"
        why = (f"read as {names[other]}, {bad[other]} of {len(rows)} box(es) would be empty or run off their "
               f"image (as {names[fmt]}: {bad[fmt]})")
        return fmt, normalised, why + norm_note
    keys = set().union(*(r.extra.keys() for r in rows)) if rows else set()
    if keys & {"img_size", "ui_type", "application"}:
        return "xyxy", normalised, ("every box is valid either way; the ScreenSpot-Pro style keys (img_size, "
                                    "ui_type, application) say [x1, y1, x2, y2]") + norm_note
    return "xywh", normalised, ("every box is valid either way; assumed [x, y, w, h] (ScreenSpot and "
                                "ScreenSpot-v2 style); pass --bbox-format to override") + norm_note


# --- JSON layout ------------------------------------------------------------------------


def _read_rows_file(path: Path) -> list[Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise _Skip("not UTF-8") from None
    except OSError as exc:
        raise _Skip(f"unreadable ({exc.strerror})") from None
    if path.suffix == ".jsonl":
        rows: list[Any] = []
        for n, line in enumerate(text.splitlines()):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except ValueError:
                rows.append(_Skip(f"line {n + 1} is not JSON"))
        return rows
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise _Skip(f"not JSON ({exc})") from None
    if isinstance(data, dict):
        for key in ("data", "annotations", "rows", "items"):
            if isinstance(data.get(key), list):
                return data[key]
    if not isinstance(data, list):
        raise _Skip("not a list of annotation rows")
    return data


def _image_dirs(root: Path, ann: Path) -> list[Path]:
    dirs = [root, root / "images", root / "screenspot_imgs", root / "imgs", ann.parent, ann.parent.parent / "images",
            ann.parent / "images"]
    out = []
    for d in dirs:
        if d not in out and d.is_dir():
            out.append(d)
    return out


def _find_image(name: str, dirs: list[Path], root: Path) -> Path:
    rel = Path(name)
    if rel.is_absolute() or ".." in rel.parts:
        raise _Skip(f"image name {name!r} leaves the dataset folder")
    for d in dirs:
        p = d / rel
        if p.is_file():
            return p
    raise _Skip(f"image {name} not found (looked in {', '.join(str(d.relative_to(root)) or '.' for d in dirs)})")


def _file_bytes(path: Path) -> Callable[[], bytes]:
    return partial(Path.read_bytes, path)  # a partial, not a lambda: a case travels to pool workers


def _dataset_image(ds: Any, row: int, column: str) -> bytes:
    return ds[row][column]["bytes"]


def _json_rows(root: Path, ann: Path, skipped: list[dict[str, Any]], sizes: dict[Path, Any]) -> tuple[list[Row], int]:
    rel = str(ann.relative_to(root))
    raw = _read_rows_file(ann)
    dirs = _image_dirs(root, ann)
    rows = []
    for i, item in enumerate(raw):
        try:
            if isinstance(item, _Skip):
                raise item
            if not isinstance(item, dict):
                raise _Skip("not an object")
            instruction = _instruction(item)
            bbox = _bbox(item)
            name = _first(item, IMAGE_KEYS)
            if not isinstance(name, str):
                raise _Skip("no img_filename")
            path = _find_image(name, dirs, root)
            if path not in sizes:
                try:
                    sizes[path] = _image_size(path)
                except _Skip as exc:
                    sizes[path] = exc
            size = sizes[path]
            if isinstance(size, _Skip):
                raise size
            rows.append(Row(file=rel, row=i, instruction=instruction, bbox=bbox,
                            source=str(_first(item, SOURCE_KEYS) or ann.stem), type=str(_first(item, TYPE_KEYS) or "?"),
                            image_key=str(path), size=size, load_image=_file_bytes(path),
                            image_ref={"path": str(path)}, extra=item))
        except _Skip as exc:
            skipped.append({"file": rel, "row": i, "reason": str(exc)})
    return rows, len(raw)


# --- Hugging Face datasets layout ---------------------------------------------------------


def _is_hf(folder: Path) -> bool:
    return (folder / "dataset_dict.json").is_file() or ((folder / "dataset_info.json").is_file()
                                                        and (folder / "state.json").is_file())


def _hf_rows(root: Path, folder: Path, skipped: list[dict[str, Any]]) -> list[tuple[str, list[Row], int]]:
    try:
        from datasets import Dataset, DatasetDict, load_from_disk
        from datasets import Image as HFImage
    except ImportError:
        raise UserError(f"{folder} is a Hugging Face datasets folder; reading it needs the train extra "
                        "(pip install -e '.[train]')") from None
    try:
        loaded = load_from_disk(str(folder))
    except Exception as exc:
        raise UserError(f"cannot read the datasets folder {folder}: {type(exc).__name__}: {exc}") from None
    splits = loaded.items() if isinstance(loaded, DatasetDict) else [(None, loaded)]
    out = []
    for split, ds in splits:
        assert isinstance(ds, Dataset)
        rel = str(folder.relative_to(root)) if folder != root else folder.name
        name = f"{rel}[{split}]" if split else rel
        cols = set(ds.column_names)
        img_col = "image" if "image" in cols else None
        if img_col and isinstance(ds.features.get(img_col), HFImage):
            ds = ds.cast_column(img_col, HFImage(decode=False))
        rows = []
        meta_cols = [c for c in ds.column_names if c != img_col]
        meta = ds.select_columns(meta_cols) if meta_cols else None
        for i in range(len(ds)):
            item = dict(meta[i]) if meta is not None else {}
            try:
                instruction = _instruction(item)
                bbox = _bbox(item)
                if img_col is None:
                    raise _Skip("the dataset has no image column")
                cell = ds[i][img_col]
                data = cell.get("bytes") if isinstance(cell, dict) else None
                if data is None and isinstance(cell, dict) and cell.get("path"):
                    p = Path(cell["path"])
                    data = p.read_bytes() if p.is_file() else None
                if not data:
                    raise _Skip("the row has no image bytes")
                size = _image_size_bytes(data)
                digest = hashlib.sha256(data).hexdigest()
                rows.append(Row(file=name, row=i, instruction=instruction, bbox=bbox,
                                source=str(_first(item, SOURCE_KEYS) or split or rel),
                                type=str(_first(item, TYPE_KEYS) or "?"), image_key=f"{name}#{i}", size=size,
                                load_image=partial(_dataset_image, ds, i, img_col),
                                image_ref={"dataset": str(folder), "split": split, "row": i, "sha256": digest,
                                           **({"file_name": str(item[k])} if (k := next((k for k in IMAGE_KEYS
                                                                                          if item.get(k)), None))
                                              else {})},
                                extra=item))
            except _Skip as exc:
                skipped.append({"file": name, "row": i, "reason": str(exc)})
        out.append((name, rows, len(ds)))
    return out


# --- the folder -----------------------------------------------------------------------------


def load_dataset_dir(path: str, *, bbox_format: str = "auto") -> DatasetLoad:
    """Every usable case in a local dataset folder; UserError when there is nothing usable."""
    if bbox_format not in BBOX_FORMATS:
        raise UserError(f"--bbox-format must be one of {', '.join(BBOX_FORMATS)} (got {bbox_format!r})")
    root = _dataset_root(path)
    skipped: list[dict[str, Any]] = []
    cases: list[GroundingCase] = []
    files = []
    for name, layout, rows, total in _annotation_groups(root, skipped):
        report, file_cases = _file_cases(name, layout, rows, total, bbox_format, skipped)
        cases += file_cases
        files.append(report)
    total_rows = sum(f.rows for f in files)
    if not cases:
        reasons = "; ".join(f"{s['file']} row {s['row']}: {s['reason']}" for s in skipped[:3])
        raise UserError(f"no usable grounding case in {root} ({total_rows} row(s), {len(skipped)} skipped"
                        + (f": {reasons}" if reasons else "") + ")")
    return DatasetLoad(root=root, cases=cases, files=files, skipped=skipped, total_rows=total_rows)


def _dataset_root(path: str) -> Path:
    """The dataset folder, resolved; UserError when it is missing or not a folder (nothing is ever downloaded)."""
    root = Path(path).expanduser()
    if not root.exists():
        raise UserError(f"dataset folder {root} does not exist (grounding-check never downloads data: put a "
                        "ScreenSpot-style folder there first)")
    if not root.is_dir():
        raise UserError(f"--dataset {root} is not a folder")
    return root.resolve()


def _annotation_groups(root: Path, skipped: list[dict[str, Any]]) -> list[tuple[str, str, list[Row], int]]:
    """(name, layout, rows, row count) of each Hugging Face dataset and each JSON annotation file under `root`.

    Files that cannot be read are added to `skipped`; UserError when there is no annotation file at all."""
    groups: list[tuple[str, str, list[Row], int]] = []
    hf_dirs = sorted({p.parent for marker in HF_MARKERS for p in root.rglob(marker) if _is_hf(p.parent)})
    # a DatasetDict's split folders are read through the dict, not again on their own
    hf_dirs = [d for d in hf_dirs if not any(o != d and o in d.parents for o in hf_dirs)]
    for d in hf_dirs:
        for name, rows, total in _hf_rows(root, d, skipped):
            groups.append((name, "hf-datasets", rows, total))
    sizes: dict[Path, Any] = {}
    for ann in sorted(list(root.rglob("*.json")) + list(root.rglob("*.jsonl"))):
        if any(d == ann.parent or d in ann.parents for d in hf_dirs) or ann.name.startswith("."):
            continue
        rel = str(ann.relative_to(root))
        try:
            rows, total = _json_rows(root, ann, skipped, sizes)
        except _Skip as exc:
            skipped.append({"file": rel, "row": None, "reason": f"file skipped: {exc}"})
            continue
        groups.append((rel, "json", rows, total))
    if not groups:
        raise UserError(f"no annotation files in {root}: expected ScreenSpot-style *.json / *.jsonl files (rows with "
                        "img_filename, bbox, instruction) or a Hugging Face datasets folder (save_to_disk)")
    return groups


def _file_cases(name: str, layout: str, rows: list[Row], total: int, bbox_format: str,
                skipped: list[dict[str, Any]]) -> tuple[FileReport, list[GroundingCase]]:
    """One annotation file's cases (boxes read in its detected format, clipped to the image) and its report.

    Rows whose box is unusable are added to `skipped`."""
    report = FileReport(file=name, layout=layout, rows=total)
    cases: list[GroundingCase] = []
    if not rows:
        return report, cases
    fmt, normalised, why = detect_format(rows, bbox_format)
    report.bbox_format, report.normalised, report.why = fmt, normalised, why
    for r in rows:
        box = _as_xyxy(r.bbox, fmt, r.size, normalised)
        problem = _box_problem(box, r.size)
        if problem:
            skipped.append({"file": r.file, "row": r.row,
                            "reason": f"bbox {r.bbox} read as {fmt} is {problem} ({r.size[0]}x{r.size[1]} image)"})
            continue
        w, h = r.size
        box = (max(0.0, box[0]), max(0.0, box[1]), min(float(w), box[2]), min(float(h), box[3]))
        cases.append(GroundingCase(case_id=f"{r.file}:{r.row}", instruction=r.instruction, box=box,
                                   size=r.size, source=r.source, type=r.type, split=Path(r.file).stem
                                   if layout == "json" else r.file, load_image=r.load_image,
                                   image_ref=r.image_ref, meta={"row": r.row, "bbox_raw": r.bbox}))
        report.used += 1
    return report, cases


def sample_cases(cases: list[GroundingCase], samples: int | None, seed: int) -> list[GroundingCase]:
    """A seeded sample of `samples` cases (all when None), in their original order, indexed 0..n-1."""
    chosen = cases
    if samples is not None and samples < len(cases):
        picked = sorted(random.Random(f"conway-grounding:{seed}").sample(range(len(cases)), samples))
        chosen = [cases[i] for i in picked]
    for i, c in enumerate(chosen):
        c.index = i
    return chosen
