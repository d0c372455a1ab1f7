"""Score a finished task by OSWorld's rules (its `DesktopEnv.evaluate`), reimplemented; never a crash.

In order: the evaluator's `postconfig` steps run (through the setup-step
runner the caller passes in: the sandbox owns the steps); an `infeasible` task
scores 1 only when the agent's last action was FAIL, and any other task scores
0 on FAIL; otherwise each metric is computed from its getters and the scores
combine by `conj`: `and` ends at the first 0 (else the mean), `or` at the first
1 (else the largest). A task with Conway's `partial_credit` runs every metric as
a checkpoint and scores their weighted mean (a partial reward; see `_partial`). A result getter that raises FileNotFoundError scores 0
(under `and` that ends it; under `or` it is that metric's 0). Any other error of a getter or a metric becomes
that metric's one-line error with score 0, so one broken checker never stops a
suite. A Conway task is scored by its acceptance criteria, all of which must
hold; the model's own finish is reported beside it, never instead of it.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from conway.tasks.cache import kept_names
from conway.tasks.env import TaskEnv
from conway.tasks.getters import GETTERS, cache_file
from conway.tasks.metrics import METRICS
from conway.tasks.task import Task
from conway.tasks.task_file import DEFAULT_TIMEOUT_S, Criterion, verify_one
from conway.text.error_line import error_line

StepRunner = Callable[[dict[str, Any], TaskEnv], None]
"""Runs one setup step (`{"type": …, "parameters": {…}}`) in the task's environment; raises when it fails."""

DETAIL_CHARS = 200


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= DETAIL_CHARS else text[:DETAIL_CHARS] + "…"


@dataclass(frozen=True)
class MetricResult:
    func: str
    score: float
    detail: str | None = None
    """What was compared (the result and expected values, cut short), or what a Conway check observed."""
    error: str | None = None
    """Why the metric could not be computed (its score is then 0)."""

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"func": self.func, "score": self.score}
        if self.detail is not None:
            out["detail"] = self.detail
        if self.error is not None:
            out["error"] = self.error
        return out


@dataclass(frozen=True)
class Evaluation:
    score: float
    metrics: tuple[MetricResult, ...]
    declared_fail: bool
    """The agent's last action was FAIL (its own finish), as OSWorld's rules read it."""
    postconfig_errors: tuple[str, ...] = ()
    note: str = ""
    """How the score came about when no metric decided it (infeasible, FAIL, a missing file)."""

    def record(self) -> dict[str, Any]:
        return {"score": self.score, "metrics": [m.record() for m in self.metrics],
                "declared_fail": self.declared_fail, "postconfig_errors": list(self.postconfig_errors),
                "note": self.note}


def _postconfig(task: Task, env: TaskEnv, run_step: StepRunner | None) -> list[str]:
    errors = []
    for n, step in enumerate(task.evaluator.postconfig, 1):
        if run_step is None:
            errors.append(f"postconfig step {n} ({step['type']}): no setup-step runner was given")
            continue
        try:
            run_step(step, env)
        except Exception as exc:  # the metrics still run: OSWorld's setup logs a failed step and goes on
            errors.append(f"postconfig step {n} ({step['type']}): {error_line(exc)}")
    return errors


def _get(getters: Mapping[str, Callable], env: TaskEnv, config: dict[str, Any] | None) -> Any:
    if config is None:
        return None
    getter = getters.get(config["type"])
    if getter is None:
        raise NotImplementedError(f"getter {config['type']} is not implemented")
    return getter(env, config)


def _metric(task: Task, i: int, env: TaskEnv, getters: Mapping[str, Callable],
            metrics: Mapping[str, Callable]) -> tuple[MetricResult, bool]:
    """(the result, whether a result file was missing) of metric i."""
    ev = task.evaluator
    func = ev.funcs[i]
    try:
        result = _get(getters, env, ev.results[i])
    except FileNotFoundError as exc:
        return MetricResult(func, 0.0, error=f"result not found: {error_line(exc)}"), True
    except Exception as exc:
        return MetricResult(func, 0.0, error=f"result getter {ev.results[i]['type']}: {error_line(exc)}"), False
    metric = metrics.get(func)
    if metric is None:
        return MetricResult(func, 0.0, error=f"metric {func} is not implemented"), False
    expected_cfg = ev.expected[i] if ev.expected is not None else None
    expected = None
    if expected_cfg is not None:
        try:
            expected = _get(getters, env, expected_cfg)
        except Exception as exc:
            return MetricResult(func, 0.0, error=f"expected getter {expected_cfg['type']}: {error_line(exc)}"), False
    detail = f"result {_short(result)}" + (f"; expected {_short(expected)}" if expected_cfg is not None else "")
    try:
        value = (metric(result, expected, **ev.options[i]) if expected_cfg is not None
                 else metric(result, **ev.options[i]))
    except Exception as exc:
        return MetricResult(func, 0.0, detail=detail, error=f"metric {func}: {error_line(exc)}"), False
    if value is not None and not isinstance(value, (str, bytes)):
        try:  # bool, int, float, and numpy's scalars from metrics that use pandas
            return MetricResult(func, float(value), detail=detail), False
        except (TypeError, ValueError):
            pass
    return MetricResult(func, 0.0, detail=detail, error=f"metric {func} returned {_short(value)}, not a number"), False


