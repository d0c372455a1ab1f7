"""A grounding case (instruction, image, target box) and how one is scored and summarised.

Boxes are ``(x0, y0, x1, y1)`` in the image's pixels as continuous
coordinates; a click hits when ``x0 <= x <= x1 and y0 <= y <= y1`` (the
ScreenSpot rule). Each case belongs to a source (application, platform or
data source), a type (accessibility role, or the dataset's ``data_type``:
text / icon), a split (the annotation file, or the screen) and a size bucket
(the target's share of the screen area: < 1%, 1-5%, > 5%).
"""

from __future__ import annotations

import hashlib
import math
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from conway.config import ConwayConfig
from conway.evals.clicks import ask, decision_fields, first_click
from conway.evals.stats import percentile, rate_record
from conway.geometry import InBox
from conway.prompt.click_check import click_check_context
from conway.protocols import DecisionContext, Policy

SIZE_BUCKETS = (("<1%", 0.01), ("1-5%", 0.05), (">5%", math.inf))
"""Target area as a share of the screen's area: the upper bound of each bucket."""



def size_bucket(area_frac: float) -> str:
    for name, upper in SIZE_BUCKETS:
        if area_frac < upper:
            return name
    return SIZE_BUCKETS[-1][0]


@dataclass
class GroundingCase(InBox):
    """One instruction on one image with its ground-truth box."""

    case_id: str
    """Stable id: ``<file>:<row>`` for datasets, ``<screen>:<role>:<name>`` for live targets."""
    instruction: str
    box: tuple[float, float, float, float]
    size: tuple[int, int]
    """(width, height) of the image in pixels."""
    source: str
    type: str
    split: str
    load_image: Callable[[], bytes]
    """Returns the image file's bytes (PNG or JPEG)."""
    image_ref: dict[str, Any] = field(default_factory=dict)
    """Where the image lives (path, dataset row) and its sha256 when known."""
    meta: dict[str, Any] = field(default_factory=dict)
    index: int = -1

    @property
    def area_frac(self) -> float:
        x0, y0, x1, y1 = self.box
        return max(0.0, x1 - x0) * max(0.0, y1 - y0) / float(self.size[0] * self.size[1])

    def record(self) -> dict[str, Any]:
        """What the report keeps of the case itself (its result is added by `run_case`)."""
        return {"index": self.index, "id": self.case_id, "instruction": self.instruction, "source": self.source,
                "type": self.type, "split": self.split, "size_bucket": size_bucket(self.area_frac),
                "target": {"box": [round(v, 2) for v in self.box], "centre": [round(c, 2) for c in self.centre],
                           "area_frac": round(self.area_frac, 6)},
                "image": {"size": list(self.size), **self.image_ref}, **({"meta": self.meta} if self.meta else {})}


class ImageCache:
    """Image bytes by key, kept while cases of the same screen are in flight (live screens repeat)."""

    def __init__(self, keep: int = 8):
        self._lock = threading.Lock()
        self._items: dict[str, bytes] = {}
        self._keep = keep

    def __getstate__(self) -> dict:  # a worker process starts with its own, empty cache
        return {"keep": self._keep}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["keep"])

    def get(self, key: str, load: Callable[[], bytes]) -> bytes:
        with self._lock:
            data = self._items.get(key)
        if data is None:
            data = load()
            with self._lock:
                if len(self._items) >= self._keep:
                    self._items.pop(next(iter(self._items)))
                self._items[key] = data
        return data


def decision_context(case: GroundingCase, data: bytes, config: ConwayConfig) -> DecisionContext:
    """The context the loop would build around this screenshot (fixed prompt; the goal is the instruction)."""
    return click_check_context("grounding-check", data, case.size, case.index, case.instruction, config)


