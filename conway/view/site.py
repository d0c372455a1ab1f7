"""The viewer's pages as one table of routes: written to a folder (static) or answered by the server.

Routes of a sessions site::

    index.html                          every chosen session, newest first
    s/<session>/page-0001.html …        step cards, `page_size` per page
    s/<session>/data.js                 outcome / kind / thought of every step (timeline, filters, keys)
    s/<session>/img/step-<n>.<ext>      the archived screenshot
    s/<session>/thumb/step-<n>.jpg      its thumbnail (cached under the home)

A report site has index.html (= page 1), page-NNNN.html, data.js and
img/case-<index>.jpg at its root. A route maps to text or to a file; a
request can only name routes, never a path on disk.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from conway.errors import UserError
from conway.experience.labels import labels_path, read_labels
from conway.experience.steps import attach_labels
from conway.view.images import CASE_WIDTH, case_image, thumbnail
from conway.view.page import page_file, script_json
from conway.view.render import index_page, pages_of, session_data, session_page, session_summary
from conway.view.reports import report_data, report_page, view_of
from conway.view.sessions import SessionView, StepView, screenshot_state

MARKER = ".conway-view"
MARKER_FORMAT = "conway-view/1"
_PAGE = re.compile(r"^page-(\d{4,})\.html$")
_STEP = re.compile(r"^step-(\d+)(\.[A-Za-z0-9]{1,5})$")
_CASE = re.compile(r"^case-(\d+)(?:-(\d+))?\.jpg$")
"""A case's image, or (case-<index>-<j>) the j-th of the images a case lists (a judged task's rollouts)."""


@dataclass
class SiteReport:
    """A report as the viewer draws it (the file's format and writer: `conway.evals.report`)."""

    kind: str
    data: dict[str, Any]
    cases: list[dict[str, Any]]
    source: str
    folder: Path = Path(".")
    """Where the report lies (a grounding case's relative image path starts there)."""


@dataclass
class Site:
    home_root: Path
    sessions: list[SessionView] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    page_size: int = 100
    token: str | None = None
    """Set when served: the pages carry it and show the review buttons."""
    report: SiteReport | None = None

    def __post_init__(self) -> None:
        self._by_folder = {s.folder: s for s in self.sessions}
        self._steps = {(s.folder, st.step): st for s in self.sessions for st in s.steps}
        self._derived: dict[str, tuple[dict[str, Any], str]] = {}
        """Per session, made once: the page script's data and the summary section (reset when labels change)."""
        self._cases = {int(c.get("index", i)): c for i, c in enumerate(self.report.cases)} if self.report else {}

    # -- what exists --------------------------------------------------------------

    def routes(self) -> Iterator[str]:
        yield "index.html"
        if self.report:
            yield "data.js"
            for p in range(1, pages_of(len(self.report.cases), self.page_size) + 1):
                yield page_file(p)
            for idx, case in self._cases.items():
                yield f"img/case-{idx}.jpg"
                for j, _ in enumerate(case.get("images") or []):
                    yield f"img/case-{idx}-{j}.jpg"
            return
        for sv in self.sessions:
            yield f"s/{sv.folder}/data.js"
            for p in range(1, pages_of(len(sv.steps), self.page_size) + 1):
                yield f"s/{sv.folder}/{page_file(p)}"
            for st in sv.steps:
                path, state = screenshot_state(st, self.home_root)
                if state == "ok" and path is not None:
                    yield f"s/{sv.folder}/img/step-{st.step}{path.suffix.lower()}"
                    yield f"s/{sv.folder}/thumb/step-{st.step}.jpg"

    def get(self, route: str) -> bytes | Path | None:
        """Text of a page or data file, a file to send, or None (no such route)."""
        if route == "index.html":
            if self.report:
                return self._report_page(1)
            live = '<p><a href="/live">running sessions, live →</a></p>' if self.token else ""
            return index_page(self.sessions, self.skipped, extra=live).encode()
        if self.report:
            return self._report_route(route)
        parts = route.split("/")
        if len(parts) < 3 or parts[0] != "s" or parts[1] not in self._by_folder:
            return None
        sv = self._by_folder[parts[1]]
        if len(parts) == 3:
            return self._session_route(sv, parts[2])
        if len(parts) == 4 and parts[2] in ("img", "thumb") and (m := _STEP.match(parts[3])):
            return self._step_image(sv, int(m.group(1)), thumb=parts[2] == "thumb", suffix=m.group(2))
        return None

    def _report_route(self, route: str) -> bytes | Path | None:
        """A report's data file, one of its pages, or one case's image (`img/...`)."""
        parts = route.split("/")
        if route == "data.js":
            return _js(report_data(self.report.kind, self.report.cases, self.page_size))
        if (m := _PAGE.match(route)) and 1 <= int(m.group(1)) <= pages_of(len(self.report.cases), self.page_size):
            return self._report_page(int(m.group(1)))
        if len(parts) == 2 and parts[0] == "img" and (m := _CASE.match(parts[1])):
            case = self._cases.get(int(m.group(1)))
            if case is not None and m.group(2) is not None:
                images = case.get("images") or []
                j = int(m.group(2))
                return self._screenshot_of({"image": images[j]})[0] if j < len(images) else None
            return self._case_file(case)[0] if case is not None else None
        return None

    def _session_route(self, sv: SessionView, name: str) -> bytes | None:
        """A session's data file or one of its pages."""
        if name == "data.js":
            return _js(self._session_parts(sv)[0])
        m = _PAGE.match(name)
        if m and 1 <= int(m.group(1)) <= pages_of(len(sv.steps), self.page_size):
            data, summary = self._session_parts(sv)
            return session_page(sv, int(m.group(1)), self.page_size, self._image_urls, token=self.token,
                                data=data, summary=summary).encode()
        return None

    def _step_image(self, sv: SessionView, step_no: int, *, thumb: bool, suffix: str) -> bytes | Path | None:
        """A step's screenshot (asked for with its own suffix) or its JPEG thumbnail."""
        step = self._steps.get((sv.folder, step_no))
        if step is None:
            return None
        path, state = screenshot_state(step, self.home_root)
        if state != "ok" or path is None:
            return None
        if not thumb:
            return path if suffix == path.suffix.lower() else None
        if suffix != ".jpg":
            return None
        return thumbnail(self.home_root, path) or path  # an unreadable image is sent as it is

    def find_step(self, session: str, step: int) -> StepView | None:
        sv = next((s for s in self.sessions if s.id == session), None)
        return self._steps.get((sv.folder, step)) if sv is not None else None

    # -- helpers --------------------------------------------------------------------

    def _session_parts(self, sv: SessionView) -> tuple[dict[str, Any], str]:
        if self.token:  # served: labels change while the pages are open
            attach_labels([s.record for s in sv.steps], read_labels(labels_path(self.home_root)))
            self._derived.pop(sv.folder, None)
        if sv.folder not in self._derived:
            video = self.home_root / "videos" / f"{sv.id}.mp4"
            self._derived[sv.folder] = (session_data(sv, self.page_size),
                                        session_summary(sv, video.resolve() if video.is_file() else None))
        return self._derived[sv.folder]

    def _image_urls(self, step: StepView) -> tuple[str | None, str | None, str]:
        path, state = screenshot_state(step, self.home_root)
        if state != "ok" or path is None:
            return None, None, state
        return f"thumb/step-{step.step}.jpg", f"img/step-{step.step}{path.suffix.lower()}", state

    def _case_file(self, case: dict[str, Any]) -> tuple[Path | None, str]:
        assert self.report is not None
        if view_of(self.report.kind).screenshots:
            return self._screenshot_of(case)
        params = self.report.data.get("parameters") or {}
        seed, size = self.report.data.get("seed"), params.get("size")
        if seed is None or not size:
            return None, "the report records no seed or image size; its images cannot be regenerated"
        want = (case.get("image") or {}).get("sha256") or case.get("image_sha256")
        return case_image(self.home_root, str(params.get("generator") or "conway-vision-images/1"), int(seed),
                          int(case.get("index", 0)), (int(size[0]), int(size[1])), str(params.get("profile") or "standard"),
                          want)

    def _screenshot_of(self, case: dict[str, Any]) -> tuple[Path | None, str]:
        """A grounding case's screenshot file (a thumbnail of it), when the report names one that exists."""
        assert self.report is not None
        image = case.get("image") or {}
        if image.get("dataset") and not image.get("path"):
            return None, f"the screenshot is inside a datasets folder ({image['dataset']}, row {image.get('row')}); " \
                         "not drawn here"
        if not image.get("path"):  # a task whose desktop could not be captured, or one that never ran
            return None, "no screenshot was kept for this case"
        path = Path(str(image["path"])).expanduser()
        path = path if path.is_absolute() else self.report.folder / path
        if not path.is_file():
            return None, f"screenshot {path} not found"
        return thumbnail(self.home_root, path, CASE_WIDTH), ""

    def _report_page(self, page: int) -> bytes:
        assert self.report is not None
        r = self.report

        def image(case: dict[str, Any]) -> tuple[str | None, str]:
            path, why = self._case_file(case)
            return (f"img/case-{int(case.get('index', 0))}.jpg", "") if path else (None, why)

        return report_page(r.kind, r.data, r.cases, page, self.page_size, image, r.source).encode()


def _js(data: dict[str, Any]) -> bytes:
    return f"window.CONWAY_DATA = {script_json(data)};\n".encode()


def prepare_output(out: Path) -> None:
    """Refuse a folder that holds anything but an earlier view (never delete a user's files)."""
    if out.exists() and not out.is_dir():
        raise UserError(f"{out} is a file; --output takes a folder")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise UserError(f"{out} is not empty and is not a Conway view; choose a new or empty folder")
    if not out.parent.is_dir():
        raise UserError(f"folder {out.parent} does not exist")
    if not os.access(out.parent, os.W_OK | os.X_OK):
        raise UserError(f"folder {out.parent} is not writable")


def write_site(site: Site, out: Path) -> dict[str, int]:
    """Write every route under `out` (built beside it, then swapped in); returns counts."""
    prepare_output(out)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    counts = {"pages": 0, "images": 0, "bytes": 0}
    try:
        for route in site.routes():
            content = site.get(route)
            if content is None:
                continue
            target = tmp / route
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, Path):
                try:
                    os.link(content, target)  # a hard link costs no space; a copy where links cannot go
                except OSError:
                    shutil.copyfile(content, target)
                counts["images"] += 1
                counts["bytes"] += target.stat().st_size
            else:
                target.write_bytes(content)
                counts["pages"] += route.endswith(".html")
                counts["bytes"] += len(content)
        (tmp / MARKER).write_text(json.dumps({"format": MARKER_FORMAT, "sessions": [s.id for s in site.sessions],
                                              "report": site.report.source if site.report else None}) + "\n")
        old = None
        if out.exists():
            old = out.with_name(f".{out.name}.old-{os.getpid()}")
            out.rename(old)
        tmp.rename(out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return counts
