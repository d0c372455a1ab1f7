"""The `conway-report/1` format every check writes, and `conway report FILE`.

A report is one JSON object:

    format          "conway-report/1"
    kind            preflight | vision-check | grounding-check | acceptance-check | session | tasks | …
    command         the command line as run (argv list and a shell-quoted string)
    conway          {"version", "git_revision", "git_dirty"} (revision when available)
    config          the resolved configuration (secrets never present; redacted if found)
    config_digest   sha256 of the resolved configuration
    model_id, endpoint, seed, parameters
    machine         readiness.host.host_facts() of the machine that ran it
    started_at, ended_at, duration_s
    status, exit_code, summary
    cases           per-case records, inline; or
    cases_file      {"path", "count", "sha256"} of a JSONL file beside the report
                    (long suites: more than INLINE_CASES_MAX cases)

Reports are new files outside the state directory: an existing path, or a path
inside CONWAY_HOME, is refused before anything runs. The report is written
last, by an exclusive create, so its existence means the run completed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable
from urllib.parse import urlsplit, urlunsplit

from conway import __version__
from conway.config import ConwayConfig
from conway.errors import UserError
from conway.redact import REDACTED, redact  # noqa: F401 - REDACTED is re-exported
from conway.store.home import Home
from conway.store.provenance import git_facts as _git_facts
from conway.store.state import STDOUT, is_stdout

FORMAT = "conway-report/1"
INLINE_CASES_MAX = 200
"""More cases than this go into `<report stem>.cases.jsonl` beside the report."""


# --- output paths --------------------------------------------------------------


def check_new_output(raw: str | os.PathLike[str], home: Home, what: str = "report", *,
                     stdout_ok: bool = False) -> Path:
    """Validate a path for a new report (or sheet): not existing, not in the home, folder present.

    `stdout_ok`: `/dev/stdout` (or `-`) is taken as standard output (`STDOUT`), for a report of one file."""
    if stdout_ok and is_stdout(raw):
        return STDOUT
    text = os.fspath(raw)
    if not text.strip():
        raise UserError(f"the {what} path is empty")
    path = Path(text).expanduser()
    path = path if path.is_absolute() else Path.cwd() / path
    if path.exists() or path.is_symlink():
        raise UserError(f"{what} {path} already exists; choose a new file (reports are never overwritten)")
    if home.contains(path):
        raise UserError(f"{what} {path} lies inside the Conway home {home.root} (the state directory); "
                        "write reports somewhere else")
    if not path.parent.is_dir():
        raise UserError(f"folder {path.parent} for the {what} does not exist")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise UserError(f"folder {path.parent} for the {what} is not writable")
    return path


def cases_file_for(report_path: Path) -> Path:
    return report_path.with_name(report_path.stem + ".cases.jsonl")


def write_new_file(path: Path, data: bytes) -> None:
    """Write a complete file that did not exist: temp + fsync + hard link (never replaces); or standard output."""
    if path == STDOUT:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise UserError(f"{path} appeared while the check ran; not overwritten "
                            f"(the result is kept in {tmp})") from None
        except OSError:  # a file system without hard links: exclusive create instead
            with open(path, "xb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
        os.unlink(tmp)
    except UserError:
        raise
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --- provenance ---------------------------------------------------------------


def now_iso(t: float | None = None) -> str:
    return datetime.fromtimestamp(time.time() if t is None else t, timezone.utc).isoformat(timespec="milliseconds")


def git_facts() -> dict[str, Any]:
    """Revision of the checkout Conway runs from, when it is one (None otherwise)."""
    return dict(_git_facts())


def safe_endpoint(url: str | None) -> str | None:
    """The endpoint without any user:password part."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable endpoint>"
    if parts.username or parts.password:
        host = parts.hostname or ""
        if parts.port:
            host += f":{parts.port}"
        return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return url