def run_case(policy: Policy, config: ConwayConfig, case: GroundingCase, cache: ImageCache,
             lock: threading.Lock | None = None) -> dict[str, Any]:
    record = case.record()
    try:
        data = cache.get(case.image_ref.get("path") or case.case_id, case.load_image)
    except OSError as exc:
        record.update(latency_s=None, predicted=None, action=None, hit=False, distance_px=None,
                      error=f"image unreadable: {exc}", raw_output=None, model_id=None)
        return record
    record["image"].setdefault("sha256", hashlib.sha256(data).hexdigest())
    decision, error, seconds = ask(policy, decision_context(case, data, config), lock)
    record["latency_s"] = round(seconds, 6)
    record.update(predicted=None, action=None, hit=False, distance_px=None, error=error)
    if decision is not None:
        point, action, error = first_click(decision)
        record.update(action=action, error=error)
        if point is not None:
            x, y = point
            cx, cy = case.centre
            record.update(predicted=[round(x, 2), round(y, 2)], hit=case.contains(x, y),
                          distance_px=round(math.hypot(x - cx, y - cy), 2))
    record.update(decision_fields(decision, policy))
    return record


# --- the summary ---------------------------------------------------------------------

INVALID_KINDS = (("request_failed", "model request failed"), ("no_action", "the model proposed no action"),
                 ("unparseable", "unusable output"), ("not_a_click", None), ("image_unreadable", "image unreadable"),
                 ("cut_off", "output cut off"))


def invalid_kind(error: str) -> str:
    for kind, prefix in INVALID_KINDS:
        if prefix and error.startswith(prefix):
            return kind
    return "not_a_click" if error.endswith("not a click") else "other"


def _groups(records: list[dict[str, Any]], key: Callable[[dict[str, Any]], str]) -> dict[str, Any]:
    buckets: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        buckets.setdefault(key(r), []).append(r)
    out = {}
    for name in sorted(buckets):
        rs = buckets[name]
        hits = sum(1 for r in rs if r.get("hit"))
        out[name] = {**rate_record(hits, len(rs)), "errors": sum(1 for r in rs if r.get("error"))}
    return out


def summarize(records: list[dict[str, Any]], wall_s: float) -> dict[str, Any]:
    from conway.evals.vision_check import miss_pattern

    n = len(records)
    hits = sum(1 for r in records if r.get("hit"))
    errors = [r for r in records if r.get("error")]
    answered = [r["latency_s"] for r in records if r.get("raw_output") is not None and r.get("latency_s") is not None]
    dists = [r["distance_px"] for r in records if r.get("distance_px") is not None]
    invalid: dict[str, int] = {}
    for r in errors:
        k = invalid_kind(str(r["error"]))
        invalid[k] = invalid.get(k, 0) + 1
    order = [name for name, _ in SIZE_BUCKETS]
    by_size = _groups(records, lambda r: r.get("size_bucket") or "?")
    return {
        **{k: v for k, v in rate_record(hits, n).items() if k != "n"}, "cases": n,
        "misses": n - hits - len(errors), "errors": len(errors), "invalid_output": invalid,
        "latency_s": {"p50": percentile(answered, 50), "p95": percentile(answered, 95),
                      "mean": round(sum(answered) / len(answered), 6) if answered else None, "n": len(answered),
                      "over": "cases that got an answer from the model"},
        "distance_px": {"median": percentile(dists, 50), "p95": percentile(dists, 95),
                        "over": "cases with a click (screen pixels, to the box centre)"},
        "by_source": _groups(records, lambda r: str(r.get("source") or "?")),
        "by_type": _groups(records, lambda r: str(r.get("type") or "?")),
        "by_split": _groups(records, lambda r: str(r.get("split") or "?")),
        "by_split_type": _groups(records, lambda r: f"{r.get('split') or '?'} / {r.get('type') or '?'}"),
        "by_size": {k: by_size[k] for k in order if k in by_size},
        "wall_s": round(wall_s, 3), "cases_per_s": round(n / wall_s, 4) if wall_s > 0 else None,
        "pattern": miss_pattern(records),
    }
