"""Conway's own task files: single-session tasks with acceptance criteria Conway checks itself.

A task file (`conway start --task-file FILE`) is UTF-8 Markdown. It may begin
with a YAML front matter block that declares acceptance criteria:

    ---
    acceptance:
      - file_exists: out/report.txt
      - file_contains: out/report.txt
        text: "total: 42"
      - command_exits_zero: python3 -m pytest -q tests/evals/test_report.py
        timeout_s: 120
      - url_answers_200: http://127.0.0.1:8000/health
    ---
    Write the report into out/report.txt ...

Everything after the block is the task the model sees (followed by the
criteria in words). Each criterion is a mapping with exactly one kind key;
`text` goes with `file_contains`, `timeout_s` with the last two. Relative
paths and commands resolve in the tools' working directory (`tools.workdir`,
else the home's `scratch/`). URLs must be local (127.0.0.1, localhost, ::1).
A kind Conway does not know, or any other malformed entry, is refused before
the session starts.

After an executed session the criteria are checked, and the session record
keeps `declared` (the model's own `finish`, or nothing) and `verified` (what
the checks found) as separate fields (`conway.session.acceptance`);
`conway status` counts them apart. A plan-only session (no `--execute`) is
not verified: nothing was done, and a command check could itself have side
effects.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from conway.errors import UserError

KINDS = ("file_exists", "file_contains", "command_exits_zero", "url_answers_200")
OPTIONS = {"file_exists": set(), "file_contains": {"text"}, "command_exits_zero": {"timeout_s"},
           "url_answers_200": {"timeout_s"}}
DEFAULT_TIMEOUT_S = {"command_exits_zero": 60.0, "url_answers_200": 10.0}
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
OUTPUT_TAIL = 400


@dataclass(frozen=True)
class Criterion:
    kind: str
    target: str
    """A path, a shell command or a URL."""
    text: str | None = None
    timeout_s: float | None = None

    def describe(self) -> str:
        if self.kind == "file_exists":
            return f"the file {self.target} exists"
        if self.kind == "file_contains":
            return f"the file {self.target} contains the text {self.text!r}"
        if self.kind == "command_exits_zero":
            return f"the command `{self.target}` exits with status 0"
        return f"the URL {self.target} answers HTTP 200"

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "target": self.target}
        if self.text is not None:
            out["text"] = self.text
        if self.timeout_s is not None:
            out["timeout_s"] = self.timeout_s
        return out


@dataclass
class TaskSpec:
    body: str
    criteria: list[Criterion] = field(default_factory=list)
    source: str | None = None
    sha256: str | None = None

    def prompt(self) -> str:
        """What the model sees: the task, then the criteria Conway will check."""
        if not self.criteria:
            return self.body
        lines = "\n".join(f"- {c.describe()}" for c in self.criteria)
        return (f"{self.body.rstrip()}\n\nAcceptance criteria (Conway checks these itself after the session; "
                f"saying DONE does not make them true):\n{lines}")


# --- parsing -------------------------------------------------------------------


def _criterion(item: Any, n: int, where: str) -> Criterion:
    if not isinstance(item, dict) or not item:
        raise UserError(f"{where}: acceptance entry {n} must be a mapping such as `- file_exists: out.txt`")
    kinds = [k for k in item if k in KINDS]
    unknown = [k for k in item if k not in KINDS and not any(k in o for o in OPTIONS.values())]
    if unknown or not kinds:
        bad = unknown[0] if unknown else next(iter(item))
        raise UserError(f"{where}: acceptance entry {n} has unknown check kind {bad!r}; "
                        f"known kinds: {', '.join(KINDS)}")
    if len(kinds) > 1:
        raise UserError(f"{where}: acceptance entry {n} names several kinds ({', '.join(kinds)}); one per entry")
    kind = kinds[0]
    extra = set(item) - {kind} - OPTIONS[kind]
    if extra:
        raise UserError(f"{where}: acceptance entry {n} ({kind}) does not take {', '.join(sorted(extra))}")
    target = item[kind]
    if not isinstance(target, str) or not target.strip():
        raise UserError(f"{where}: acceptance entry {n} ({kind}) needs a non-empty text value")
    text = item.get("text")
    if kind == "file_contains" and (not isinstance(text, str) or text == ""):
        raise UserError(f"{where}: acceptance entry {n} (file_contains) needs `text:` with the text to find")
    timeout = item.get("timeout_s")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not 0 < timeout <= 3600):
        raise UserError(f"{where}: acceptance entry {n} ({kind}) timeout_s must be a number in (0, 3600]")
    if kind == "url_answers_200":
        parts = urlsplit(target)
        if parts.scheme not in ("http", "https") or (parts.hostname or "") not in LOCAL_HOSTS:
            raise UserError(f"{where}: acceptance entry {n}: {target!r} is not a local http(s) URL "
                            f"(allowed hosts: {', '.join(LOCAL_HOSTS)})")
    return Criterion(kind=kind, target=target.strip(), text=text,
                     timeout_s=float(timeout) if timeout is not None else None)


def parse_task(text: str, source: str = "task") -> TaskSpec:
    """Split a task file into its body and declared criteria; UserError for anything malformed."""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    lines = text.lstrip("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        if not text.strip():
            raise UserError(f"{source} is empty")
        return TaskSpec(body=text, source=source, sha256=digest)
    end = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
    if end is None:
        raise UserError(f"{source}: the front matter starting with `---` on line 1 is never closed by `---`")
    try:
        meta = yaml.safe_load("".join(lines[1:end])) or {}
    except yaml.YAMLError as exc:
        raise UserError(f"{source}: the front matter is not valid YAML: {str(exc).splitlines()[0]} "
                        "(put quotes around values that contain ': ' or start with a special character)") from None
    if not isinstance(meta, dict):
        raise UserError(f"{source}: the front matter must be a mapping with `acceptance:`")
    unknown = set(meta) - {"acceptance", "title"}
    if unknown:
        raise UserError(f"{source}: unknown front matter key(s) {', '.join(sorted(map(str, unknown)))}; "
                        "known: acceptance, title")
    items = meta.get("acceptance") or []
    if not isinstance(items, list):
        raise UserError(f"{source}: `acceptance:` must be a list of checks")
    criteria = [_criterion(item, n, source) for n, item in enumerate(items, 1)]
    body = "".join(lines[end + 1:])
    if not body.strip():
        raise UserError(f"{source} has acceptance criteria but no task text after the front matter")
    if meta.get("title"):
        body = f"# {meta['title']}\n\n{body}"
    return TaskSpec(body=body, criteria=criteria, source=source, sha256=digest)


# --- verification ----------------------------------------------------------------


def _resolve(path: str, workdir: Path) -> Path:
    p = Path(os.path.expanduser(path))
    return p if p.is_absolute() else workdir / p


def _tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= OUTPUT_TAIL else "…" + text[-OUTPUT_TAIL:]


def _run_command(command: str, workdir: Path, timeout_s: float) -> tuple[bool, str]:
    posix = os.name == "posix"
    proc = subprocess.Popen(command, shell=True, cwd=workdir, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=posix)
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        if posix:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        else:  # pragma: no cover
            proc.kill()
        proc.communicate()
        return False, f"timed out after {timeout_s:g} s (its process group was killed)"
    text = out.decode("utf-8", errors="replace")
    shown = f"; output: {_tail(text)}" if text.strip() else ""
    return proc.returncode == 0, f"exit status {proc.returncode}{shown}"


def verify_one(c: Criterion, workdir: Path) -> tuple[bool, str]:
    """(passed, observed outcome) of one criterion, checked by Conway."""
    if c.kind in ("file_exists", "file_contains"):
        path = _resolve(c.target, workdir)
        if not path.exists():
            return False, f"{path} does not exist"
        if not path.is_file():
            return False, f"{path} exists but is not a regular file"
        if c.kind == "file_exists":
            return True, f"{path} exists ({path.stat().st_size} bytes)"
        try:
            data = path.read_bytes()
        except OSError as exc:
            return False, f"cannot read {path}: {exc.strerror}"
        at = data.find(str(c.text).encode("utf-8"))
        if at < 0:
            return False, f"{path} ({len(data)} bytes) does not contain {c.text!r}"
        return True, f"{path} contains {c.text!r} at byte {at}"
    if c.kind == "command_exits_zero":
        timeout = c.timeout_s or DEFAULT_TIMEOUT_S[c.kind]
        return _run_command(c.target, workdir, timeout)
    import httpx
    timeout = c.timeout_s or DEFAULT_TIMEOUT_S[c.kind]
    try:
        resp = httpx.get(c.target, timeout=timeout, follow_redirects=False)
    except httpx.HTTPError as exc:
        return False, f"{c.target} not reachable ({type(exc).__name__}: {exc})"
    return resp.status_code == 200, f"{c.target} answered HTTP {resp.status_code}"


def verify(criteria: list[Criterion], workdir: Path) -> list[dict[str, Any]]:
    out = []
    for n, c in enumerate(criteria, 1):
        started = time.perf_counter()
        try:
            ok, observed = verify_one(c, workdir)
        except Exception as exc:
            ok, observed = False, f"the check itself failed: {type(exc).__name__}: {exc}"
        out.append({"check": f"{n}. {c.kind}", "criterion": c.describe(), "spec": c.record(), "verified": ok,
                    "observed": observed, "duration_s": round(time.perf_counter() - started, 3)})
    return out


def read_task(text: str | None, file: str | None) -> str | None:
    """The task `conway start` was given (`--task TEXT` or `--task-file FILE`, read as UTF-8); UserError when
    both or an empty one are given."""
    if text and file:
        raise UserError("give either --task or --task-file, not both")
    if file:
        path = Path(file).expanduser()
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise UserError(f"task file {path} does not exist") from None
        except OSError as exc:
            raise UserError(f"cannot read task file {path}: {exc.strerror}") from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UserError(f"task file {path} is not UTF-8 (byte {exc.start}); save it as UTF-8") from None
        if not text.strip():
            raise UserError(f"task file {path} is empty")
    if text is not None and not text.strip():
        raise UserError("--task is empty")
    return text
