"""One task abstraction over OSWorld's task JSON (read as is) and Conway's own Markdown task files.

OSWorld's fields (`id`, `instruction`, `config`, `evaluator`, `related_apps`)
become typed ones; every other field (`snapshot`, `source`, `proxy` …) is kept
raw for the report. A Conway task file is parsed by `conway.tasks.task_file`
and its acceptance criteria are its checker.

A suite is a folder (searched recursively; `README.md` and OSWorld's
`test_*.json` indexes in it are not tasks), a list of files and folders, or an
index `{domain: [ids]}` resolved to `examples/<domain>/<id>.json` beside it, as
OSWorld's `evaluation_examples/` lays them out. A file that cannot be read as a
task, an id listed but missing, a duplicate id: one problem line each, and the
suite goes on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from conway.errors import UserError
from conway.tasks.cache import id_problem
from conway.tasks.task_file import TaskSpec, parse_task

FORMATS = ("osworld", "conway")
CONJ = ("and", "or")
TASK_FIELDS = ("id", "instruction", "config", "evaluator", "related_apps", "max_steps", "max_seconds")
EVALUATOR_FIELDS = ("func", "result", "expected", "options", "conj", "postconfig", "partial_credit")


class TaskFileError(ValueError):
    """A file that is not a task this loader can read; the message is the one-line reason."""


@dataclass(frozen=True)
class Evaluator:
    """OSWorld's evaluator, normalised to one entry per metric (a single `func` is a list of one)."""

    funcs: tuple[str, ...]
    results: tuple[dict[str, Any] | None, ...]
    expected: tuple[dict[str, Any] | None, ...] | None
    """None when the task gives no `expected` (the metric is then called without one, as OSWorld does)."""
    options: tuple[dict[str, Any], ...]
    conj: str = "and"
    postconfig: tuple[dict[str, Any], ...] = ()
    criteria: tuple[Any, ...] = ()
    """A Conway task's acceptance criteria (`conway.tasks.task_file.Criterion`); empty for OSWorld tasks."""
    weights: tuple[float, ...] | None = None
    """Conway's extension `partial_credit` (true, or one weight per func): every metric is a checkpoint that
    runs, and the score is their weighted mean, so a task done in part earns part of the reward (a dense reward
    for the policy-gradient stage). None: OSWorld's `conj` rules."""

    @property
    def infeasible(self) -> bool:
        return self.funcs == ("infeasible",)

    def getter_types(self) -> list[str]:
        return [g["type"] for g in (*self.results, *(self.expected or ())) if g]


@dataclass(frozen=True)
class Task:
    id: str
    instruction: str
    source: Path
    format: str
    """"osworld" or "conway"."""
    config: tuple[dict[str, Any], ...]
    """The setup steps as the task gives them."""
    evaluator: Evaluator
    related_apps: tuple[str, ...] = ()
    domain: str | None = None
    max_steps: int | None = None
    max_seconds: float | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    """Every field of the task file not read into the fields above, kept for the report."""
    spec: TaskSpec | None = None
    """A Conway task's parsed file."""


