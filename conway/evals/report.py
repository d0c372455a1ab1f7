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
from conway.evals.text import _fmt_box, _fmt_point, _short, _yn, table
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
            "endpoint": safe_endpoint(config.policy.endpoint) if config is not None else None,
            "seed": seed,
            "parameters": parameters or {},
            "machine": machine_facts(),
            "started_at": now_iso(self._started),
        }
        if expected_cases > INLINE_CASES_MAX:
            self.cases_path = cases_file_for(path)
            if self.cases_path.exists():
                raise UserError(f"{self.cases_path} (the per-case file beside the report) already exists; "
                                "choose a new report name")
            self._stream = open(self.cases_path, "x", encoding="utf-8")

    def set_model(self, model_id: str | None, endpoint: str | None = None) -> None:
        self.data["model_id"] = model_id
        if endpoint is not None:
            self.data["endpoint"] = safe_endpoint(endpoint)

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


def render_report(path: str | os.PathLike[str], max_rows: int = 200) -> str:
    data, cases = load_report(path)
    conway = data.get("conway") or {}
    rev = conway.get("git_revision")
    rev_s = (rev[:12] + (" (dirty)" if conway.get("git_dirty") else "")) if rev else "not recorded"
    machine = data.get("machine") or {}
    lines = [
        f"{data.get('kind', '?')} report ({data.get('format')})",
        f"  status:   {data.get('status', '?')} (exit {data.get('exit_code', '?')})",
        f"  command:  {(data.get('command') or {}).get('line', '?')}",
        f"  conway:   {conway.get('version', '?')}, revision {rev_s}",
        f"  model:    {data.get('model_id') or '-'}" + (f" at {data['endpoint']}" if data.get("endpoint") else ""),
        f"  config:   digest {str(data.get('config_digest') or '-')[:16]}"
        + (f", seed {data['seed']}" if data.get("seed") is not None else ""),
        f"  machine:  {machine.get('platform', '?')}, {machine.get('cpus', '?')} CPUs, "
        f"{machine.get('memory_available_gb', '?')}/{machine.get('memory_total_gb', '?')} GiB free",
        f"  time:     {data.get('started_at', '?')} → {data.get('ended_at', '?')} ({data.get('duration_s', '?')} s)",
    ]
    params = data.get("parameters") or {}
    if params:
        lines.append("  params:   " + ", ".join(f"{k}={v}" for k, v in params.items()))
    kind = data.get("kind")
    summary = data.get("summary") or {}
    body: list[str] = []
    if kind == "vision-check":
        body = _render_vision(summary, cases, max_rows)
    elif kind == "grounding-check":
        from conway.evals.grounding.render import render_grounding
        body = render_grounding(summary, cases, max_rows, params)
    elif kind == "preflight":
        body = _render_checks(cases)
    elif kind in ("acceptance-check", "session"):
        body = _render_acceptance(summary, cases, kind)
    elif kind == "replay":
        body = _render_replay(summary, cases, max_rows)
    elif kind == "candidate-eval":
        body = _render_candidate_eval(summary, cases, max_rows)
    elif kind == "tasks":
        from conway.evals.tasks_summary import render_tasks
        body = render_tasks(summary, cases, data, max_rows)
    elif kind == "sweep":
        from conway.evals.sweep_table import table_lines
        body = table_lines(cases, summary)
    else:
        body = [f"  summary: {json.dumps(summary, default=str)}"] + [f"  case: {_short(json.dumps(c), 120)}"
                                                                     for c in cases[:max_rows]]
    return "\n".join(lines + [""] + body)


