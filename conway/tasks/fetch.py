"""`conway tasks fetch`: every file a suite's tasks name, downloaded once into OSWorld's cache layout.

The files are those `download` steps fetch (kept as `<uuid5(url)>_<name>`) and
`cloud_file` getters read (kept as `<dest>`), each under `<cache>/<task id>/`
(`conway.tasks.cache`). A URL several tasks name is downloaded once and copied.
A download goes to `<file>.part` first and resumes from there (an HTTP Range
request) after an interruption; a file is verified before it takes its name:
its length against what the server announced, and its SHA-256 against the one
the server states (an ETag of 64 hex digits, as large-file stores give) or the
one this command recorded when it last fetched the file (`conway-fetch.json`
at the cache's top). Nothing else reaches the network: `tasks run` only reads
the cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import re
import shutil
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from conway.tasks.cache import cloud_path, download_path, step_files
from conway.tasks.env import PathEscape
from conway.tasks.task import Task

MANIFEST = "conway-fetch.json"
"""At the cache's top: per cached file (relative path) its URL, size and SHA-256 when this command fetched it."""
TIMEOUT_S = 60.0
CHUNK = 1 << 16
SHA256 = re.compile(r'^(?:W/)?"?([0-9a-f]{64})"?$')


@dataclass(frozen=True)
class Wanted:
    task_id: str
    url: str
    path: Path
    """Where the cache keeps it."""
    refused: str | None = None
    """Why it is not fetched at all: a name that would put it outside its task's folder (then `path` is that
    folder, never the place the name points to)."""


@dataclass
class Outcome:
    fetched: list[Wanted] = field(default_factory=list)
    present: list[Wanted] = field(default_factory=list)
    failed: list[tuple[Wanted, str]] = field(default_factory=list)
    interrupted: bool = False


def _step_files(task: Task) -> Iterator[tuple[str, str]]:
    for step in (*task.config, *task.evaluator.postconfig):
        yield from step_files(str(step.get("type")))


def _download_files(task: Task) -> Iterator[tuple[str, str]]:
    for step in (*task.config, *task.evaluator.postconfig):
        if step.get("type") != "download":
            continue
        files = (step.get("parameters") or {}).get("files")
        for f in files if isinstance(files, list) else ():
            if isinstance(f, dict) and isinstance(f.get("url"), str) and isinstance(f.get("path"), str):
                yield f["url"], f["path"]


def _cloud_files(task: Task) -> Iterator[tuple[str, str]]:
    ev = task.evaluator
    for g in (*ev.results, *(ev.expected or ())):
        if not g or g.get("type") != "cloud_file":
            continue
        urls, dests = (g.get("path"), g.get("dest")) if g.get("multi") else ([g.get("path")], [g.get("dest")])
        if isinstance(urls, list) and isinstance(dests, list):
            yield from ((u, d) for u, d in zip(urls, dests) if isinstance(u, str) and isinstance(d, str))


def wanted_files(tasks: list[Task], cache: Path) -> list[Wanted]:
    """Every file the tasks name, where the cache keeps it (each place once)."""
    out: dict[Path, Wanted] = {}
    for task in tasks:
        for url, dest in _download_files(task):
            path = download_path(cache, task.id, url, dest)
            out.setdefault(path, Wanted(task.id, url, path))
        for url, dest in (*_cloud_files(task), *_step_files(task)):
            try:
                path = cloud_path(cache, task.id, dest)
            except PathEscape as exc:  # a task file naming /etc/… or ../… must not make this command write there
                out.setdefault(Path(cache) / task.id / f"refused:{dest}",
                               Wanted(task.id, url, Path(cache) / task.id, refused=f"PathEscape: {exc}"))
                continue
            out.setdefault(path, Wanted(task.id, url, path))
    return list(out.values())


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(CHUNK):
            h.update(block)
    return h.hexdigest()


class FetchFailed(Exception):
    """One file could not be fetched or verified: the message is the report's line."""


Opener = Callable[..., Any]


def _total(response: Any, had: int) -> int | None:
    """The whole file's length the server announced: Content-Range's total for a partial answer, else
    Content-Length."""
    if response.status == 206:
        m = re.match(r"bytes \d+-\d+/(\d+)", response.headers.get("Content-Range", ""))
        return int(m.group(1)) if m else None
    length = response.headers.get("Content-Length")
    return int(length) if length and length.isdigit() else None


def _stated_sha256(response: Any) -> str | None:
    for name in ("X-Linked-ETag", "ETag"):
        m = SHA256.match((response.headers.get(name) or "").strip().lower())
        if m:
            return m.group(1)
    return None


def _read(response: Any) -> bytes:
    try:
        return response.read(CHUNK)
    except (OSError, http.client.HTTPException) as exc:
        raise FetchFailed(f"the download broke off ({exc!r:.80}); run the command again to resume") from None