@dataclass(frozen=True)
class Problem:
    path: str
    reason: str

    def line(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass
class Suite:
    tasks: list[Task] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


# --- one task file ------------------------------------------------------------


def _as_list(value: Any, n: int, name: str) -> list[Any]:
    """An evaluator field as one entry per metric: a list of n for several metrics, else the value alone."""
    if n == 1 and not isinstance(value, list):
        return [value]
    if not isinstance(value, list) or len(value) != n:
        raise TaskFileError(f"evaluator.{name} must be a list of {n} entries, one per func")
    return value


def _getter(value: Any, name: str) -> dict[str, Any] | None:
    if value in (None, {}):
        return None
    if not isinstance(value, dict) or not isinstance(value.get("type"), str) or not value["type"]:
        raise TaskFileError(f"evaluator.{name} must be a getter mapping with a `type`")
    return value


def _steps(value: Any, name: str) -> tuple[dict[str, Any], ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise TaskFileError(f"{name} must be a list of setup steps")
    for n, step in enumerate(value, 1):
        if not isinstance(step, dict) or not isinstance(step.get("type"), str):
            raise TaskFileError(f"{name} step {n} must be a mapping with a `type`")
        if not isinstance(step.get("parameters", {}), dict):
            raise TaskFileError(f"{name} step {n} ({step['type']}): `parameters` must be a mapping")
    return tuple(value)


def parse_evaluator(ev: Any) -> Evaluator:
    if not isinstance(ev, dict):
        raise TaskFileError("`evaluator` must be a mapping with `func`")
    func = ev.get("func")
    funcs = func if isinstance(func, list) else [func]
    if not funcs or not all(isinstance(f, str) and f for f in funcs):
        raise TaskFileError("evaluator.func must be a metric name or a non-empty list of them")
    n = len(funcs)
    conj = ev.get("conj", "and")
    if conj not in CONJ:
        raise TaskFileError(f"evaluator.conj must be `and` or `or` (got {conj!r})")
    infeasible = funcs == ["infeasible"]
    if "result" in ev and ev["result"] not in (None, [], {}):
        results = [_getter(r, f"result[{i}]" if n > 1 else "result")
                   for i, r in enumerate(_as_list(ev["result"], n, "result"))]
    elif infeasible:
        results = [None]
    else:
        raise TaskFileError("evaluator has no `result` getter (only `infeasible` needs none)")
    expected = None
    if ev.get("expected") not in (None, [], {}):
        expected = tuple(_getter(e, f"expected[{i}]" if n > 1 else "expected")
                         for i, e in enumerate(_as_list(ev["expected"], n, "expected")))
    opts = ev.get("options")
    options = [{}] * n if opts is None else _as_list(opts, n, "options")
    if not all(o is None or isinstance(o, dict) for o in options):
        raise TaskFileError("evaluator.options must be a mapping (a list of them for several funcs)")
    return Evaluator(funcs=tuple(funcs), results=tuple(results), expected=expected,
                     options=tuple(o or {} for o in options), conj=conj,
                     postconfig=_steps(ev.get("postconfig"), "evaluator.postconfig"),
                     weights=_weights(ev.get("partial_credit"), n, conj))


def _weights(value: Any, n: int, conj: str) -> tuple[float, ...] | None:
    """`partial_credit`: absent/false → None; true → equal weights; a list → one non-negative weight per func."""
    if value is None or value is False:
        return None
    if conj != "and":
        raise TaskFileError("evaluator.partial_credit scores every metric as a part: it goes with conj `and` only")
    if value is True:
        return (1.0,) * n
    if (not isinstance(value, list) or len(value) != n or not all(
            isinstance(w, (int, float)) and not isinstance(w, bool) and w >= 0 for w in value) or not sum(value)):
        raise TaskFileError(f"evaluator.partial_credit must be true or a list of {n} non-negative weights, one per "
                            "func, not all 0")
    return tuple(float(w) for w in value)


def _budget(data: dict[str, Any], key: str) -> Any:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise TaskFileError(f"`{key}` must be a positive number (got {value!r})")
    if key == "max_steps" and not isinstance(value, int):
        raise TaskFileError(f"`max_steps` must be a whole number (got {value!r})")
    return value


def parse_osworld(data: Any, source: Path, domain: str | None = None) -> Task:
    """A task from OSWorld's JSON object, unmodified; TaskFileError for what cannot be read."""
    if not isinstance(data, dict):
        raise TaskFileError("not a task: the JSON is not an object")
    if not any(k in data for k in ("id", "instruction", "evaluator")):
        raise TaskFileError("not a task: no `id`, `instruction` or `evaluator`")
    for key in ("id", "instruction"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            raise TaskFileError(f"`{key}` must be a non-empty string")
    if (problem := id_problem(data["id"])) is not None:  # it names the task's folder of the cache
        raise TaskFileError(problem)
    if "evaluator" not in data:
        raise TaskFileError("no `evaluator`")
    apps = data.get("related_apps") or []
    if not isinstance(apps, list) or not all(isinstance(a, str) for a in apps):
        raise TaskFileError("`related_apps` must be a list of names")
    return Task(id=data["id"], instruction=data["instruction"], source=source, format="osworld",
                config=_steps(data.get("config"), "config"), evaluator=parse_evaluator(data["evaluator"]),
                related_apps=tuple(apps), domain=domain, max_steps=_budget(data, "max_steps"),
                max_seconds=_budget(data, "max_seconds"),
                raw={k: v for k, v in data.items() if k not in TASK_FIELDS})


def parse_conway(text: str, source: Path, domain: str | None = None) -> Task:
    """A task from Conway's Markdown task file (`conway.tasks.task_file`); its criteria are its checker."""
    try:
        spec = parse_task(text, str(source))
    except UserError as exc:
        raise TaskFileError(str(exc).removeprefix(f"{source}: ")) from None
    ev = Evaluator(funcs=(), results=(), expected=None, options=(), criteria=tuple(spec.criteria))
    return Task(id=source.stem, instruction=spec.prompt(), source=source, format="conway", config=(),
                evaluator=ev, domain=domain, spec=spec)


def read_task_file(path: Path, domain: str | None = None) -> Task:
    """One task file (`.json`: OSWorld's format; `.md`: Conway's); TaskFileError with the reason."""
    if path.is_dir():
        raise TaskFileError("is a directory, not a task file")
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise TaskFileError("no such file") from None
    except OSError as exc:
        raise TaskFileError(f"cannot read: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TaskFileError(f"not UTF-8 (byte {exc.start})") from None
    if path.suffix.lower() == ".md":
        return parse_conway(text, path, domain)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TaskFileError(f"malformed JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    return parse_osworld(data, path, domain)


# --- suites -------------------------------------------------------------------


def is_index(path: Path) -> bool:
    """OSWorld's index files are named `test_*.json` (test_all.json, test_small.json …)."""
    return path.suffix.lower() == ".json" and path.name.startswith("test_")


def _domain_of(path: Path, root: Path | None) -> str | None:
    if path.parent.parent.name == "examples":  # OSWorld's examples/<domain>/<uuid>.json
        return path.parent.name
    if root is not None:
        parts = path.relative_to(root).parts
        return parts[0] if len(parts) > 1 else None
    return None


def _folder(root: Path) -> Iterable[tuple[Path, str | None]]:
    for path in sorted(root.rglob("*")):
        if path.suffix.lower() not in (".json", ".md") or is_index(path) or path.name.lower() == "readme.md":
            continue
        if any(part.startswith(".") for part in path.relative_to(root).parts):
            continue  # .git, editors' folders
        yield path, _domain_of(path, root)


def _index(path: Path, suite: Suite) -> Iterable[tuple[Path, str | None]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError) as exc:
        suite.problems.append(Problem(str(path), f"cannot read the index: {exc}"))
        return
    except json.JSONDecodeError as exc:
        suite.problems.append(Problem(str(path), f"malformed JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"))
        return
    if not isinstance(data, dict) or not all(isinstance(v, list) for v in data.values()):
        suite.problems.append(Problem(str(path), "not an index: expected an object {domain: [task ids]}"))
        return
    for domain, ids in data.items():
        for task_id in ids:
            if not isinstance(task_id, str) or id_problem(task_id) is not None:
                suite.problems.append(Problem(str(path), f"domain {domain}: {task_id!r} is not a task id"))
                continue
            yield path.parent / "examples" / domain / f"{task_id}.json", domain


def load_suite(sources: str | Path | Sequence[str | Path]) -> Suite:
    """Every task the sources name; each file that cannot be read is one problem, and the rest still load.

    UserError only for a source that does not exist at all (nothing to load from it)."""
    items = [sources] if isinstance(sources, (str, Path)) else list(sources)
    if not items:
        raise UserError("no suite given: name a folder, task files or an OSWorld test_*.json index")
    suite = Suite()
    files: list[tuple[Path, str | None, bool]] = []  # (path, domain, listed by an index)
    for item in items:
        path = Path(item).expanduser()
        if path.is_dir():
            files += [(p, d, False) for p, d in _folder(path)]
        elif not path.exists():
            raise UserError(f"suite {path} does not exist (give a folder, task files or an OSWorld test_*.json index)")
        elif is_index(path):
            files += [(p, d, True) for p, d in _index(path, suite)]
        else:
            files.append((path, _domain_of(path, None), False))
    seen: dict[str, Path] = {}
    for path, domain, listed in files:
        if listed and not path.exists():
            suite.problems.append(Problem(str(path), f"task {path.stem} is listed in the index under {domain} "
                                          "but its file is missing"))
            continue
        try:
            task = read_task_file(path, domain)
        except TaskFileError as exc:
            suite.problems.append(Problem(str(path), str(exc)))
            continue
        if task.id in seen:
            suite.problems.append(Problem(str(path), f"duplicate task id {task.id} (first in {seen[task.id]}); "
                                          "left out"))
            continue
        seen[task.id] = path
        suite.tasks.append(task)
    return suite