def _render_vision(summary: dict[str, Any], cases: list[dict[str, Any]], max_rows: int) -> list[str]:
    out = []
    cases = sorted(cases, key=lambda c: c.get("index", 0) if isinstance(c.get("index"), int) else 0)
    n = summary.get("cases", len(cases))
    ci = summary.get("hit_rate_ci95") or [None, None]
    rate = summary.get("hit_rate")
    if rate is not None:
        out.append(f"hits {summary.get('hits')}/{n} = {rate:.1%} (95% Wilson interval {ci[0]:.1%}–{ci[1]:.1%}); "
                   f"misses {summary.get('misses')}, errors {summary.get('errors')}")
    lat = summary.get("latency_s") or {}
    if lat.get("p50") is not None:
        out.append(f"latency p50 {lat['p50']:.3f} s, p95 {lat['p95']:.3f} s over {lat.get('n')} answered case(s)")
    pattern = summary.get("pattern") or {}
    if pattern.get("verdict"):
        out.append(f"pattern: {pattern['verdict']}")
    out += _model_error_lines(summary)
    out.append("")
    rows = []
    for c in cases[:max_rows]:
        t = c.get("target") or {}
        rows.append([c.get("index"), "hit" if c.get("hit") else ("error" if c.get("error") else "miss"),
                     f"{t.get('colour', '?')} {t.get('shape', '?')}", _fmt_box(t.get("box")),
                     _fmt_point(c.get("predicted")),
                     f"{c['distance_px']:.0f}" if c.get("distance_px") is not None else "-",
                     f"{c['latency_s']:.3f}" if c.get("latency_s") is not None else "-",
                     _short(c.get("error") or c.get("raw_output"), 40)])
    out.append(table(["#", "result", "target", "box (inclusive)", "predicted", "dist px", "latency s", "output / error"],
                     rows))
    if len(cases) > max_rows:
        out.append(f"... {len(cases) - max_rows} more case(s) in the report")
    return out


def _fmt_action(action: Any) -> str:
    """`click (318, 203)`, `append_file`: an action's type and its point, if it has one."""
    if not isinstance(action, dict):
        return "-"
    x, y = action.get("x"), action.get("y")
    point = f" ({x:.0f}, {y:.0f})" if isinstance(x, (int, float)) and isinstance(y, (int, float)) else ""
    return f"{action.get('type', '?')}{point}"


def _rate_line(hits: Any, n: Any, rate: Any, ci: Any, what: str) -> str:
    if not isinstance(rate, (int, float)) or not isinstance(ci, list) or len(ci) != 2:
        return f"{what} {hits}/{n}"
    return f"{what} {hits}/{n} = {rate:.1%} (95% Wilson interval {ci[0]:.1%}–{ci[1]:.1%})"


def _render_replay(summary: dict[str, Any], cases: list[dict[str, Any]], max_rows: int) -> list[str]:
    out = [_rate_line(summary.get("agree"), summary.get("steps"), summary.get("agreement"),
                      summary.get("agreement_ci95"), "agree") + f"; errors {summary.get('errors', 0)}, "
           f"missing screenshots {summary.get('missing_screenshots', 0)}; nothing was executed", ""]
    rows = [[c.get("session"), c.get("step"), _yn(c.get("agree")), _fmt_action(c.get("reference")),
             c.get("reference_source"), _fmt_action(c.get("proposed")),
             f"{c['distance_px']:.0f}" if isinstance(c.get("distance_px"), (int, float)) else "-",
             _short(c.get("error"), 40)] for c in cases[:max_rows]]
    out.append(table(["session", "step", "agree", "reference", "from", "proposed", "dist px", "error"], rows))
    if len(cases) > max_rows:
        out.append(f"... {len(cases) - max_rows} more step(s) in the report")
    return out