def _osworld(task: Task, env: TaskEnv, declared_fail: bool, getters, metrics, post: list[str]) -> Evaluation:
    ev = task.evaluator
    if ev.infeasible:
        note = ("infeasible: the agent declared FAIL" if declared_fail
                else "infeasible: scores 1 only when the agent's last action is FAIL")
        return Evaluation(1.0 if declared_fail else 0.0, (), declared_fail, tuple(post), note)
    if declared_fail:
        return Evaluation(0.0, (), True, tuple(post), "the agent declared FAIL on a feasible task")
    if ev.weights is not None:
        return _partial(task, env, declared_fail, getters, metrics, post)
    done: list[MetricResult] = []
    for i in range(len(ev.funcs)):
        res, missing = _metric(task, i, env, getters, metrics)
        done.append(res)
        if missing and (ev.conj == "and" or len(ev.funcs) == 1):
            return Evaluation(0.0, tuple(done), False, tuple(post), "a result file was not found")
        if ev.conj == "and" and res.score == 0.0:
            return Evaluation(0.0, tuple(done), False, tuple(post), "")
        if ev.conj == "or" and res.score == 1.0:
            return Evaluation(1.0, tuple(done), False, tuple(post), "")
    scores = [m.score for m in done]
    score = sum(scores) / len(scores) if ev.conj == "and" else max(scores)
    return Evaluation(score, tuple(done), False, tuple(post), "")


def _partial(task: Task, env: TaskEnv, declared_fail: bool, getters, metrics, post: list[str]) -> Evaluation:
    """Partial credit (Conway's `partial_credit`): every metric runs as one checkpoint (a missing result file is
    that checkpoint's 0, nothing ends early) and the score is their weighted mean, each score held to [0, 1]."""
    weights = task.evaluator.weights or ()
    done = [_metric(task, i, env, getters, metrics)[0] for i in range(len(task.evaluator.funcs))]
    score = sum(w * min(1.0, max(0.0, m.score)) for w, m in zip(weights, done)) / sum(weights)
    reached = sum(1 for m in done if m.score >= 1.0)
    return Evaluation(round(score, 6), tuple(done), declared_fail, tuple(post),
                      f"partial credit: {reached} of {len(done)} checkpoint(s) fully met")


def _criterion(c: Criterion, env: TaskEnv) -> MetricResult:
    if c.kind == "command_exits_zero":
        timeout = c.timeout_s or DEFAULT_TIMEOUT_S[c.kind]
        done = env.run(c.target, shell=True, timeout_s=timeout)
        ok = done.returncode == 0 and not done.timed_out
        seen = f"timed out after {timeout:g} s" if done.timed_out else f"exit status {done.returncode}"
        return MetricResult(c.kind, float(ok), detail=seen)
    if c.kind in ("file_exists", "file_contains"):  # the task's path, read through its home (a copy: no link followed)
        copy = env.host_path(c.target)
        ok, seen = verify_one(Criterion(c.kind, str(copy), c.text, c.timeout_s), copy.parent)
        return MetricResult(c.kind, float(ok), detail=seen.replace(str(copy), c.target))
    ok, seen = verify_one(c, Path(tempfile.gettempdir()))  # a URL: no folder of the task is read
    return MetricResult(c.kind, float(ok), detail=seen)


def verify_on(criteria: list[Criterion], env: TaskEnv) -> list[dict[str, Any]]:
    """`conway start --task-file` on a task desktop: each criterion checked on the desktop (as `tasks run` checks
    a Conway task), in the records `conway.tasks.task_file.verify` gives for this machine's own."""
    out = []
    for n, c in enumerate(criteria, 1):
        started = time.perf_counter()
        try:
            m = _criterion(c, env)
            ok, observed = m.score == 1.0, m.detail
        except Exception as exc:
            ok, observed = False, f"the check itself failed: {error_line(exc)}"
        out.append({"check": f"{n}. {c.kind}", "criterion": c.describe(), "spec": c.record(), "verified": ok,
                    "observed": observed, "duration_s": round(time.perf_counter() - started, 3)})
    return out


def _conway(task: Task, env: TaskEnv, declared_fail: bool) -> Evaluation:
    if not task.evaluator.criteria:
        return Evaluation(0.0, (), declared_fail, (), "the task declares no acceptance criteria: nothing verified it")
    done = []
    for c in task.evaluator.criteria:
        try:
            done.append(_criterion(c, env))
        except Exception as exc:
            done.append(MetricResult(c.kind, 0.0, error=error_line(exc)))
    score = 1.0 if all(m.score == 1.0 for m in done) else 0.0
    return Evaluation(score, tuple(done), declared_fail, (), "verified by the task's acceptance criteria")


def evaluate(task: Task, env: TaskEnv, *, declared_fail: bool, run_step: StepRunner | None = None,
             getters: Mapping[str, Callable] = GETTERS, metrics: Mapping[str, Callable] = METRICS) -> Evaluation:
    """The task's score in [0, 1] with each metric's result; `declared_fail`: the agent's last action was FAIL."""
    if task.format == "conway":
        return _conway(task, env, declared_fail)
    if getters.get("cache_file") is cache_file:  # it reads a name the task's steps keep from where they keep it
        kept = kept_names((*task.config, *task.evaluator.postconfig))
        getters = {**getters, "cache_file": lambda e, config: cache_file(e, config, kept)}
    post = _postconfig(task, env, run_step)
    return _osworld(task, env, declared_fail, getters, metrics, post)