def _download(url: str, part: Path, opener: Opener) -> tuple[int | None, str | None]:
    """Fill `part` from `url`, resuming what is there; (announced total length, announced SHA-256)."""
    had = part.stat().st_size if part.is_file() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={had}-"} if had else {})
    try:
        response = opener(request, timeout=TIMEOUT_S)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and had:  # the part is already whole (or longer than the file): start again
            part.unlink()
            return _download(url, part, opener)
        raise FetchFailed(f"HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise FetchFailed(f"cannot reach it: {getattr(exc, 'reason', exc)}") from None
    with response:
        total, stated = _total(response, had), _stated_sha256(response)
        mode = "ab" if response.status == 206 and had else "wb"  # a server that ignores Range sends it whole
        with part.open(mode) as f:
            while block := _read(response):
                f.write(block)
    return total, stated


def _verified(part: Path, total: int | None, stated: str | None) -> str:
    size = part.stat().st_size
    if total is not None and size != total:
        what = "shorter" if size < total else "longer"
        if size > total:
            part.unlink()
        raise FetchFailed(f"the file is {what} than announced ({size} of {total} bytes); run again to resume")
    digest = _sha256(part)
    if stated and digest != stated:
        part.unlink()
        raise FetchFailed(f"checksum mismatch: SHA-256 {digest[:12]}… where the server states {stated[:12]}…")
    return digest


class Fetcher:
    """One fetch over a cache: the manifest, and each URL downloaded once per run."""

    def __init__(self, cache: Path, opener: Opener = urllib.request.urlopen):
        self.cache, self.opener = cache, opener
        self.manifest_path = cache / MANIFEST
        try:
            self.manifest: dict[str, Any] = json.loads(self.manifest_path.read_text(encoding="utf-8"))
            if not isinstance(self.manifest, dict):
                self.manifest = {}
        except (OSError, ValueError):
            self.manifest = {}
        self.done: dict[str, Path] = {}  # url → a verified copy fetched in this run

    def _key(self, w: Wanted) -> str:
        return w.path.relative_to(self.cache).as_posix()

    def _save(self) -> None:
        tmp = self.manifest_path.with_name(MANIFEST + ".tmp")
        tmp.write_text(json.dumps(self.manifest, indent=1, sort_keys=True), encoding="utf-8")
        tmp.replace(self.manifest_path)

    def is_present(self, w: Wanted) -> bool:
        """A file already there: one this command fetched must still match its recorded SHA-256; one put there
        otherwise (OSWorld's own cache) is taken as it is."""
        if w.path.is_dir():
            raise FetchFailed(f"{w.path} is a folder where the file belongs; move it away")
        if not w.path.is_file():
            return False
        known = self.manifest.get(self._key(w))
        return not (isinstance(known, dict) and known.get("sha256") and _sha256(w.path) != known["sha256"])

    def fetch(self, w: Wanted) -> None:
        if w.path.parent.is_file():
            raise FetchFailed(f"{w.path.parent} is a file where the task's folder belongs")
        made = not w.path.parent.exists()
        w.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._fetch(w)
        except BaseException:
            if made:  # a folder this fetch made and nothing was left in (a partial download stays for a resume)
                with contextlib.suppress(OSError):
                    w.path.parent.rmdir()
            raise

    def _fetch(self, w: Wanted) -> None:
        copy = self.done.get(w.url)
        if copy is not None and copy.is_file():
            shutil.copyfile(copy, w.path)
            digest = _sha256(w.path)
        else:
            part = w.path.with_name(w.path.name + ".part")
            if part.is_dir():
                raise FetchFailed(f"{part} is a folder where the partial download belongs; move it away")
            total, stated = _download(w.url, part, self.opener)
            digest = _verified(part, total, stated)
            part.replace(w.path)
        self.done[w.url] = w.path
        self.manifest[self._key(w)] = {"url": w.url, "size": w.path.stat().st_size, "sha256": digest}
        self._save()


def fetch_all(wanted: list[Wanted], cache: Path, *, opener: Opener = urllib.request.urlopen,
              say: Callable[[str], None] = print) -> Outcome:
    """Fetch what is missing; each failure one line; Ctrl+C stops between blocks, keeping the partial file for a
    resume (the outcome says `interrupted`)."""
    fetcher, out = Fetcher(cache, opener), Outcome()
    for i, w in enumerate(wanted, 1):
        if w.refused:
            out.failed.append((w, w.refused))
            say(f"    refused: {w.refused}")
            continue
        try:
            if fetcher.is_present(w):
                out.present.append(w)
                continue
            say(f"[{i}/{len(wanted)}] {w.url} -> {w.path}")
            fetcher.fetch(w)
            out.fetched.append(w)
        except FetchFailed as exc:  # said once, in the summary (`fetch_suite`), never also here
            out.failed.append((w, str(exc)))
        except OSError as exc:
            out.failed.append((w, f"{exc.strerror or exc}: {exc.filename or w.path}"))
        except KeyboardInterrupt:
            out.interrupted = True
            break
    return out


def _cache_folder(cache: str | Path) -> Path:
    from conway.errors import UserError
    path = Path(cache).expanduser()
    if path.exists() and not path.is_dir():
        raise UserError(f"--cache {path} is a file; give the cache folder (it holds one folder per task id)")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create the cache folder {path}: {exc.strerror or exc}") from None
    return path


def fetch_suite(sources: list[str], cache: str | Path, *, quiet: bool = False,
                opener: Opener = urllib.request.urlopen, say: Callable[[str], None] = print) -> int:
    """`conway tasks fetch`: the exit code; the summary and each failure printed."""
    from conway.errors import ExitCode, UserError
    from conway.tasks.task import load_suite
    folder = _cache_folder(cache)
    suite = load_suite(sources)
    if not suite.tasks:
        raise UserError(suite.problems[0].line() if suite.problems else "the suite holds no task files")
    wanted = wanted_files(list(suite.tasks), folder)
    out = fetch_all(wanted, folder, opener=opener, say=(lambda _line: None) if quiet else say)
    for w, why in out.failed:
        say(f"FAILED {w.task_id}: {w.url}: {why}")
    left = len(wanted) - len(out.fetched) - len(out.present) - len(out.failed)
    say(f"{len(wanted)} file(s) named by {len(suite.tasks)} task(s): {len(out.fetched)} fetched, "
        f"{len(out.present)} already in {folder}, {len(out.failed)} failed"
        + (f", {left} not tried (interrupted: run again to resume)" if out.interrupted else ""))
    if out.interrupted:
        return int(ExitCode.INTERRUPTED)
    return int(ExitCode.NOT_PASSED if out.failed or suite.problems else ExitCode.PASSED)