def _render_candidate_eval(summary: dict[str, Any], cases: list[dict[str, Any]], max_rows: int) -> list[str]:
    n = summary.get("cases", len(cases))
    out = []
    for side in ("base", "candidate"):
        s = summary.get(side) or {}
        out.append(_rate_line(s.get("hits"), n, s.get("hit_rate"), s.get("hit_rate_ci95"), f"{side:<9} hits")
                   + f"; errors {s.get('errors', 0)}  [{s.get('model_id', '?')}]")
    diff, ci = summary.get("difference"), summary.get("difference_ci95") or [None, None]
    if isinstance(diff, (int, float)) and None not in ci:
        out.append(f"difference {diff:+.1%} (95% CI {ci[0]:+.1%} to {ci[1]:+.1%}); intervals "
                   f"{'do not overlap' if summary.get('intervals_separated') else 'overlap'}")
    paired = summary.get("paired") or {}
    if paired:
        out.append(f"paired: both hit {paired.get('both_hit')}, only base {paired.get('only_base_hit')}, "
                   f"only candidate {paired.get('only_candidate_hit')}")
    out.append("")
    rows = []
    for c in cases[:max_rows]:
        b, k = c.get("base") or {}, c.get("candidate") or {}
        rows.append([c.get("index"), _short(c.get("instruction") or _fmt_box((c.get("target") or {}).get("box")), 40),
                     "hit" if b.get("hit") else ("error" if b.get("error") else "miss"), _fmt_point(b.get("predicted")),
                     "hit" if k.get("hit") else ("error" if k.get("error") else "miss"), _fmt_point(k.get("predicted"))])
    out.append(table(["#", "target", "base", "base point", "candidate", "candidate point"], rows))
    if len(cases) > max_rows:
        out.append(f"... {len(cases) - max_rows} more case(s) in the report")
    return out


def _model_error_lines(summary: dict[str, Any]) -> list[str]:
    """Model errors by cause, and the "no valid decision" outcome, when the report has them."""
    from conway.protocols import describe_causes

    out = []
    causes = summary.get("model_errors")
    if isinstance(causes, dict) and causes:
        out.append(f"model errors:          {describe_causes(causes)}")
    if summary.get("no_valid_decision"):
        out.append(f"outcome:               {summary['no_valid_decision']}")
    return out


def _render_checks(cases: list[dict[str, Any]]) -> list[str]:
    rows = [[c.get("check"), c.get("status"), _short(c.get("detail"), 100)] for c in cases]
    return [table(["check", "status", "detail"], rows)]


def _render_acceptance(summary: dict[str, Any], cases: list[dict[str, Any]], kind: str) -> list[str]:
    out = []
    declared = summary.get("declared")
    if kind == "session":  # one session: the model's single finish, then each criterion Conway checked
        said = (f"{declared.get('status')}" + (f" ({declared['message']})" if declared.get("message") else "")
                if isinstance(declared, dict) else "nothing (no finish)")
        verdict = {True: "all criteria passed", False: "NOT verified", None: "not verified"}[summary.get("verified")]
        out += [f"declared by the model: {said}",
                f"verified by Conway:    {verdict} ({summary.get('verified_passed', 0)} passed, "
                f"{summary.get('verified_failed', 0)} failed); {summary.get('note', '')}",
                f"session:               {summary.get('session', '-')}, {summary.get('steps', '?')} step(s), "
                f"stopped: {summary.get('stop_reason', '?')}", *_model_error_lines(summary), ""]
        rows = [[c.get("check"), _short(c.get("criterion"), 50), _yn(c.get("verified")), _short(c.get("observed"), 80)]
                for c in cases]
        out.append(table(["check", "criterion", "verified", "observed"], rows) if rows else "(no criteria)")
        return out
    if isinstance(declared, dict):
        out.append("declared by the model: " + ", ".join(f"{k} {v}" for k, v in declared.items()))
    out.append(f"verified by Conway:    {summary.get('verified_passed', 0)} passed, "
               f"{summary.get('verified_failed', 0)} failed")
    out += _model_error_lines(summary)
    out.append("")
    rows = []
    for c in cases:
        said = c.get("declared")
        if isinstance(said, dict):
            said = f"{said.get('status')}" + (f": {_short(said.get('message'), 30)}" if said.get("message") else "")
        rows.append([c.get("check"), _short(c.get("criterion") or c.get("task"), 50), _yn(c.get("verified")),
                     said or "(nothing)", _short(c.get("observed"), 70)])
    out.append(table(["check", "criterion", "verified", "declared", "observed"], rows))
    return out


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