def config_record(config: ConwayConfig) -> dict[str, Any]:
    data = redact(config.model_dump(mode="json"))
    policy = data.get("policy")
    if isinstance(policy, dict) and policy.get("endpoint"):
        policy["endpoint"] = safe_endpoint(policy["endpoint"])
    return data


def _deviations(config: ConwayConfig | None) -> list[str] | None:
    """How the configured preset's requests differ from its official agent's, one line each ([] none; None: no
    trained family): two reports' numbers compare exactly when these lists are equal."""
    if config is None:
        return None
    from conway.policies.deviations import deviation_lines, listed

    return deviation_lines(config) if listed(config) else None


def served_by_of(policy: Any) -> dict[str, Any] | None:
    """What served a policy's model (`ModelPolicy.served_by`); None for one without a model (the mock)."""
    asked = getattr(policy, "served_by", None)
    return (asked() or None) if callable(asked) else None


def machine_facts() -> dict[str, Any]:
    from conway.readiness.checks.host import host_facts
    try:
        return host_facts()
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}


# --- the report -----------------------------------------------------------------


class Report:
    """Collects one run's provenance and cases; `finish()` writes the file (exclusive create)."""

    def __init__(self, kind: str, path: Path, *, argv: list[str] | None, config: ConwayConfig | None,
                 seed: int | None = None, parameters: dict[str, Any] | None = None, expected_cases: int = 0,
                 started: float | None = None):
        self.path = path
        self._lock = threading.Lock()
        self._cases: list[dict[str, Any]] = []
        self._count = 0
        self._started = started if started is not None else time.time()
        """When the command began (a check that builds its report at the end passes its own start)."""
        self._stream = None
        self.cases_path: Path | None = None
        argv = list(argv) if argv is not None else []
        self.data: dict[str, Any] = {
            "format": FORMAT,
            "kind": kind,
            "command": {"argv": ["conway", *argv], "line": shlex.join(["conway", *argv])},
            "conway": {"version": __version__, **git_facts()},
            "config": config_record(config) if config is not None else None,
            "config_digest": config.digest() if config is not None else None,
            "model_id": None,
            "served_by": None,
            "endpoint": safe_endpoint(config.policy.endpoint) if config is not None else None,
            "seed": seed,
            "parameters": parameters or {},
            "deviations": _deviations(config),
            "machine": machine_facts(),
            "started_at": now_iso(self._started),
        }
        if expected_cases > INLINE_CASES_MAX:
            self.cases_path = cases_file_for(path)
            if self.cases_path.exists():
                raise UserError(f"{self.cases_path} (the per-case file beside the report) already exists; "
                                "choose a new report name")
            self._stream = open(self.cases_path, "x", encoding="utf-8")

    def set_model(self, model_id: str | None, endpoint: str | None = None,
                  served_by: dict[str, Any] | None = None) -> None:
        """The model that answered, and what served it (`served_by`: server, version or build, model file and
        digest, quantisation, context, projector, as the server says them; None: not known here)."""
        self.data["model_id"] = model_id
        if endpoint is not None:
            self.data["endpoint"] = safe_endpoint(endpoint)
        if served_by:
            self.data["served_by"] = served_by

    def set_served_by(self, served_by: dict[str, Any] | list[dict[str, Any]] | None) -> None:
        """What served a pool's workers (`conway.evals.pool.ServedBy.record`): one dict as `set_model` records,
        or, when the workers were served differently, each distinct one with its `endpoint`."""
        if served_by:
            self.data["served_by"] = served_by

    def set_model_from_cases(self, records: list[dict[str, Any]]) -> None:
        """The model id(s) the cases were actually answered by (a server may serve another than configured)."""
        ids = sorted({r["model_id"] for r in records if r.get("model_id")})
        if ids:
            self.set_model(ids[0] if len(ids) == 1 else ", ".join(ids))

    def add_case(self, record: dict[str, Any]) -> None:
        record = redact(record)  # a case can quote a command line, an endpoint or a server message
        with self._lock:
            self._count += 1
            if self._stream is not None:
                self._stream.write(json.dumps(record, ensure_ascii=False, sort_keys=True, default=str) + "\n")
                self._stream.flush()
            else:
                self._cases.append(record)

    @property
    def case_count(self) -> int:
        return self._count

    def finish(self, *, status: str, exit_code: int, summary: dict[str, Any],
               cases_order: Iterable[dict[str, Any]] | None = None, **extra: Any) -> Path:
        """Write the report; `cases_order` (if given) replaces the inline cases in that order."""
        ended = time.time()
        self.data.update({"ended_at": now_iso(ended), "duration_s": round(ended - self._started, 3),
                          "status": status, "exit_code": exit_code, "summary": summary, **extra})
        if self._stream is not None:
            self._stream.flush()
            os.fsync(self._stream.fileno())
            self._stream.close()
            self._stream = None
            assert self.cases_path is not None
            digest = hashlib.sha256(self.cases_path.read_bytes()).hexdigest()
            self.data["cases_file"] = {"path": self.cases_path.name, "count": self._count, "sha256": digest}
        else:
            self.data["cases"] = list(cases_order) if cases_order is not None else self._cases
        blob = json.dumps(redact(self.data), ensure_ascii=False, indent=2, sort_keys=False, default=str) + "\n"
        write_new_file(self.path, blob.encode("utf-8"))
        return self.path

    def abandon(self) -> None:
        """Close (and keep) a partial per-case file when the run could not finish."""
        if self._stream is not None:
            self._stream.close()
            self._stream = None


# --- reading and rendering ------------------------------------------------------


def load_report(path: str | os.PathLike[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(report, cases) of a report file; UserError when it is not one."""
    p = Path(path).expanduser()
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise UserError(f"report {p} does not exist") from None
    except IsADirectoryError:
        raise UserError(f"{p} is a directory, not a report") from None
    except OSError as exc:
        raise UserError(f"cannot read report {p}: {exc.strerror}") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise UserError(f"{p} is not a Conway report: {what_file_is(raw)}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, dict) else None
        what = what_file_is(raw)
        if found is None or found == "conway-traj/1":
            raise UserError(f"{p} is not a Conway report: {what}")
        raise UserError(f"{p} is not a Conway report (format {found!r}, expected {FORMAT!r})")
    cases = data.get("cases")
    if cases is None and isinstance(data.get("cases_file"), dict):
        cpath = p.parent / Path(str(data["cases_file"].get("path", ""))).name
        cases = []
        try:
            for n, line in enumerate(cpath.read_text(encoding="utf-8").splitlines(), 1):
                if line.strip():
                    try:
                        cases.append(json.loads(line))
                    except ValueError:
                        cases.append({"error": f"unreadable line {n} in {cpath.name}"})
        except FileNotFoundError:
            raise UserError(f"report {p} keeps its cases in {cpath}, which is missing") from None
    return data, list(cases or [])


def what_file_is(raw: bytes) -> str:
    """What a file that is not one JSON object seems to be, and which command reads it."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "it is not UTF-8 text"
    first = next((line for line in text.splitlines() if line.strip()), "")
    try:
        head = json.loads(first)
    except ValueError:
        return "it is not JSON"
    if isinstance(head, dict):
        if head.get("format") == "conway-traj/1":  # `conway view` draws its sessions, not the file
            return ("it is a conway-traj/1 trajectory (JSON lines from `conway export`); read it with "
                    "`conway replay --trajectory FILE`, or see its steps in the home it came from with "
                    f"`conway view --session {head.get('session') or 'ID'}`")
        if {"session", "kind", "ts"} <= set(head):
            return "it is a Conway journal (JSON lines); `conway status`, `conway view` and `conway export` read it"
        if "index" in head or "check" in head:
            return ("it is the per-case file (JSON lines) beside a report; give `conway report` the report "
                    "itself (the .json next to it)")
        return "it holds JSON without a \"format\" field; `conway report` reads the .json a check wrote"
    return "it is not one JSON object"
